package main

// The request's record written by the route's adapter from what a turn
// returns (issue 39, item 4): a stream's failure after its headers and a
// served turn must reach the access line and the ledger.
func init() {
	mutants = append(mutants,
		mutant{"a stream's failure after its headers is not returned", "adapters/httpapi/answer/stream.go",
			"\t\t\treturn err // written in the stream: the adapter only notes it", "\t\t\treturn nil",
			"./adapters/httpapi/", "AStreamsFailureAfterItsHeaders"},
		mutant{"a served turn is not counted in the ledger", "adapters/httpapi/routes.go",
			"\t\t\ts.recordUsage(r, f, ri.slot, code)", "\t\t\t_ = code",
			"./adapters/httpapi/", "WhatTheAccessLineAndTheLedgerSay"},
	)
}
