package main

// The one pairing rule (adapters/httpapi/pairing.go) and the one tool-set
// loop (decode_tools.go) that the Messages and Gemini translations (and
// chat's and Responses' tools) share: each defect is caught by the golden
// answers of every API (TestPairingAndToolRulesAnswerAsBefore).
func init() {
	const (
		httpapi = "./adapters/httpapi/"
		pairing = "adapters/httpapi/pairing.go"
		golden  = "TestPairingAndToolRulesAnswerAsBefore"
	)
	mutants = append(mutants,
		mutant{"pair: an answer after text accepted", pairing,
			"\tif pr.hasText {\n\t\treturn pr.words.late(at)", "\tif false && pr.hasText {\n\t\treturn pr.words.late(at)", httpapi, golden},
		mutant{"pair: a call id of an earlier turn accepted again", pairing,
			"\tif pr.seen[id] {", "\tif false && pr.seen[id] {", httpapi, golden},
		mutant{"pair: the unanswered calls listed with the answered ones", pairing,
			"\t\tif !c.answered {\n\t\t\tids = append(ids, c.id)", "\t\tif true || !c.answered {\n\t\t\tids = append(ids, c.id)", httpapi, golden},
		mutant{"pair: a user turn's text joined without blank lines", pairing,
			"\tif pr.text.Len() > 0 && t != \"\" {\n\t\tpr.text.WriteString(\"\\n\\n\")", "\tif false && pr.text.Len() > 0 && t != \"\" {\n\t\tpr.text.WriteString(\"\\n\\n\")", httpapi, golden},
		mutant{"tools: a repeated tool name accepted", "adapters/httpapi/decode_tools.go",
			"\tif seen[d.name] {", "\tif false && seen[d.name] {", httpapi, golden},
		mutant{"tools: chat's entry shape refused after its name", "adapters/httpapi/decode_tools.go",
			"\tif d.err != nil {\n\t\treturn chat.Tool{}, d.err\n\t}\n\tif !d.nameOK", "\tif !d.nameOK", httpapi, golden},
	)
}
