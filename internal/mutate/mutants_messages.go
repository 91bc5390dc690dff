package main

// The Messages API, stream and observer defects of issue 35's mutation run
// that no test caught, each caught now by the test its -run names.
func init() {
	const (
		httpapi = "./adapters/httpapi/"
		stop    = "adapters/httpapi/answer/stop.go"
		emitter = "adapters/httpapi/sse/msgsse/msgsse.go"
	)
	mutants = append(mutants,
		mutant{"messages: the 16th stop sequence refused", "adapters/httpapi/msgapi/decode.go",
			"if len(items) > rules.MaxStopSequences {", "if len(items) >= rules.MaxStopSequences {", httpapi, "SixteenStopSequences"},
		mutant{"messages: a 17th stop sequence accepted", "adapters/httpapi/msgapi/decode.go",
			"if len(items) > rules.MaxStopSequences {", "if len(items) > rules.MaxStopSequences+1 {", httpapi, "SixteenStopSequences"},
		mutant{"messages: disable_parallel_tool_use read under another name", "adapters/httpapi/wire/messages/messages.go",
			"`json:\"disable_parallel_tool_use\"`", "`json:\"disable_parallel_tool_calls\"`", httpapi, "DisableParallelToolUse"},
		mutant{"messages: disable_parallel_tool_use inverted", "adapters/httpapi/msgapi/decode.go",
			"mr.Chat.ParallelToolCalls = !dp", "mr.Chat.ParallelToolCalls = dp", httpapi, "DisableParallelToolUse"},
		mutant{"messages: parallel tool calls off unless asked", "adapters/httpapi/msgapi/decode.go",
			"ParallelToolCalls: true}}", "ParallelToolCalls: false}}", httpapi, "DisableParallelToolUse"},
		mutant{"messages: the stop scanner holds one byte too few", stop,
			"sc.hold = max(sc.hold, len(s)-1)", "sc.hold = max(sc.hold, len(s)-2)", httpapi, "NeverLeaksAStopSequence"},
		mutant{"messages: a stop-cut Message keeps the turn's tool_use blocks", "adapters/httpapi/msgapi/answer.go",
			"\tif sc.Matched == nil {\n\t\tfor _, c := range all.Calls {", "\tif true {\n\t\tfor _, c := range all.Calls {", httpapi, "CarriesNoToolUse"},
		mutant{"messages: an argumentless tool_use block stops without {}", emitter,
			"if s.open == toolUse && len(s.input) == 0 {", "if false && s.open == toolUse && len(s.input) == 0 {", httpapi, "ArgumentlessToolUse"},
		mutant{"messages: message_delta reports a smaller input count", emitter,
			"if u.InputTokens >= s.startInput {", "if true {", httpapi, "FewerInputTokens"},
		mutant{"messages: count_tokens served without a key", "adapters/httpapi/routes.go",
			"{method: \"POST\", path: pathCount, access: keyed,", "{method: \"POST\", path: pathCount, access: open,", httpapi, "CountTokensRequiresAnAPIKey"},
		mutant{"budget: the recipe hint tells clients case-sensitively", "domain/budget/client.go",
			"ua := strings.ToLower(userAgent)", "ua := userAgent", "./domain/budget/", "InAnyCase"},
		mutant{"observers: a wrapped queue grows out of order", "app/observe.go",
			"grown[i] = s.ring[(s.head+i)%len(s.ring)]", "grown[i] = s.ring[i]", "./app/", "WrappingQueue"},
		mutant{"observers: a grown queue keeps its old head", "app/observe.go",
			"s.ring, s.head = grown, 0", "s.ring = grown", "./app/", "WrappingQueue"},
		mutant{"observers: an event queued at the ring's length, not after its head", "app/observe.go",
			"s.ring[(s.head+s.n)%len(s.ring)] = q", "s.ring[s.n%len(s.ring)] = q", "./app/", "WrappingQueue"},
		mutant{"observers: a flush whose context ended succeeds", "app/observe.go",
			"\tcase <-ctx.Done():\n\t\treturn ctx.Err()", "\tcase <-ctx.Done():\n\t\treturn nil", "./app/", "FlushWhoseContextEnds"},
		mutant{"observers: a failed subscriber flush ignored", "app/observe.go",
			"\t\tif err := s.Flush(ctx); err != nil {\n\t\t\treturn err\n\t\t}", "\t\t_ = s.Flush(ctx)", "./app/", "FlushWhoseContextEnds"},
		mutant{"observers: a sweep reports the rows it did not apply", "app/observe.go",
			"if n := counts[r.ID]; n > 0 {", "if n := counts[r.ID]; n >= 0 {", "./app/", "SweepReportsOnly"},
		mutant{"observers: an anchor lookup reports its own row for the time row", "app/observe.go",
			"if r.ID == d.Via {", "if r.ID == d.Row {", "./app/", "AnchorLookupReportsEachAppliedRowOnce"},
	)
}
