package main

// The transcript hash written member by member, the string writer's
// eight-byte skip, and the hash a continued turn goes on from its prepared
// prefix with (issue 39: the transcript hashed in one fast pass): each must
// give the bytes, and the hash, of the whole transcript written generically.
func init() {
	mutants = append(mutants,
		mutant{"the eight-byte skip passes over a backslash", "domain/canon/value.go",
			"return (below|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0",
			"return (below|(quote-ones)&^quote|(backslash-ones)&^backslash&0)&highs != 0",
			"./domain/canon/", "EightByteSkip"},
		mutant{"a message written directly keeps an assistant's name", "domain/canon/echo.go",
			"\tif m.Role != chat.RoleAssistant && m.Name != \"\" {\n\t\tif b, err = appendString(append(b, `,\"name\":`...), m.Name)",
			"\tif m.Name != \"\" {\n\t\tif b, err = appendString(append(b, `,\"name\":`...), m.Name)",
			"./domain/canon/", "WrittenDirectly|RoleDependentMembers"},
		mutant{"a message written directly shows an empty assistant content with calls", "domain/canon/echo.go",
			"if m.Content == nil || withCalls && *m.Content == \"\" {", "if m.Content == nil {",
			"./domain/canon/", "WrittenDirectly|RoleDependentMembers"},
		mutant{"a continued turn's calls are bound without the prefix's last message", "domain/canon/echo.go",
			"range append(msgs[n-1:len(msgs):len(msgs)], more...)", "range append(msgs[n:len(msgs):len(msgs)], more...)",
			"./app/", "TheToolLoopRunsToTheFinalAnswer"},
	)
}
