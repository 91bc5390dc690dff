package main

// An agent's compaction continues the conversation under changed
// instructions or tools (row A37), and a too-long refusal says what is long.
func init() {
	mutants = append(mutants,
		mutant{"the system prompt part of the anchor's key again", "domain/conversation/transcript.go",
			"\t_, dialogue := Instructions(msgs)\n\treturn canon.TranscriptHashV2(dialogue, nil, nil)",
			"\treturn canon.TranscriptHashV2(msgs, nil, nil)",
			"./app/", "Compaction|AnythingBut"},
		mutant{"a changed system prompt not told apart", "domain/conversation/machine.go",
			"\t\tcase req.InstructionsHash != a.InstructionsHash:\n\t\t\tev = InstructionsMismatch\n", "",
			"./domain/conversation/", ""},
		mutant{"a compaction too long to start fresh is refused", "app/conversation.go",
			"\t\t\t\t\t\td.Reason == conversation.ReasonInstructionsChanged || d.Reason == conversation.ReasonToolsChanged {",
			"\t\t\t\t\t\tfalse {",
			"./app/", "Compaction"},
		mutant{"the changed system prompt not sent with the compaction", "app/conversation.go",
			"\tif r.req.InstructionsHash != a.InstructionsHash {", "\tif false {",
			"./app/", "Compaction"},
		mutant{"a changed model continues a compaction", "domain/conversation/machine.go",
			"\tif a.State == Active && (req.WorkspaceID != a.WorkspaceID || req.Model != a.Model ||",
			"\tif a.State == Active && (req.WorkspaceID != a.WorkspaceID ||",
			"./domain/conversation/", "Compaction"},
		mutant{"a long history pointed at the recipe it follows", "domain/budget/budget.go",
			"\tif r.OverQuery() && !r.OverTools() && !r.Continued && 2*r.Instructions <= r.Query.Value {",
			"\tif false {",
			"./domain/budget/", ""},
		mutant{"a lost conversation not named in the refusal", "domain/budget/budget.go",
			"\tif r.Lost && r.OverQuery() {", "\tif false {",
			"./domain/budget/", ""},
		mutant{"results as history checked against the tools again", "domain/correlation/validate.go",
			"\t\tif st.Name == stepTools {\n\t\t\tcontinue\n\t\t}\n", "",
			"./domain/correlation/", "History"},
	)
}
