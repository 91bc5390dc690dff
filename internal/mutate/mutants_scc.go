package main

// The long agent sessions (Claude Code direct): a system message after the
// new prompt (Claude Code's environment update) and the newest directive of
// a merged turn.
func init() {
	mutants = append(mutants,
		mutant{"a system message after the new prompt ends the continuation", "domain/conversation/transcript.go",
			"for i > 0 && (msgs[i-1].Role == chat.RoleUser || msgs[i-1].Role == chat.RoleSystem) {",
			"for i > 0 && msgs[i-1].Role == chat.RoleUser {", "./domain/conversation/", "TestSplit"},
		mutant{"the first directive of a merged turn wins", "adapters/emulator/directive_last.go",
			"return all[len(all)-1]", "return all[0]", "./adapters/emulator/", "TestTheNewestDirectiveOfATurnWins"},
		mutant{"a system message after the new turn ends the history split", "domain/correlation/validate.go",
			"if !ok || users == 0 && c.Trailing == \"\" {", "if !ok || users == 0 || msgs[len(msgs)-1].Role != chat.RoleUser {",
			"./domain/correlation/", "TestSplitHistory"},
	)
}
