package main

// The usage ledger, the budget and usage views, PostgreSQL's leases and
// anchors: the behaviours issue 35's mutation run found pinned by no test.
func init() {
	mutants = append(mutants,
		// The usage ledger (app).
		mutant{"a failed flush drops its rows", "app/usage.go",
			"err := u.ledger.Add(ctx, rows)\n\tif err != nil {", "err := u.ledger.Add(ctx, rows)\n\tif false && err != nil {",
			"./app/", "FailedFlush"},
		mutant{"a continuation whose count failed is refunded", "app/usage.go",
			"\"principal_slot\", p.Slot)\n\t\treturn time.Time{}, nil\n\t}\n\tif err != nil {",
			"\"principal_slot\", p.Slot)\n\t\treturn now, nil\n\t}\n\tif err != nil {", "./app/", "CountFailed"},
		mutant{"a continuation the upstream never accepted is not refunded", "app/gateway.go",
			"\t\t\tg.refund(ctx, p, admitted)\n\t\t}\n\t\tg.settleFailure(ctx, p, gr.Key, err)",
			"\t\t\t_ = admitted\n\t\t}\n\t\tg.settleFailure(ctx, p, gr.Key, err)", "./app/", "NeverAccepted"},
		mutant{"query_chars without the history's tool-call arguments", "app/usage.go",
			"\t\tfor _, c := range m.ToolCalls {\n\t\t\tn += usage.Chars(c.Arguments)\n\t\t}\n", "", "./app/", "QueryChars"},
		mutant{"query_chars of a continued conversation counts the whole history", "app/gateway.go",
			"contentChars(up.Chat.Messages)", "contentChars(req.Messages)", "./app/", "QueryChars"},
		mutant{"output_chars without the tool-call arguments received", "app/turn.go",
			"t.meter.OutputChars += usage.Chars(c.Arguments())", "_ = c", "./app/", "OutputChars"},
		mutant{"the views read yesterday's counts as today's", "app/usage.go",
			"bs[k] = b.At(now, usage.Limits{})", "bs[k], _ = b, now", "./app/", "PastWindows"},
	)
}
