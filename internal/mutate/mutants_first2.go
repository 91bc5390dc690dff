package main

// Mutants of the first hour, round 3 (issue 38 items 2, 3, 9, 11): the demo's
// Claude Code line is the recipe, gateway recipe keeps a user's edits, the
// demo's commands are placeholders, and the update notice compares versions
// by precedence and says when it could not check.
func init() {
	mutants = append(mutants,
		mutant{"the demo banner's prompt file by a relative path", "cmd/gateway/demo.go",
			`filepath.Join(recipeDir, "system-prompt.md"))`, `filepath.Join(filepath.Base(recipeDir), "system-prompt.md"))`, "./cmd/gateway/", "TestTheDemoBannerPrintsTheClaudeCodeRecipe"},
		mutant{"gateway recipe overwrites an edited file", "cmd/gateway/recipe.go",
			"string(old) != string(data) && !force", "string(old) != string(data) && force", "./cmd/gateway/", "TestRecipeWrites"},
		mutant{"the demo's tool commands are value-command again", "cmd/gateway/demo.go",
			"cfg.PlaceholderCommands = true", "cfg.PlaceholderCommands = false", "./cmd/gateway/", "TestTheDemosToolCommandsArePlaceholders"},
		mutant{"a pre-release counts as newer than its release", "adapters/update/update.go",
			"case len(x.pre) == 0: // a release is newer than its pre-releases\n\t\treturn 1", "case len(x.pre) == 0: // a release is newer than its pre-releases\n\t\treturn -1", "./adapters/update/", "Compare|Newer"},
		mutant{"a failed update check reads as up to date", "adapters/update/update.go",
			`s.State, s.Reason = "could_not_check", err.Error()`, `s.State, s.Reason = "current", err.Error()`, "./adapters/update/", "CouldNotCheck"},
	)
}
