package main

// The Gemini API's guarantees (issue 40), each defect caught by the test its
// -run names.
func init() {
	const (
		httpapi = "./adapters/httpapi/"
		decode  = "adapters/httpapi/gemapi/decode.go"
		routes  = "adapters/httpapi/gemini_routes.go"
		emitter = "adapters/httpapi/sse/gemsse/gemsse.go"
	)
	mutants = append(mutants,
		// The search by name is the pairing rule's (rules/pairing.go).
		mutant{"gemini: a response without an id paired with the last call of its name", "adapters/httpapi/rules/pairing.go",
			"\t\t\tif c != nil {\n\t\t\t\treturn nil, true", "\t\t\tif false && c != nil {\n\t\t\t\treturn nil, true",
			httpapi, "PairByIDOrByAUniqueName"},
		mutant{"gemini: a different second response to a call taken as a repeat", decode,
			"if fr.ID.IsString() && string(fr.Response) == string(call.Response) && absentRaw(fr.Parts) {",
			"if fr.ID.IsString() && absentRaw(fr.Parts) {", httpapi, "PairByIDOrByAUniqueName"},
		mutant{"gemini: a last chunk after nothing shown", emitter,
			"if !s.shown && len(calls) == 0 {", "if false {", "./adapters/httpapi/sse/gemsse/", "LastChunk"},
		mutant{"gemini: a failure ends without its raw tail", emitter,
			"\tif err := s.life.W.Tail(body); err != nil {\n\t\treturn err\n\t}\n", "", httpapi, "StreamFailureAfterHeaders"},
		mutant{"gemini: the JSON-array stream served", routes,
			"if stream && !altSSE {", "if false && stream && !altSSE {", httpapi, "WithoutAltSSE"},
	)
}
