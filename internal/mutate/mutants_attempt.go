package main

// The attempt machine's rows (domain/attempt): each defect changes what a
// repeat gets.
func init() {
	mutants = append(mutants,
		mutant{"a repeat of an attempt of unknown outcome is replayed", "domain/attempt/attempt.go",
			`{"", Unknown, Retry, Unknown, EffectReject, errs.RetryOutcomeUnknown,`,
			`{"", Unknown, Retry, Unknown, EffectReplay, errs.RetryOutcomeUnknown,`, "./domain/attempt/", ""},
		mutant{"a retry of an attempt in flight is dispatched again", "domain/attempt/attempt.go",
			`{"", InFlight, Retry, Awaited, EffectWait, "",`,
			`{"", InFlight, Retry, Awaited, EffectDispatch, "",`, "./domain/attempt/", ""},
		mutant{"an unfinished record past its deadline is still in flight", "domain/attempt/attempt.go",
			"\tcase !f.Done && !now.Before(f.Deadline):\n\t\treturn Unknown\n", "", "./domain/attempt/", ""},
	)
}
