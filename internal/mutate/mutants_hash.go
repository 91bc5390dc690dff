package main

// The transcript hash written member by member, and the string writer's
// eight-byte skip (issue 39: the transcript hashed in one fast pass): each
// must write the bytes the generic writer writes.
func init() {
	mutants = append(mutants,
		mutant{"the eight-byte skip passes over a backslash", "domain/canon/value.go",
			"return (below|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0",
			"return (below|(quote-ones)&^quote|(backslash-ones)&^backslash&0)&highs != 0",
			"./domain/canon/", "EightByteSkip"},
		mutant{"a message written directly keeps an assistant's name", "domain/canon/echo.go",
			"\tif m.Role != chat.RoleAssistant && m.Name != \"\" {\n\t\tif b, err = appendString(append(b, `,\"name\":`...), m.Name)",
			"\tif m.Name != \"\" {\n\t\tif b, err = appendString(append(b, `,\"name\":`...), m.Name)",
			"./domain/canon/", "WrittenDirectly"},
		mutant{"a message written directly shows an empty assistant content with calls", "domain/canon/echo.go",
			"if m.Content == nil || withCalls && *m.Content == \"\" {", "if m.Content == nil {",
			"./domain/canon/", "WrittenDirectly"},
	)
}
