package main

// The emulator's "#once" (adapters/emulator/once.go) and the observer's call
// ids that the long-session suites count double dispatch with.
func init() {
	mutants = append(mutants,
		mutant{"a #once message applies its directives every time", "adapters/emulator/once.go",
			"if o.seen[body] {", "if false && o.seen[body] {", "./adapters/emulator/", "Once"},
		mutant{"a #once message is dropped although it is new", "adapters/emulator/once.go",
			"o.seen[body] = true\n\t\t}\n\t\tkept.WriteString", "o.seen[body] = true\n\t\t\tcontinue\n\t\t}\n\t\tkept.WriteString", "./adapters/emulator/", "Once"},
		mutant{"the packed web_session ids are not counted", "cmd/gateway/clients_test.go",
			"if json.Unmarshal([]byte(*packed), &entries) == nil {", "if false && json.Unmarshal([]byte(*packed), &entries) == nil {", "./cmd/gateway/", "TestSummarizeUpstreamListsTheCallIDs"},
	)
}
