// Package examples holds the agent recipe files of docs/CLIENTS.md, embedded
// so that `gateway recipe` and the demo write the same bytes a clone has.
package examples

import "embed"

// Files are the recipe files, at their paths under examples/.
//
//go:embed claude-code/system-prompt.md codex/instructions.md codex/config.toml opencode/build-prompt.md
var Files embed.FS
