package main

// Structured output and tool schemas (issue 35, third hardening round): each
// defect the round found or the mutation run left alive, caught by its own
// package's tests.
func init() {
	mutants = append(mutants,
		mutant{"a lone surrogate escape in a structured answer checked as U+FFFD", "domain/toolschema/json.go",
			"if err == nil && lone {", "if false && err == nil && lone {", "./domain/structured/", "LoneSurrogate"},
		mutant{"a replay released without checking it against the replay's format", "app/replay.go",
			"if ds, err = checkReplay(f, ds); err != nil {", "if false {", "./app/", "Replay"},
		mutant{"the emulator forgets a query's structured scenario in the tool loop it starts", "adapters/emulator/turn.go",
			"c.outScenario = \"\" // the query's structured_* scenario, kept for the answer at the end of its tool loop\n\t\tif structuredScenarios[scenario] {",
			"c.outScenario = \"\" // the query's structured_* scenario, kept for the answer at the end of its tool loop\n\t\tif false {",
			"./adapters/emulator/", "Structured"},
		mutant{"a code fence without a language tag reported as prose", "domain/structured/structured.go",
			"case strings.HasPrefix(text, \"```\"):", "case strings.HasPrefix(text, \"```json\"):", "./domain/structured/", "NotOneJSONValue"},
		mutant{"a structured answer anchored as the raw upstream text", "app/turn.go",
			"\tt.text.Reset()\n\tt.text.WriteString(answer)\n", "", "./app/", "Anchored"},
		mutant{"format uri accepts a space", "domain/toolschema/assertions.go",
			"return r <= ' ' || r == 0x7f", "return r < ' ' || r == 0x7f", "./domain/toolschema/", "Format"},
		mutant{"format uuid accepts text after the last group", "domain/toolschema/assertions.go",
			"[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)", "[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)", "./domain/toolschema/", "Format"},
		mutant{"strict accepts additionalProperties: true", "domain/toolschema/assertions.go",
			"if ap := n.get(\"additionalProperties\"); ap == nil || ap.k != kBool || ap.b {",
			"if ap := n.get(\"additionalProperties\"); ap == nil || ap.k != kBool {", "./domain/toolschema/", "Strict"},
		mutant{"strict skips the objects inside array items", "domain/toolschema/assertions.go",
			"if items := n.get(\"items\"); items != nil {\n\t\tif err := checkStrict(",
			"if items := n.get(\"items\"); false && items != nil {\n\t\tif err := checkStrict(", "./domain/toolschema/", "Strict"},
	)
}
