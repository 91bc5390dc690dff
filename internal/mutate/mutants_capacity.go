package main

// Mutants of the per-key share of the correlation store and of the
// cancellation of a group its conversation moved past (row C28).
func init() {
	mutants = append(mutants,
		mutant{"the registry admits a group beyond its key's share", "domain/correlation/registry.go",
			"\tif !r.keyFits(g.PrincipalID, len(g.Calls)) {\n\t\treturn r.refuseShare(g.PrincipalID, g.IssuedAt)",
			"\tif false && !r.keyFits(g.PrincipalID, len(g.Calls)) {\n\t\treturn r.refuseShare(g.PrincipalID, g.IssuedAt)",
			"./domain/correlation/", "TestRegistryMatchesModel"},
		mutant{"the check before sending ignores the key's share", "domain/correlation/registry.go",
			"\tif !r.keyFits(principal, calls) {\n\t\treturn r.refuseShare(principal, now)",
			"\tif false && !r.keyFits(principal, calls) {\n\t\treturn r.refuseShare(principal, now)",
			"./adapters/memstore/", "StoreContract"},
		mutant{"a key's share counts its groups but not its calls", "domain/correlation/registry.go",
			"return liveGroups+1 <= g && liveCalls+calls <= c", "return liveGroups+1 <= g && (c > 0 || liveCalls+calls <= c)",
			"./adapters/memstore/", "StoreContract"},
		mutant{"the share refusal gives no Retry-After", "domain/correlation/registry.go",
			"\tif !first.IsZero() && first.After(now) {", "\tif false && !first.IsZero() && first.After(now) {",
			"./domain/correlation/", "TestRegistryMatchesModel"},
		mutant{"a request that answers one call of a group still moves past it", "domain/correlation/moved.go",
			"\t\tif !unanswered[c.PublicID] {\n\t\t\treturn false", "\t\tif false && !unanswered[c.PublicID] {\n\t\t\treturn false",
			"./domain/correlation/", "TestRegistryMatchesModel"},
		mutant{"a result's id still counts as unanswered", "domain/correlation/moved.go",
			"\t\t\tanswered[m.ToolCallID] = true", "\t\t\t_ = m.ToolCallID",
			"./app/", "TestAContinuationOrAnotherKeyNeverCancelsAGroup"},
		mutant{"the app never cancels a group its conversation moved past", "app/gateway.go",
			"\t\tg.cancelMovedPast(ctx, p, req.Messages)", "\t\t_ = req.Messages",
			"./app/", "TestAConversationThatMovedPastItsCallsCancelsTheirGroup"},
		mutant{"the PostgreSQL admission ignores the key's share", "adapters/pgstore/admit.go",
			`"{key}", "AND (SELECT room FROM kl)"`, `"{key}", ""`,
			"./adapters/pgstore/", "StoreContract"},
		mutant{"the PostgreSQL check before sending ignores the key's share", "adapters/pgstore/admit.go",
			"\trm.key = s.limits.KeyFits(kg, kc, calls)", "\trm.key = true",
			"./adapters/pgstore/", "StoreContract"},
	)
}
