//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			// Codex's first request alone serializes to about 20,000
			// characters (its instructions and environment context), above the
			// service's reported query limit; the scenario raises it.
			const limit = 200000
			emu := newEmulator(t, func(c *emulator.Config) { c.MaxQueryChars = limit })
			s := serveWith(t, emu, st, map[string]string{"POSTMAN_MAX_QUERY_CHARS": strconv.Itoa(limit)})
			sink := newSuiteWitness(t)
			started := time.Now()
			defer func() { reportSuite(t, "codex", time.Since(started), sink) }()
			for _, sc := range []struct {
				name   string
				prompt string
				rounds int
			}{
				{"round trip", "Look at the files here, then say done. #loop=1", 1},
				{"three rounds", "Work in three steps, then answer. #loop=3", 3},
			} {
				t.Run(sc.name, func(t *testing.T) {
					before := s.emu.Count(emulator.KindToolResponse)
					events, stderr := runCodex(t, bin, s, sink, sc.prompt)
					if !hasEvent(events, "turn.completed") || hasEvent(events, "turn.failed") {
						t.Fatalf("codex did not complete the turn:\n%s\nstderr:\n%s\ngateway:\n%s", strings.Join(events, "\n"), stderr, failedRequests(s.logs.String()))
					}
					if got := s.emu.Count(emulator.KindToolResponse) - before; got != sc.rounds {
						t.Errorf("codex: %d TOOL_RESPONSE dispatches at the emulator, want exactly %d (one per round)", got, sc.rounds)
					}
					if f := failedRequests(s.logs.String()); f != "" {
						t.Errorf("codex: the gateway refused requests:\n%s", f)
					}
				})
			}
			t.Logf("codex: largest upstream query %d UTF-16 code units (POSTMAN_MAX_QUERY_CHARS raised to %d)", largestQuery(emu), limit)
		})
	}
}

// runCodex runs `codex exec --json` with a custom provider pointed at the
// gateway and returns its JSON events and stderr.
func runCodex(t *testing.T, bin string, s *served, sink *suiteWitness, prompt string) ([]string, string) {
	t.Helper()
	home, codexHome, work := t.TempDir(), t.TempDir(), t.TempDir()
	config := `model = "` + testModel + `"
model_provider = "pmgate"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.pmgate]
name = "pmgate"
base_url = "` + s.base + `/v1"
env_key = "PMGATE_TEST_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "exec", "--skip-git-repo-check", "--json", prompt)
	cmd.Dir = work
	cmd.Env = append(sink.env(), "HOME="+home, "CODEX_HOME="+codexHome, "PMGATE_TEST_KEY="+testKey, "PATH="+os.Getenv("PATH"),
		"RUST_LOG=error", "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // the events say what happened
	var events []string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "{") {
			events = append(events, line)
		}
	}
	return events, stderr.String()
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

// largestQuery is the longest input.query the emulator received, in UTF-16
// code units (as the service counts).
func largestQuery(emu *emulator.Server) int {
	n := 0
	for _, rec := range emu.Requests() {
		var body struct {
			Input struct {
				Query string `json:"query"`
			} `json:"input"`
		}
		if json.Unmarshal(rec.Body, &body) == nil {
			n = max(n, len(utf16.Encode([]rune(body.Input.Query))))
		}
	}
	return n
}
