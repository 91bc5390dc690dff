package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pmgate/pmgate/examples"
)

const recipeHelp = `usage: gateway recipe claude-code|codex|opencode [--dir D] [--base-url URL] [--model M] [--force]

Writes an agent's recipe files (the ones of examples/ that fit the service's
default budget, docs/CLIENTS.md) into a directory and prints the command lines
that use them, with absolute paths, so they work from any directory.

  claude-code   D/system-prompt.md
  codex         D/instructions.md and D/config.toml (a CODEX_HOME of its own:
                model, base URL and the instructions' absolute path filled in)
  opencode      D/build-prompt.md and D/opencode.json (for OPENCODE_CONFIG)

flags:
  --dir D         where to write (default ./pmgate-<agent>; created if missing)
  --base-url URL  the gateway's base URL, ending in /v1 (default http://127.0.0.1:8788/v1)
  --model M       the model the agent uses (default: the first of PROVIDER_MODELS,
                  else pmgate-demo, the demo's)
  --force         overwrite files that exist and differ (otherwise refused)

variables read:
  PROVIDER_MODELS   the default of --model
`

// recipeTools are the tools of the Claude Code recipe (docs/CLIENTS.md).
const recipeTools = "Bash,Read,Edit,Write,Glob,Grep,TodoWrite"

// recipeFiles are the files each agent's recipe writes: the name written and
// its source under examples/.
var recipeFiles = map[string][][2]string{
	"claude-code": {{"system-prompt.md", "claude-code/system-prompt.md"}},
	"codex":       {{"instructions.md", "codex/instructions.md"}, {"config.toml", "codex/config.toml"}},
	"opencode":    {{"build-prompt.md", "opencode/build-prompt.md"}, {"opencode.json", ""}},
}

// recipeParams are what a recipe's files and command lines are filled with.
type recipeParams struct {
	dir, base, model, key string // key: what the command lines put where the key goes
}

func runRecipeCommand(args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprint(stdout, recipeHelp)
			return nil
		}
		return fmt.Errorf("%w: gateway recipe needs an agent first: claude-code, codex or opencode (see --help)", errUsage)
	}
	agent := args[0]
	if _, ok := recipeFiles[agent]; !ok {
		return fmt.Errorf("%w: unknown agent %q: claude-code, codex or opencode", errUsage, agent)
	}
	fs := flag.NewFlagSet("recipe", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", "pmgate-"+agent, "")
	base := fs.String("base-url", "http://127.0.0.1:8788/v1", "")
	model := fs.String("model", defaultRecipeModel(getenv), "")
	force := fs.Bool("force", false, "")
	if done, err := parseFlags(fs, args[1:], recipeHelp, stdout); done || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q (flags go after the agent: gateway recipe %s --dir D)", errUsage, fs.Arg(0), agent)
	}
	if !strings.HasPrefix(*base, "http://") && !strings.HasPrefix(*base, "https://") || !strings.HasSuffix(*base, "/v1") {
		return fmt.Errorf("%w: --base-url must be the gateway's http(s) base URL ending in /v1, e.g. http://127.0.0.1:8788/v1", errUsage)
	}
	if strings.TrimSpace(*model) == "" {
		return fmt.Errorf("%w: --model must not be empty", errUsage)
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	p := recipeParams{dir: abs, base: *base, model: *model, key: `"$PROVIDER_API_KEY"`}
	written, err := writeRecipe(agent, p, *force)
	if err != nil {
		return err
	}
	for _, w := range written {
		fmt.Fprintf(stdout, "wrote %s\n", w)
	}
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, recipeCommands(agent, p))
	return nil
}

// defaultRecipeModel is the first of PROVIDER_MODELS, else the demo's model.
func defaultRecipeModel(getenv func(string) string) string {
	first, _, _ := strings.Cut(getenv("PROVIDER_MODELS"), ",")
	if m := strings.TrimSpace(first); m != "" {
		return m
	}
	return demoModel
}

// recipeContent is the content of one recipe file: the embedded example,
// with the lines a user would edit filled in.
func recipeContent(agent, name, src string, p recipeParams) ([]byte, error) {
	if src == "" { // opencode.json, which examples/ has only in docs/CLIENTS.md
		cfg := map[string]any{
			"$schema": "https://opencode.ai/config.json",
			"provider": map[string]any{"pmgate": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "pmgate",
				"options": map[string]any{"baseURL": p.base, "apiKey": "{env:PROVIDER_API_KEY}"},
				"models":  map[string]any{p.model: map[string]any{}}}},
			"agent": map[string]any{"build": map[string]any{"prompt": "{file:" + filepath.Join(p.dir, "build-prompt.md") + "}"}},
		}
		b, err := json.MarshalIndent(cfg, "", "  ")
		return append(b, '\n'), err
	}
	b, err := examples.Files.ReadFile(src)
	if err != nil || name != "config.toml" {
		return b, err
	}
	text := string(b)
	for _, r := range [][2]string{
		{`model = "gpt-5.5"`, "model = " + tomlString(p.model)},
		{`model_instructions_file = "/path/to/pmgate/examples/codex/instructions.md"`, "model_instructions_file = " + tomlString(filepath.Join(p.dir, "instructions.md"))},
		{`base_url = "http://127.0.0.1:8788/v1"`, "base_url = " + tomlString(p.base)},
	} {
		if !strings.Contains(text, r[0]) {
			return nil, fmt.Errorf("examples/codex/config.toml no longer has the line %q to fill in", r[0])
		}
		text = strings.Replace(text, r[0], r[1], 1)
	}
	return []byte(text), nil
}

// tomlString is s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// writeRecipe writes an agent's recipe files into p.dir and returns their
// paths. A file that exists with other content is refused unless force: a
// recipe the user edited is theirs.
func writeRecipe(agent string, p recipeParams, force bool) ([]string, error) {
	type file struct {
		path string
		data []byte
	}
	var files []file
	for _, f := range recipeFiles[agent] {
		data, err := recipeContent(agent, f[0], f[1], p)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(p.dir, f[0])
		if old, err := os.ReadFile(path); err == nil && string(old) != string(data) && !force {
			return nil, fmt.Errorf("%w: %s exists and differs from the recipe; pass --force to overwrite it, or --dir for another directory", errUsage, path)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		files = append(files, file{path, data})
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
			return written, err
		}
		written = append(written, f.path)
	}
	return written, nil
}

// shellWord quotes s for a POSIX shell where it needs it.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:,=@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// claudeCodeLines are the command lines of the Claude Code recipe, directly
// against the gateway's /v1/messages: every model name pinned, the recipe's
// prompt file and tools, and the permission -p needs to run Bash. The demo's
// banner prints them too.
func claudeCodeLines(base, key, model, promptFile string) string {
	m := shellWord(model)
	return fmt.Sprintf(`  ANTHROPIC_BASE_URL=%s ANTHROPIC_API_KEY=%s \
  ANTHROPIC_MODEL=%s ANTHROPIC_DEFAULT_OPUS_MODEL=%s ANTHROPIC_DEFAULT_SONNET_MODEL=%s \
  ANTHROPIC_DEFAULT_HAIKU_MODEL=%s ANTHROPIC_SMALL_FAST_MODEL=%s CLAUDE_CODE_SUBAGENT_MODEL=%s \
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
  claude -p "List the files here." --system-prompt-file %s \
    --tools %s --allowedTools Bash
  # --allowedTools Bash: -p cannot ask, so without it Bash is refused; it lets the agent run any
  # command here unasked (narrow it, e.g. "Bash(go test *)"). Next turn: the same line with --continue.
  # Claude Code marks %s "(unrecognized model name)" and its costs as inaccurate: it knows only
  # Anthropic's names. Harmless; the gateway's usage (gateway usage, the control page) is the real one.
`, shellWord(strings.TrimSuffix(base, "/v1")), key, m, m, m, m, m, m, shellWord(promptFile), recipeTools, model)
}

// recipeCommands are the command lines that use an agent's written recipe.
func recipeCommands(agent string, p recipeParams) string {
	switch agent {
	case "claude-code":
		return "Claude Code (docs/CLIENTS.md#claude-code; the gateway's origin, without /v1):\n" +
			claudeCodeLines(p.base, p.key, p.model, filepath.Join(p.dir, "system-prompt.md"))
	case "codex":
		home := shellWord(p.dir)
		return fmt.Sprintf(`Codex CLI (docs/CLIENTS.md#codex-cli; %s is its CODEX_HOME, sessions are kept there):
  CODEX_HOME=%s PMGATE_API_KEY=%s codex exec --skip-git-repo-check "List the files here."
  CODEX_HOME=%s PMGATE_API_KEY=%s codex exec --skip-git-repo-check resume --last "And now?"
  # --skip-git-repo-check: codex exec refuses to run outside a git repository without it.
  # Codex runs the commands the model asks for, in its sandbox (read-only unless you pass --sandbox).
  # Or copy config.toml to ~/.codex/config.toml and leave out CODEX_HOME=.
`, p.dir, home, p.key, home, p.key)
	default: // opencode
		cfg := shellWord(filepath.Join(p.dir, "opencode.json"))
		return fmt.Sprintf(`opencode (docs/CLIENTS.md#opencode; the config reads the key from PROVIDER_API_KEY):
  OPENCODE_CONFIG=%s opencode run --model %s "List the files here."
  OPENCODE_CONFIG=%s opencode run --model %s --continue "And now?"
  # opencode runs the commands the model asks for without asking, in the current directory.
  # Or merge opencode.json into ~/.config/opencode/opencode.json and leave out OPENCODE_CONFIG=.
`, cfg, shellWord("pmgate/"+p.model), cfg, shellWord("pmgate/"+p.model))
	}
}
