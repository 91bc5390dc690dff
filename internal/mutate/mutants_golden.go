package main

// Claude Code's injected blocks (cmd/gateway/injected_e2e_test.go): the
// cut-off nudge after dispatched results, its disappearance in the next
// round, the other recovery nudges and the compaction summary turn.
func init() {
	const injected = "TestClaudeCodesCutOffNudgeAfter|TestAShortSessionsCutOffNudge|TestClaudeCodesRecoveryNudges|TestClaudeCodesCompactionSummaryTurn"
	mutants = append(mutants,
		mutant{"a re-sent earlier-history round refused as a conflict", "app/gateway.go",
			"\t\trelaxed := d.Event == correlation.SubmitHistoryMismatch || d.Event == correlation.SubmitDifferent\n",
			"\t\trelaxed := d.Event == correlation.SubmitHistoryMismatch\n",
			"./cmd/gateway/", injected},
		mutant{"a replayed earlier-history answer undisclosed", "app/gateway.go",
			"\t\t\t\treturn disclosedReplay{Turn: t, disclosure: DisclosedEarlierHistory}, nil",
			"\t\t\t\treturn t, nil",
			"./cmd/gateway/", injected},
		mutant{"the nudge after dispatched results kept inside the last result", "adapters/httpapi/rules/pairing.go",
			"\t\tlast.Content, last.Trailing = &joined, trailing\n", "\t\tlast.Content = &joined\n",
			"./cmd/gateway/", injected},
		mutant{"results of an UNCERTAIN group with a nudge after them not history", "domain/correlation/validate.go",
			"\tcase Uncertain:\n\t\tif _, pure := splitAccepted(g.AcceptedResultsHash); isHistory(s, pure)",
			"\tcase Uncertain:\n\t\tif _, pure := splitAccepted(g.AcceptedResultsHash); false && isHistory(s, pure)",
			"./cmd/gateway/", injected},
		mutant{"a thinking-only assistant turn kept as an empty answer", "adapters/httpapi/rules/pairing.go",
			"\tif m.Content == nil && len(m.ToolCalls) == 0 {\n\t\treturn\n",
			"\tif false && m.Content == nil && len(m.ToolCalls) == 0 {\n\t\treturn\n",
			"./cmd/gateway/", injected},
		mutant{"the failed turn's prompt sent again before the router's nudge", "domain/conversation/anchor.go",
			"\tif n == 0 || n >= len(added) {\n\t\treturn added",
			"\tif true || n == 0 || n >= len(added) {\n\t\treturn added",
			"./cmd/gateway/", injected},
		mutant{"thinking counted as output", "adapters/postman/decode_envelope.go",
			"\t// valid and ignored.\n\tif !d.step(d.fire(completion.Metadata, \"\")) {",
			"\t// valid and ignored.\n\tif !d.step(d.fire(completion.Output, \"\")) {",
			"./adapters/postman/", "TestAThinkingOnlyTurnIsAnEmptyStream"},
	)
}
