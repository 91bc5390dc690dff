package main

// The one pairing rule (adapters/httpapi/rules/pairing.go) and the one tool-set
// loop (rules/tools.go) that the Messages and Gemini translations (and
// chat's and Responses' tools) share: each defect is caught by the golden
// answers of every API (TestPairingAndToolRulesAnswerAsBefore).
func init() {
	const (
		httpapi = "./adapters/httpapi/"
		pairing = "adapters/httpapi/rules/pairing.go"
		golden  = "TestPairingAndToolRulesAnswerAsBefore"
	)
	mutants = append(mutants,
		mutant{"pair: an answer after text accepted", pairing,
			"\tif pr.hasText {\n\t\treturn pr.words.Late(at)", "\tif false && pr.hasText {\n\t\treturn pr.words.Late(at)", httpapi, golden},
		mutant{"pair: a call id of an earlier turn accepted again", pairing,
			"\tif pr.seen[id] {", "\tif false && pr.seen[id] {", httpapi, golden},
		mutant{"pair: the unanswered calls listed with the answered ones", pairing,
			"\t\tif !c.Answered {\n\t\t\tids = append(ids, c.ID)", "\t\tif true || !c.Answered {\n\t\t\tids = append(ids, c.ID)", httpapi, golden},
		mutant{"pair: a user turn's text joined without blank lines", pairing,
			"\tif pr.text.Len() > 0 && t != \"\" {\n\t\tpr.text.WriteString(\"\\n\\n\")", "\tif false && pr.text.Len() > 0 && t != \"\" {\n\t\tpr.text.WriteString(\"\\n\\n\")", httpapi, golden},
		mutant{"tools: a repeated tool name accepted", "adapters/httpapi/rules/tools.go",
			"\tif seen[d.Name] {", "\tif false && seen[d.Name] {", httpapi, golden},
		mutant{"tools: chat's entry shape refused after its name", "adapters/httpapi/rules/tools.go",
			"\tif d.Err != nil {\n\t\treturn chat.Tool{}, d.Err\n\t}\n\tif !d.NameOK", "\tif !d.NameOK", httpapi, golden},
	)
}
