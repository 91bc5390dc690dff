//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// codexBinary is the native Codex CLI that `npm ci` puts into clients/codex.
const codexBinary = "../../clients/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"

// TestCodex runs the real Codex CLI (clients/codex, pinned) headless against
// `gateway serve` and the emulator, both strategies: a task that needs tool
// round trips over /v1/responses. Like TestClients it is skipped without the
// installed package unless PMGATE_CLIENTS=1 (make test-clients, CI).
func TestCodex(t *testing.T) {
	bin, err := filepath.Abs(codexBinary)
	if err == nil {
		_, err = os.Stat(bin)
	}
	if err != nil {
		if os.Getenv("PMGATE_CLIENTS") == "1" {
			t.Fatalf("Codex CLI missing (run make test-clients): %v", err)
		}
		t.Skip("clients/codex is not installed (make test-clients installs it)")
	}
	if ok, iface := loopbackOnly(); !ok {
		if os.Getenv("PMGATE_CLIENTS") == "1" {
			t.Fatalf("PMGATE_CLIENTS=1 but interface %s is not loopback: Codex runs only in a loopback-only namespace (make test-clients, scripts/netns.sh)", iface)
		}
		t.Skip("Codex runs only in a loopback-only network namespace (make test-clients)")
	}
	t.Cleanup(func() { writeClientsReport(t) }) // with TestClients' lines, collected before
	recipe := codexRecipe(t)
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			// The service's default limits on both sides: 10,000 UTF-16 code
			// units of query and 20 tools. Codex's own configuration fits it
			// only with the recipe of examples/codex (docs/CLIENTS.md).
			emu := newEmulator(t)
			s := serveWith(t, emu, st, nil)
			sink := newSuiteWitness(t)
			started := time.Now()
			defer func() { reportSuite(t, "codex", time.Since(started), sink) }()

			t.Run("default configuration over the default limit", func(t *testing.T) {
				before := emu.Count(emulator.KindUserQuery) + emu.Count(emulator.KindToolResponse) + emu.Count(emulator.KindRejected)
				events, stderr := runCodex(t, bin, s, sink, codexSession{}, "Say hello. #loop=0")
				if !hasEvent(events, "turn.failed") {
					t.Fatalf("codex: its default first turn was not refused:\n%s\nstderr:\n%s", strings.Join(events, "\n"), stderr)
				}
				fails := failedRequests(s.logs.String())
				if !strings.Contains(fails, "upstream_query_too_long") {
					t.Errorf("codex: the gateway's refusal is not upstream_query_too_long:\n%s", fails)
				}
				if got := emu.Count(emulator.KindUserQuery) + emu.Count(emulator.KindToolResponse) + emu.Count(emulator.KindRejected) - before; got != 0 {
					t.Errorf("codex: %d dispatches reached the emulator, want none (refused before sending)", got)
				}
				if msg := strings.Join(events, "\n"); !strings.Contains(msg, "docs/CLIENTS.md#codex-cli") {
					t.Errorf("codex: the refusal does not point at the Codex recipe:\n%s", msg)
				}
				sink.note(st + ": default configuration: " + firstQuerySize(strings.Join(events, "\n")))
			})

			// The recipe: a three-round tool task to its final answer, then a
			// second turn of the same session (codex exec resume --last), which
			// must continue the upstream conversation with only the new prompt.
			sess := codexSession{home: t.TempDir(), codexHome: t.TempDir(), work: t.TempDir(), config: recipe}
			t.Run("recipe, three rounds then a continued turn", func(t *testing.T) {
				mark := len(emu.Requests())
				events, stderr := runCodex(t, bin, s, sink, sess, "Work in three steps, then answer. #loop=3")
				if !hasEvent(events, "turn.completed") || hasEvent(events, "turn.failed") {
					t.Fatalf("codex did not complete the turn:\n%s\nstderr:\n%s\ngateway:\n%s", strings.Join(events, "\n"), stderr, failedRequests(s.logs.String()))
				}
				first := emu.Requests()[mark:]
				if got := countKind(first, emulator.KindToolResponse); got != 3 {
					t.Errorf("codex: %d TOOL_RESPONSE dispatches at the emulator, want exactly 3 (one per round)", got)
				}
				mark = len(emu.Requests())
				events, stderr = runCodex(t, bin, s, sink, sess, "Thanks; and now say goodbye. #loop=0", "resume", "--last")
				if !hasEvent(events, "turn.completed") || hasEvent(events, "turn.failed") {
					t.Fatalf("codex did not complete the second turn:\n%s\nstderr:\n%s\ngateway:\n%s", strings.Join(events, "\n"), stderr, failedRequests(s.logs.String()))
				}
				second := emu.Requests()[mark:]
				if len(second) != 1 || second[0].ChatType != emulator.KindUserQuery || second[0].Turn != 2 {
					t.Fatalf("codex: the second turn was not one continued USER_QUERY at the emulator: %s", describeRequests(second))
				}
				if f := failedRequests(s.logs.String()); strings.Count(f, "\n") != 1 {
					t.Errorf("codex: the gateway refused requests beyond the default-configuration scenario:\n%s", f)
				}
				sink.note(fmt.Sprintf("%s: recipe: first turn %d chars, tool rounds up to %d, second turn (continued) %d chars, %d tools offered",
					st, queryChars(first[0]), largestOf(first), queryChars(second[0]), toolsOffered(first[0])))
			})

			// Issue 34's long session (codex_sessions_test.go): its own
			// emulator and gateway under the default limits.
			t.Run("long session", func(t *testing.T) { codexLongSession(t, bin, recipe, st, sink) })

			if st != "web_session" {
				return // the 20-turn session runs once: it measures the client, not the strategy
			}
			t.Run("recipe, a 20-turn session", func(t *testing.T) {
				sess := codexSession{home: t.TempDir(), codexHome: t.TempDir(), work: t.TempDir(), config: recipe}
				mark := len(emu.Requests())
				for turn := 1; turn <= 20; turn++ {
					prompt := fmt.Sprintf("Turn %d: go on with the task. #loop=0", turn)
					if turn%5 == 0 {
						prompt = fmt.Sprintf("Turn %d: check the files again. #loop=1", turn)
					}
					var args []string
					if turn > 1 {
						args = []string{"resume", "--last"}
					}
					events, stderr := runCodex(t, bin, s, sink, sess, prompt, args...)
					if !hasEvent(events, "turn.completed") || hasEvent(events, "turn.failed") {
						t.Fatalf("codex turn %d did not complete:\n%s\nstderr:\n%s\ngateway:\n%s", turn, strings.Join(events, "\n"), stderr, failedRequests(s.logs.String()))
					}
				}
				all := emu.Requests()[mark:]
				var fresh int
				for _, r := range all {
					if r.ChatType == emulator.KindUserQuery && r.Turn == 1 {
						fresh++
					}
				}
				if fresh != 1 {
					t.Errorf("codex: %d fresh upstream conversations in the session, want 1 (every later turn continued)", fresh)
				}
				sink.note(fmt.Sprintf("%s: recipe: 20-turn session, largest upstream query %d chars (%s)", st, largestOf(all), describeRequests(all)))
			})
		})
	}
}

// codexRecipe is examples/codex/config.toml as a user would edit it: the
// model, the instructions file's absolute path and the gateway's base URL
// (left as a placeholder for runCodex).
func codexRecipe(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../examples/codex/config.toml")
	if err != nil {
		t.Fatal(err)
	}
	instructions, err := filepath.Abs("../../examples/codex/instructions.md")
	if err != nil {
		t.Fatal(err)
	}
	out := string(raw)
	for _, r := range [][2]string{
		{`model = "gpt-5.5"`, `model = "` + testModel + `"`},
		{`"/path/to/pmgate/examples/codex/instructions.md"`, strconv.Quote(instructions)},
		{`base_url = "http://127.0.0.1:8788/v1"`, `base_url = "{{base}}"`},
		{`env_key = "PMGATE_API_KEY"`, `env_key = "PMGATE_TEST_KEY"`},
	} {
		if !strings.Contains(out, r[0]) {
			t.Fatalf("examples/codex/config.toml no longer has %s", r[0])
		}
		out = strings.Replace(out, r[0], r[1], 1)
	}
	return out
}

// codexSession is where one Codex session keeps its state; the zero value is
// a new session with Codex's default configuration.
type codexSession struct {
	home, codexHome, work string
	config                string // a recipe with {{base}}; "" for the default
}

// runCodex runs `codex exec --json [ARGS…] PROMPT` (ARGS: e.g. resume
// --last) with a custom provider pointed at the gateway, in the session's
// directories, and returns its JSON events and stderr.
func runCodex(t *testing.T, bin string, s *served, sink *suiteWitness, sess codexSession, prompt string, args ...string) ([]string, string) {
	t.Helper()
	if sess.home == "" {
		sess.home, sess.codexHome, sess.work = t.TempDir(), t.TempDir(), t.TempDir()
	}
	config := `model = "` + testModel + `"
model_provider = "pmgate"

[model_providers.pmgate]
name = "pmgate"
base_url = "{{base}}"
env_key = "PMGATE_TEST_KEY"
wire_api = "responses"
`
	if sess.config != "" {
		config = sess.config
	}
	// Headless: no approval prompts, a read-only sandbox, and no retries (a
	// retried new turn would be a new upstream query).
	config = `approval_policy = "never"
sandbox_mode = "read-only"
` + strings.Replace(config, "{{base}}", s.base+"/v1", 1) + `request_max_retries = 0
stream_max_retries = 0
`
	if err := os.WriteFile(filepath.Join(sess.codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	argv := append([]string{"exec", "--skip-git-repo-check", "--json"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(argv, prompt)...)
	cmd.Dir = sess.work
	cmd.Env = append(sink.env(), "HOME="+sess.home, "CODEX_HOME="+sess.codexHome, "PMGATE_TEST_KEY="+testKey, "PATH="+os.Getenv("PATH"),
		"RUST_LOG=error", "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // the events say what happened
	return jsonEventLines(&stdout), stderr.String()
}

// jsonEventLines returns the lines of out that are JSON objects (Codex's
// --json events), trimmed.
func jsonEventLines(out *bytes.Buffer) []string {
	var events []string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "{") {
			events = append(events, line)
		}
	}
	return events
}

func hasEvent(events []string, typ string) bool {
	for _, e := range events {
		var v struct{ Type string }
		if json.Unmarshal([]byte(e), &v) == nil && v.Type == typ {
			return true
		}
	}
	return false
}

// failedRequests lists the gateway's access-log lines with a status of 400
// or more (route, status, code).
func failedRequests(logs string) string {
	var b strings.Builder
	for _, line := range strings.Split(logs, "\n") {
		var e struct {
			Msg    string `json:"msg"`
			Path   string `json:"path"`
			Status int    `json:"status"`
			Code   string `json:"code"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Msg == "request" && e.Status >= 400 {
			b.WriteString(e.Path + " " + strconv.Itoa(e.Status) + " " + e.Code + "\n")
		}
	}
	return b.String()
}

// note adds a measurement line to the suite's report.
func (w *suiteWitness) note(text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notes = append(w.notes, text)
}

// queryChars is a recorded request's input.query length in UTF-16 code units
// (as the service counts); 0 for a continuation.
func queryChars(r emulator.Request) int {
	var body struct {
		Input struct {
			Query string `json:"query"`
		} `json:"input"`
	}
	if json.Unmarshal(r.Body, &body) != nil {
		return 0
	}
	return len(utf16.Encode([]rune(body.Input.Query)))
}

// toolsOffered is the number of tools a recorded request offered upstream.
func toolsOffered(r emulator.Request) int {
	var body struct {
		ClientTools struct {
			ThirdParty map[string]struct {
				Tools []json.RawMessage `json:"tools"`
			} `json:"thirdParty"`
		} `json:"clientTools"`
	}
	_ = json.Unmarshal(r.Body, &body)
	n := 0
	for _, g := range body.ClientTools.ThirdParty {
		n += len(g.Tools)
	}
	return n
}

// largestOf is the longest input.query among recorded requests.
func largestOf(rs []emulator.Request) int {
	n := 0
	for _, r := range rs {
		n = max(n, queryChars(r))
	}
	return n
}

func countKind(rs []emulator.Request, kind string) int {
	n := 0
	for _, r := range rs {
		if r.ChatType == kind && !r.Rejected {
			n++
		}
	}
	return n
}

// describeRequests lists recorded requests as kind/turn/query length.
func describeRequests(rs []emulator.Request) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s#%d:%d", r.ChatType, r.Turn, queryChars(r)))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// firstQuerySize is the query size a gateway refusal names ("… would be N
// characters …"), for the report.
func firstQuerySize(text string) string {
	if m := regexp.MustCompile(`would be (\d+) characters`).FindStringSubmatch(text); m != nil {
		return m[1] + " chars, refused before sending"
	}
	return "no size in the refusal"
}
