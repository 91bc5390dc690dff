package main

// The round-3 upstream facts: the firewall's block page, the account states,
// the metadata-only stream ended by [DONE], and the thinking levels.
func init() {
	mutants = append(mutants,
		mutant{"the firewall's block page is a credential failure again", "adapters/postman/client.go",
			"\tcase st == http.StatusForbidden && firewallPage(resp.Header, c.peekBody(resp.Body, cancel)):",
			"\tcase false && st == http.StatusForbidden && firewallPage(resp.Header, c.peekBody(resp.Body, cancel)):",
			"./adapters/postman/", "Firewall"},
		mutant{"any HTML 403 is the firewall", "adapters/postman/errors.go",
			"\treturn h.Get(\"Cf-Mitigated\") != \"\" || bytes.Contains(bytes.ToLower(body), []byte(\"cloudflare\"))",
			"\treturn h.Get(\"Cf-Mitigated\") != \"\" || bytes.Contains(body, nil)",
			"./adapters/postman/", "Firewall"},
		mutant{"a blocked account is a quota", "adapters/postman/decode_output.go",
			"\t\t\treturn d.fail(errs.UpstreamAccountBlocked)", "\t\t\treturn d.fail(errs.UpstreamQuotaExhausted)",
			"./adapters/postman/", "BlockedAccount"},
		mutant{"the cycle end is dropped from an exhausted quota", "adapters/postman/decode_output.go",
			"\t\t\t\td.cycleEnd = r.CycleEnd.Format(time.RFC3339)\n", "\t\t\t\td.cycleEnd = time.Time{}.Format(\"\")\n",
			"./adapters/postman/", "CycleEnd"},
		mutant{"[DONE] after metadata only completes again", "domain/completion/rows.go",
			`{"K16", all, MetadataSeen, Done, IncompleteEmpty, errs.UpstreamEmptyStream, refDoneBare},`,
			`{"K16", all, MetadataSeen, Done, DoneSeen, "", refDoneBare},`,
			"./domain/completion/", ""},
		mutant{"xhigh is sent as it is", "domain/chat/thinking.go",
			"\tcase \"high\", \"xhigh\", \"max\":\n\t\treturn ThinkingHigh, true",
			"\tcase \"high\", \"max\":\n\t\treturn ThinkingHigh, true\n\tcase \"xhigh\":\n\t\treturn ThinkingLevel(\"xhigh\"), true",
			"./domain/chat/", "Effort"},
		mutant{"the thinking mode stays off with a level", "adapters/postman/request.go",
			"\t\t\tUseThinkingModeIfAvailable:     req.Chat.Thinking != chat.ThinkingOff,\n", "",
			"./cmd/gateway/", "TestEffortAndThinkingFieldsMapOntoTheServicesThreeLevels"},
	)
}
