package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/pmgate/pmgate/adapters/emulator"
)

// demoBanner runs `gateway demo --port 0` and returns its whole banner.
func demoBanner(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, logs := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"demo", "--port", "0"}, noEnv, out, logs) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo returned %v", err)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if s := out.String(); strings.Contains(s, "Try a fault") {
			return s
		}
	}
	t.Fatalf("demo printed no banner:\n%s\n%s", out.String(), logs.String())
	return ""
}

// shellFields splits one POSIX shell command line (quotes, backslash-newline)
// into words, as the user's shell would.
func shellFields(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for i := 0; i < len(line); i++ {
		c := rune(line[i])
		switch {
		case quote == '\'' && c == '\'', quote == '"' && c == '"':
			quote = 0
		case quote != 0:
			w.WriteRune(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == '\\' && i+1 < len(line) && line[i+1] == '\n':
			i++
		case c == ' ' || c == '\n' || c == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(c)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("unclosed quote in %q", line)
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// claudeCommand is the Claude Code command of a printed block: its
// environment and its arguments (the lines after the heading up to the
// first comment).
func claudeCommand(t *testing.T, block string) (env map[string]string, args []string) {
	t.Helper()
	var cmd []string
	for _, l := range strings.Split(block, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			break
		}
		cmd = append(cmd, l)
	}
	env = map[string]string{}
	for _, w := range shellFields(t, strings.Join(cmd, "\n")) {
		if k, v, ok := strings.Cut(w, "="); ok && len(args) == 0 && regexp.MustCompile(`^[A-Z_]+$`).MatchString(k) {
			env[k] = v
			continue
		}
		args = append(args, w)
	}
	return env, args
}

// flagValue is the word after name in args, or "".
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// TestTheDemoBannerPrintsTheClaudeCodeRecipe: the demo's Claude Code line is
// the recipe that fits the service's default budget (the prompt file by an
// absolute path that exists and holds examples/claude-code/system-prompt.md,
// the recipe's seven tools, Bash allowed for -p), every model name pinned to
// the demo's; before, it was bare `claude`, refused for its size. With
// PMGATE_CLAUDE_BIN (the real Claude Code 2.1.332 binary, e.g.
// clients/js/node_modules/@anthropic-ai/claude-code-linux-x64/claude) the
// line runs, from a directory outside the clone, and its tool turn finishes
// under the default limits.
func TestTheDemoBannerPrintsTheClaudeCodeRecipe(t *testing.T) {
	is := is.New(t)
	banner := demoBanner(t)
	_, block, ok := strings.Cut(banner, "Claude Code (")
	is.True(ok) // the banner has a Claude Code block
	block = block[strings.Index(block, "\n  ")+1:]
	env, args := claudeCommand(t, block)

	is.True(len(args) > 0 && args[0] == "claude")
	is.Equal(args[1], "-p")
	prompt := flagValue(args, "--system-prompt-file")
	is.True(filepath.IsAbs(prompt)) // works from any directory
	got, err := os.ReadFile(prompt)
	is.NoErr(err) // the file exists while the demo runs
	want, err := os.ReadFile("../../examples/claude-code/system-prompt.md")
	is.NoErr(err)
	is.Equal(string(got), string(want))                    // the recipe's prompt
	is.Equal(flagValue(args, "--tools"), recipeTools)      // the recipe's tools
	is.Equal(flagValue(args, "--allowedTools"), "Bash")    // -p may run Bash
	is.True(strings.Contains(block, "unrecognized model")) // the warning is explained
	for _, k := range []string{"ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
		"ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"} {
		is.Equal(env[k], demoModel) // every model name pinned
	}
	base, key := regexp.MustCompile(`base URL\s+(\S+)`).FindStringSubmatch(banner), regexp.MustCompile(`API key\s+(\S+)`).FindStringSubmatch(banner)
	is.Equal(env["ANTHROPIC_BASE_URL"]+"/v1", base[1]) // the origin, without /v1
	is.Equal(env["ANTHROPIC_API_KEY"], key[1])

	bin := os.Getenv("PMGATE_CLAUDE_BIN")
	if bin == "" {
		t.Log("PMGATE_CLAUDE_BIN unset: the line is not run")
		return
	}
	dir, home := t.TempDir(), t.TempDir()
	args[2] = "Say what is here. #loop=1" // the emulator's directive: one tool round, then an answer
	cmd := exec.CommandContext(t.Context(), bin, append(args[1:], "--output-format", "stream-json", "--verbose")...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	is.NoErr(cmd.Run())
	is.True(strings.Contains(out.String(), `"name":"Bash"`))            // a tool round ran
	is.True(strings.Contains(out.String(), `"stop_reason":"end_turn"`)) // and the turn finished, not refused
	is.True(!strings.Contains(out.String(), "upstream_query_too_long"))
}

// TestRecipeWritesTheExamplesWithAbsolutePaths: `gateway recipe` writes each
// agent's files with the content of examples/ (Codex's config with the three
// edited lines filled in, opencode's config pointing at the prompt file),
// prints command lines with absolute paths, and refuses to overwrite a file
// the user changed unless --force.
func TestRecipeWritesTheExamplesWithAbsolutePaths(t *testing.T) {
	is := is.New(t)
	examplesDir, err := filepath.Abs("../../examples")
	is.NoErr(err)
	t.Chdir(t.TempDir())
	read := func(p string) string {
		b, err := os.ReadFile(p)
		is.NoErr(err)
		return string(b)
	}
	exampleFile := func(_ *testing.T, p string) string { return read(filepath.Join(examplesDir, p)) }
	wd, err := os.Getwd()
	is.NoErr(err)

	var out bytes.Buffer
	is.NoErr(run(t.Context(), []string{"recipe", "claude-code", "--dir", "cc dir"}, noEnv, &out, &out))
	dir := filepath.Join(wd, "cc dir")
	is.Equal(read(filepath.Join(dir, "system-prompt.md")), exampleFile(t, "claude-code/system-prompt.md"))
	_, args := claudeCommand(t, out.String()[strings.Index(out.String(), "\n  ")+1:])
	is.Equal(flagValue(args, "--system-prompt-file"), filepath.Join(dir, "system-prompt.md")) // absolute, quoted for the shell
	is.Equal(flagValue(args, "--tools"), recipeTools)

	out.Reset()
	is.NoErr(run(t.Context(), []string{"recipe", "codex", "--model", "m2", "--base-url", "http://127.0.0.1:9000/v1"}, noEnv, &out, &out))
	dir = filepath.Join(wd, "pmgate-codex")
	is.Equal(read(filepath.Join(dir, "instructions.md")), exampleFile(t, "codex/instructions.md"))
	cfg := read(filepath.Join(dir, "config.toml"))
	is.Equal(cfg, strings.NewReplacer(`"/path/to/pmgate/examples/codex/instructions.md"`, `"`+filepath.Join(dir, "instructions.md")+`"`,
		`"http://127.0.0.1:8788/v1"`, `"http://127.0.0.1:9000/v1"`, `model = "gpt-5.5"`, `model = "m2"`).Replace(exampleFile(t, "codex/config.toml")))
	is.True(strings.Contains(out.String(), "CODEX_HOME="+dir+" "))
	is.True(strings.Contains(out.String(), `codex exec --skip-git-repo-check "`))             // outside a git repository too
	is.True(strings.Contains(out.String(), `codex exec --skip-git-repo-check resume --last`)) // the next turn as well

	out.Reset()
	is.NoErr(run(t.Context(), []string{"recipe", "opencode", "--model", "m1"}, noEnv, &out, &out))
	dir = filepath.Join(wd, "pmgate-opencode")
	is.Equal(read(filepath.Join(dir, "build-prompt.md")), exampleFile(t, "opencode/build-prompt.md"))
	is.True(strings.Contains(read(filepath.Join(dir, "opencode.json")), `"prompt": "{file:`+filepath.Join(dir, "build-prompt.md")+`}"`))
	is.True(strings.Contains(out.String(), "OPENCODE_CONFIG="+filepath.Join(dir, "opencode.json")+" opencode run --model pmgate/m1"))

	// A second run with the same content is fine; an edited file is the user's.
	is.NoErr(run(t.Context(), []string{"recipe", "opencode", "--model", "m1"}, noEnv, &out, &out))
	is.NoErr(os.WriteFile(filepath.Join(dir, "build-prompt.md"), []byte("mine"), 0o644))
	err = run(t.Context(), []string{"recipe", "opencode", "--model", "m1"}, noEnv, &out, &out)
	is.True(err != nil && strings.Contains(err.Error(), "--force"))
	is.Equal(read(filepath.Join(dir, "build-prompt.md")), "mine") // untouched
	is.NoErr(run(t.Context(), []string{"recipe", "opencode", "--model", "m1", "--force"}, noEnv, &out, &out))
	is.Equal(read(filepath.Join(dir, "build-prompt.md")), exampleFile(t, "opencode/build-prompt.md"))

	err = run(t.Context(), []string{"recipe", "claude"}, noEnv, &out, &out)
	is.True(err != nil && strings.Contains(err.Error(), "claude-code, codex or opencode"))
}

// TestDocumentedAgentLinesWorkOutsideTheClone: every Claude Code and Codex
// command line of README.md, docs/ and the control page works from any
// directory: the prompt file by an absolute (or ~) path, `claude -p` with the
// permission Bash needs, `codex exec` with --skip-git-repo-check.
func TestDocumentedAgentLinesWorkOutsideTheClone(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md", "../../adapters/ops/adminui/app.js")
	promptRE := regexp.MustCompile(`--system-prompt-file\s+(\S+)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "\\\n", " ") // continued lines as one
		for n, line := range strings.Split(text, "\n") {
			where := fmt.Sprintf("%s:%d", filepath.Base(f), n+1)
			for _, m := range promptRE.FindAllStringSubmatch(line, -1) {
				if p := strings.Trim(m[1], "`\"'"); p != "…" && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, "<") {
					t.Errorf("%s: --system-prompt-file %s works only from one directory", where, p)
				}
			}
			if strings.Contains(line, "claude -p ") && strings.Contains(line, "--tools") && !strings.Contains(line, "--allowedTools") {
				t.Errorf("%s: claude -p with tools but no --allowedTools: -p refuses Bash", where)
			}
			for _, m := range regexp.MustCompile(`codex exec (resume|"|-\S+)`).FindAllStringSubmatch(line, -1) {
				if m[1] != "--skip-git-repo-check" {
					t.Errorf("%s: %q without --skip-git-repo-check refuses to run outside a git repository", where, m[0])
				}
			}
		}
	}
}

// TestTheDemosToolCommandsArePlaceholders: a tool call of the demo (and of
// `gateway emulator`) carries, where its schema has a command, one that only
// says it is a placeholder: opencode and Codex run what they are given. The
// rest of the arguments are still the schema's "value-<name>".
func TestTheDemosToolCommandsArePlaceholders(t *testing.T) {
	is := is.New(t)
	base, key := startDemo(t, "access_token")
	body := `{"model":"pmgate-demo","messages":[{"role":"user","content":"Run it. #tool=bash"}],
	  "tools":[{"type":"function","function":{"name":"bash","description":"Runs a command","parameters":{"type":"object",
	    "properties":{"command":{"type":"string"},"cmd":{"type":"string"},"description":{"type":"string"}},"required":["command","cmd","description"]}}}]}`
	req, err := http.NewRequestWithContext(t.Context(), "POST", base+"/chat/completions", strings.NewReader(body))
	is.NoErr(err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					Function struct{ Arguments string } `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	is.NoErr(json.NewDecoder(resp.Body).Decode(&out))
	is.Equal(resp.StatusCode, 200)
	is.Equal(len(out.Choices[0].Message.ToolCalls), 1)
	var args map[string]string
	is.NoErr(json.Unmarshal([]byte(out.Choices[0].Message.ToolCalls[0].Function.Arguments), &args))
	is.Equal(args["command"], emulator.PlaceholderCommand)
	is.Equal(args["cmd"], emulator.PlaceholderCommand)
	is.Equal(args["description"], "value-description") // not a command: as generated
	ran, err := exec.CommandContext(t.Context(), "sh", "-c", args["command"]).Output()
	is.NoErr(err)                                                         // it runs anywhere
	is.True(strings.HasPrefix(string(ran), "pmgate demo: a placeholder")) // and says what it is
}
