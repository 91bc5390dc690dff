package main

// Mutants of "a retry never spends twice" (docs/USAGE.md): a marked retry
// gets the recorded outcome; a first attempt whose client left is read to its
// end; an attempt that dispatched nothing frees its retry; a failure is never
// replayed as a success; an Idempotency-Key binds its body.
func init() {
	mutants = append(mutants,
		mutant{"a marked retry is dispatched again", "app/attempt.go",
			"case r.RetryCount >= 1 || req.Client == budget.ClientClaudeCode:",
			"case req.Client == budget.ClientClaudeCode:", "./app/", "MarkedRetry|WhileTheFirst|ClientLeft"},
		mutant{"Claude Code's own retries are dispatched again", "app/attempt.go",
			"case r.RetryCount >= 1 || req.Client == budget.ClientClaudeCode:",
			"case r.RetryCount >= 1 || (false && req.Client == budget.ClientClaudeCode):", "./app/", "ClaudeCodesOwn"},
		mutant{"a first attempt whose client left is not read to its end", "app/attempt.go",
			"\tfor !t.ended {\n\t\td, err := t.inner.Next(t.ctx)\n\t\t_ = t.step(d, err)\n\t}", "", "./app/", "ClientLeft"},
		mutant{"an attempt that dispatched nothing holds its retry back", "app/attempt.go",
			"case err != nil && (t.sum.Dispatches == 0 || errs.Has(err, errs.UpstreamConversationLost)):", "case err != nil && (false || errs.Has(err, errs.UpstreamConversationLost)):", "./app/", "DispatchedNothing"},
		mutant{"a failed attempt's retry is dispatched again", "app/attempt.go",
			"case err != nil && (t.sum.Dispatches == 0 || errs.Has(err, errs.UpstreamConversationLost)):", "case err != nil:", "./app/", "FailedAttempt"},
		mutant{"an Idempotency-Key with another body gets the recorded outcome", "app/attempt.go",
			"if explicit && ok && rec.BodyHash != bodyHash {", "if false {", "./app/", "IdempotencyKey"},
		mutant{"an attempt whose client left without a retry is never released", "app/attempt.go",
			"\t\t\treturn // a retry waits for the answer\n\t\t}\n\t\tt.cancel()", "\t\t\treturn // a retry waits for the answer\n\t\t}", "./app/", "WithoutARetry"},
		mutant{"an attempt whose client left is released although a retry waits", "app/attempt.go",
			"if err == nil && ok && rec.Token == t.token && rec.Awaited {", "if false && err == nil && ok && rec.Token == t.token && rec.Awaited {", "./cmd/gateway/", "TestTheGoSDKsOwnRetries"},
		mutant{"the ingress drops the Idempotency-Key", "adapters/httpapi/handlers.go",
			"RetryCount: count, IdempotencyKey: key}", "RetryCount: count, IdempotencyKey: \"\"}", "./cmd/gateway/", "TestAnIdempotencyKeyGetsTheRecordedOutcome"},
		mutant{"a replayed answer is not disclosed", "adapters/httpapi/handlers.go",
			"\tif rp, ok := turn.(app.Replayed); ok && rp.Replayed() {", "\tif rp, ok := turn.(app.Replayed); ok && rp.Replayed() && false {", "./cmd/gateway/", "TestAnIdempotencyKeyGetsTheRecordedOutcome"},
		mutant{"a lost conversation's re-send gets the recorded 410", "app/attempt.go",
			"case err != nil && (t.sum.Dispatches == 0 || errs.Has(err, errs.UpstreamConversationLost)):", "case err != nil && t.sum.Dispatches == 0:", "./app/", "LostConversation"},
	)
}
