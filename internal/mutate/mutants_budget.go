package main

// Mutants of the owner's budget (docs/USAGE.md): continuations count against
// the key's limits and a refused one leaves its group pending; a request of
// which nothing was sent gives its token back; a budget's time never runs
// backwards; every API says when a key's window frees.
func init() {
	mutants = append(mutants,
		mutant{"a continuation exempt from the key's limits", "app/gateway.go",
			"\tadmitted, err := g.admit(ctx, p)\n\tif err != nil {\n\t\tg.settleFailure(ctx, p, gr.Key, true)\n\t\treturn nil, err\n\t}",
			"\tadmitted, _ := g.admit(ctx, p)", "./app/", "ToolLoop"},
		mutant{"a continuation refused by a limit keeps its claim", "app/gateway.go",
			"\tif err != nil {\n\t\tg.settleFailure(ctx, p, gr.Key, true)\n\t\treturn nil, err\n\t}",
			"\tif err != nil {\n\t\treturn nil, err\n\t}", "./app/", "ToolLoop|BudgetCannot"},
		mutant{"a dispatch the upstream never accepted is not given back", "app/gateway.go",
			"\t\tif notAccepted(err) {\n\t\t\tsum.Dispatches = 0\n\t\t\tg.refund(ctx, p, admitted, err)\n\t\t}\n\t\tif claim != nil {",
			"\t\tif notAccepted(err) {\n\t\t\tsum.Dispatches = 0\n\t\t\t_ = admitted\n\t\t}\n\t\tif claim != nil {", "./app/", "Refunded"},
		mutant{"a request the gateway refused itself keeps its token", "app/usage.go",
			"\t\t\tb.ReturnToken(p.Limits)", "\t\t\t_ = p", "./app/", "GatewayRefusedItself"},
		mutant{"a request the upstream saw gets its token back", "app/usage.go",
			"unsent := errors.Is(cause, ports.ErrNotSent)", "unsent := errors.Is(cause, ports.ErrNotSent) || cause != nil", "./app/", "GatewayRefusedItself"},
		mutant{"a returned token overfills the bucket", "domain/usage/usage.go",
			"b.Tokens = math.Min(b.Tokens+1, l.Burst())", "b.Tokens++", "./domain/usage/", "TokenBack"},
		mutant{"a clock behind the budget's refills the bucket again", "domain/usage/usage.go",
			"\tif b.TokensAt.After(now) {\n\t\tnow = b.TokensAt\n\t}", "", "./adapters/memstore/", "Usage"},
		mutant{"a clock behind the budget's day reopens the old day", "domain/usage/usage.go",
			"err == nil && d.After(now) {", "err == nil && false && d.After(now) {", "./domain/usage/", "ClockBehind"},
		mutant{"the Messages API's key refusal without its wait", "adapters/httpapi/errors.go",
			"wait: retryAfter(e, status, err)}", "wait: retryAfter(e, status, nil)}",
			"./adapters/httpapi/", "RefusalsHaveTheirRetryHeaders"},
	)
}
