package main

// The usage ledger, the budget and usage views, PostgreSQL's leases and
// anchors: the behaviours issue 35's mutation run found pinned by no test.
func init() {
	mutants = append(mutants,
		// The usage ledger (app).
		mutant{"a failed flush drops its rows", "app/usage.go",
			"err := u.ledger.Add(ctx, rows)\n\tif err != nil {", "err := u.ledger.Add(ctx, rows)\n\tif false && err != nil {",
			"./app/", "FailedFlush"},
		// "a continuation whose count failed is refunded" is gone: a
		// continuation whose budget cannot be read is now refused before
		// sending (mutants_budget.go holds that rule's mutant).
		mutant{"a continuation the upstream never accepted is not refunded", "app/gateway.go",
			"\t\t\tg.refund(ctx, p, admitted, err)\n\t\t}\n\t\tg.settleFailure(ctx, p, gr.Key, notAccepted(err))",
			"\t\t\t_ = admitted\n\t\t}\n\t\tg.settleFailure(ctx, p, gr.Key, notAccepted(err))", "./app/", "NeverAccepted"},
		mutant{"query_chars without the history's tool-call arguments", "app/usage.go",
			"\t\tfor _, c := range m.ToolCalls {\n\t\t\tn += usage.Chars(c.Arguments)\n\t\t}\n", "", "./app/", "QueryChars"},
		mutant{"query_chars of a continued conversation counts the whole history", "app/gateway.go",
			"sum.Dispatches, sum.QueryChars = 1, contentChars(up.Chat.Messages)", "sum.Dispatches, sum.QueryChars = 1, contentChars(req.Messages)", "./app/", "QueryChars"},
		mutant{"output_chars without the tool-call arguments received", "app/turn.go",
			"t.sum.OutputChars += usage.Chars(c.Arguments())", "_ = c", "./app/", "OutputChars"},
		mutant{"the views read yesterday's counts as today's", "app/usage.go",
			"bs[k] = b.At(now, usage.Limits{})", "bs[k], _ = b, now", "./app/", "PastWindows"},
		// The budget and usage views (httpapi).
		mutant{"the control page swaps today's and this month's dispatches", "adapters/ops/budget.go",
			"DispatchesToday: b.DayDispatches, DispatchesMonth: b.MonthDispatches})",
			"DispatchesToday: b.MonthDispatches, DispatchesMonth: b.DayDispatches})", "./adapters/httpapi/", "BudgetViews"},
		mutant{"the control page and /metrics read yesterday's counts as today's", "app/usage.go",
			"bs[k] = b.At(now, usage.Limits{})", "bs[k], _ = b, now", "./adapters/httpapi/", "BudgetViews"},
		mutant{"the monthly dispatch limit series reports the daily quota", "adapters/ops/budget.go",
			"float64(k.DispatchesPerMonth), k.Slot, \"month\")", "float64(k.DispatchesPerDay), k.Slot, \"month\")",
			"./adapters/httpapi/", "BudgetViews"},
		mutant{"the usage report defaults to eight days", "adapters/ops/budget.go",
			"usage.Day(now.AddDate(0, 0, -6))", "usage.Day(now.AddDate(0, 0, -7))", "./adapters/httpapi/", "SevenDays"},
		mutant{"the usage report accepts until before since", "adapters/ops/budget.go",
			"if b.Before(a) || b.Sub(a) > maxUsageDays", "if b.Sub(a) > maxUsageDays", "./adapters/httpapi/", "SevenDays"},
		mutant{"the upstream's total kept beside an estimated part", "adapters/httpapi/answer/usage.go",
			"if out.TotalTokens == nil || estimated {", "if out.TotalTokens == nil {", "./adapters/httpapi/", "OneKind"},
		mutant{"no total for two reported parts", "adapters/httpapi/answer/usage.go",
			"if out.TotalTokens == nil || estimated {", "if estimated {", "./adapters/httpapi/", "OneKind"},
		// keys list (cmd/gateway).
		mutant{"keys list swaps today's and this month's dispatches", "cmd/gateway/keys.go",
			"spentText(counted, k.DispatchesToday, s.Limits.DispatchesPerDay),\n\t\t\tspentText(counted, k.DispatchesMonth, s.Limits.DispatchesPerMonth)",
			"spentText(counted, k.DispatchesMonth, s.Limits.DispatchesPerDay),\n\t\t\tspentText(counted, k.DispatchesToday, s.Limits.DispatchesPerMonth)",
			"./cmd/gateway/", "TestKeysListShowsToday"},

		// PostgreSQL: the budgets the views read, the leases, the anchors.
		mutant{"pgstore: this month's dispatches read as another month's", "adapters/pgstore/usage.go",
			"\t\t\tif month != nil {\n\t\t\t\tb.Month = usage.Month(*month)\n\t\t\t}\n", "",
			"./adapters/pgstore/", "UsageContract"},
		mutant{"pgstore: a leased admission ignores the lease's calls", "adapters/pgstore/admit.go",
			"WHERE id = $1::text AND free_groups >= 1 AND free_calls >= $2::integer", "WHERE id = $1::text AND free_groups >= 1",
			"./adapters/pgstore/", "LeasedAdmissionChecks"},
		mutant{"pgstore: releasing a version 3 reservation credits a stripe", "adapters/pgstore/admit.go",
			"FROM gone WHERE st.stripe = $2::smallint AND gone.counted", "FROM gone WHERE st.stripe = $2::smallint",
			"./adapters/pgstore/", "Version3ReservationCredits"},
		mutant{"pgstore: on a tie of anchors another principal gives way", "adapters/pgstore/anchors.go",
			"(principal_id = $1) DESC", "(principal_id <> $1) DESC", "./adapters/pgstore/", "AnchorContract"},
	)
}
