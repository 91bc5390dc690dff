package main

// Mutants of the upstream's rate-limit window (docs/UPSTREAM.md, "Rate-limit
// window"): the record, the hold before sending, its exemption of tool
// results, the reading of the reset, and its bound.
func init() {
	mutants = append(mutants,
		mutant{"a spent window still sends fresh turns", "adapters/postman/client.go",
			"\tif err := c.windowRefusal(req); err != nil {", "\tif err := c.windowRefusal(req); false && err != nil {",
			"./adapters/postman/", "SpentWindow|HoldEnds"},
		mutant{"the answers' rate-limit headers are never recorded", "adapters/postman/client.go",
			"\t\tc.window.record(parseRateWindow(resp.Header, c.now()))", "\t\t_ = resp.Header",
			"./adapters/postman/", "SpentWindow|HoldEnds"},
		mutant{"a spent window holds tool results too", "adapters/postman/ratelimit.go",
			"\tif req.Continuation != nil {\n\t\treturn nil\n\t}\n\td := c.window", "\td := c.window",
			"./adapters/postman/", "SpentWindow"},
		mutant{"the hold ignores what remains", "ports/ratewindow.go",
			"if !w.Known || w.Remaining > 0 || w.Reset.IsZero() {", "if !w.Known || w.Reset.IsZero() {",
			"./adapters/postman/", "RateLimitHeaders"},
		mutant{"an epoch-millisecond reset is read as seconds", "adapters/postman/ratelimit.go",
			"\t\tcase n >= epochMillis:\n\t\t\treset = time.UnixMilli(n)", "\t\tcase n >= epochMillis:\n\t\t\treset = time.Unix(n, 0)",
			"./adapters/postman/", "RateLimitHeaders"},
		mutant{"a far reset is not bounded by the policy's window", "adapters/postman/ratelimit.go",
			"\t\tif reset.After(now.Add(bound)) {", "\t\tif false && reset.After(now.Add(bound)) {",
			"./adapters/postman/", "RateLimitHeaders"},
		mutant{"an answer without the headers forgets the window", "adapters/postman/ratelimit.go",
			"\tif !w.Known {\n\t\treturn\n\t}\n\tr.mu.Lock()", "\tr.mu.Lock()",
			"./adapters/postman/", "SpentWindow|HoldEnds"},
		mutant{"a 429 without Retry-After ignores the window's reset", "adapters/postman/client.go",
			"\t\t\tif held := parseRateWindow(resp.Header, c.now()).HeldFor(c.now()); held > 0 {", "\t\t\tif held := time.Duration(0); held > 0 {",
			"./adapters/postman/", "429Without"},
		mutant{"/metrics leaves out the window's gauges", "adapters/ops/monitor.go",
			"\tif cfg.RateWindow != nil {\n\t\tm.reg.MustRegister(&windowCollector{m: m})", "\tif false && cfg.RateWindow != nil {\n\t\tm.reg.MustRegister(&windowCollector{m: m})",
			"./cmd/gateway/", "TestASpentUpstreamWindowRefusesFreshTurnsBeforeDispatchOnEveryAPI"},
	)
}
