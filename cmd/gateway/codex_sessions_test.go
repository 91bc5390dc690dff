//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// codexTap is a recording reverse proxy between Codex and the gateway: the
// suite counts what the agent itself sends (its retries, its compaction
// request), which the emulator cannot see when the gateway refuses before
// sending.
type codexTap struct {
	url  string
	mu   sync.Mutex
	seen []tapped
}

// tapped is one request Codex sent through the tap and what the gateway answered.
type tapped struct {
	Path         string
	Body         []byte
	Status       int
	Conversation string // the answer's x-pmgate-conversation header
}

func newCodexTap(t *testing.T, target string) *codexTap {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tap := &codexTap{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1 // a stream goes through as it comes
	proxy.ModifyResponse = func(resp *http.Response) error {
		tap.mu.Lock()
		defer tap.mu.Unlock()
		if i, ok := resp.Request.Context().Value(tapKey{}).(int); ok {
			tap.seen[i].Status = resp.StatusCode
			tap.seen[i].Conversation = resp.Header.Get("x-pmgate-conversation")
		}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(rw, "tap: body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		tap.mu.Lock()
		tap.seen = append(tap.seen, tapped{Path: r.URL.Path, Body: body})
		i := len(tap.seen) - 1
		tap.mu.Unlock()
		proxy.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), tapKey{}, i)))
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	tap.url = srv.URL
	return tap
}

type tapKey struct{}

// requests returns a copy of what the tap saw, oldest first.
func (tap *codexTap) requests() []tapped {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return append([]tapped(nil), tap.seen...)
}

// codexLong is one long Codex session: its directories, its configuration
// (the recipe with {{base}}) and the tap it talks through.
type codexLong struct {
	bin, home, codexHome, work, bindir string
	config                             string
	tap                                *codexTap
	sink                               *suiteWitness
	retries                            bool // Codex's default retries (else none)
}

// run runs one `codex exec --json [ARGS…] PROMPT` of the session and returns
// its JSON events and stderr.
func (c *codexLong) run(t *testing.T, prompt string, args ...string) ([]string, string) {
	t.Helper()
	// workspace-write: value-cmd counts its calls in a file under the
	// temporary directory.
	config := "approval_policy = \"never\"\nsandbox_mode = \"workspace-write\"\n" + strings.Replace(c.config, "{{base}}", c.tap.url+"/v1", 1)
	if !c.retries {
		config += "request_max_retries = 0\nstream_max_retries = 0\n"
	}
	if err := os.WriteFile(filepath.Join(c.codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	argv := append([]string{"exec", "--skip-git-repo-check", "--json"}, args...)
	cmd := exec.CommandContext(ctx, c.bin, append(argv, prompt)...)
	cmd.Dir = c.work
	cmd.Env = append(c.sink.env(), "HOME="+c.home, "CODEX_HOME="+c.codexHome, "PMGATE_TEST_KEY="+testKey,
		"PATH="+c.bindir+string(os.PathListSeparator)+os.Getenv("PATH"), "RUST_LOG=error", "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // the events say what happened
	return jsonEventLines(&stdout), stderr.String()
}

// writeValueCommand puts value-cmd on the session's PATH: the command the
// emulator asks Codex's exec_command tool to run (its "cmd" built from the
// schema, "value-cmd"). It prints as many bytes as the file "size" in its
// directory says, and counts its calls in "calls": the call whose number is
// in "fail_at" also prints the line "#scenario=<fail_scenario>", so that
// the emulator answers that round's TOOL_RESPONSE with the scenario (a
// failure in the middle of a tool loop); the call whose number is in
// "large_at" prints "large_size" bytes instead.
func (c *codexLong) writeValueCommand(t *testing.T) {
	t.Helper()
	script := `#!/bin/sh
dir=$(dirname "$0")
n=$(cat "$dir/calls" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$dir/calls"
if [ "$n" = "$(cat "$dir/fail_at" 2>/dev/null)" ]; then
	echo "#scenario=$(cat "$dir/fail_scenario")"
fi
size=$(cat "$dir/size")
if [ "$n" = "$(cat "$dir/large_at" 2>/dev/null)" ]; then
	size=$(cat "$dir/large_size")
fi
head -c "$size" /dev/zero | tr '\0' 'v'
echo
`
	c.put(t, "value-cmd", script, 0o755)
	// exec_command runs a login shell, whose profile resets PATH.
	if err := os.WriteFile(filepath.Join(c.home, ".bash_profile"), []byte("export PATH="+c.bindir+":$PATH\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// put writes one of value-cmd's files.
func (c *codexLong) put(t *testing.T, name, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(c.bindir, name), []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// calls is how many times value-cmd ran.
func (c *codexLong) calls() int {
	raw, _ := os.ReadFile(filepath.Join(c.bindir, "calls"))
	n := 0
	fmt.Sscan(string(raw), &n)
	return n
}

// codexTurn is one user turn of the long session.
type codexTurn struct {
	name    string // the failure it brings, or what it is for
	prompt  string
	size    int  // bytes value-cmd prints in this turn
	fails   bool // the turn must end as an error (turn.failed), never as success
	failAt  int  // value-cmd's call (counted from this turn's start) that carries #scenario=failScenario
	failSc  string
	retries bool // Codex's default retries instead of none
	compact bool // a small model_auto_compact_token_limit: Codex compacts before the turn
	// midCompact: a model_auto_compact_token_limit that only a round with
	// a large output reaches (usage per request): Codex compacts in the
	// middle of the turn's tool loop, then goes on; the turn's first call
	// prints a large output, its others size.
	midCompact bool
}

const (
	codexSmallOutput = 1500
	codexLargeOutput = 25000
	// codexMidCompactMargin is how far above the usage of the session's
	// recent requests the mid-loop compaction limit is set: above the fresh
	// request after the compaction (a little longer than the one after the
	// first compaction), below the request that carries the large output
	// whole (about 6,000 tokens more than one with a small output: the
	// emulator counts a token per four bytes of body). Below the fresh
	// request's usage Codex compacts again after every round (measured: 176
	// compactions in 3 minutes, the turn never ended).
	codexMidCompactMargin = 3000
)

// codexLongTurns is the long session: 16 user turns, 34 tool rounds,
// outputs of 1.5 and 25 KB, each failure once, each followed by a turn that
// must succeed; then Codex's own compaction, once the transcript is far over
// the query limit: before a turn, and in the middle of a tool loop.
//
// Codex keeps a failed turn's prompt in its history, so the turn after a
// failure sends it again before the new prompt, and the emulator sees both
// in its newest turn: the last directive of a kind wins there, so every
// turn after a failure says #scenario=usage_last (the strict default shape).
// After a compaction Codex sends every earlier user prompt again, verbatim,
// with no assistant message among them: the whole query is the newest turn,
// and again its last directives win (hence #approval_after=5 after the
// gate's turn, whose #approval_after=2 is among them).
func codexLongTurns() []codexTurn {
	return []codexTurn{
		{name: "start", prompt: "Look around the project. #usage=conversation #scenario=usage_last #approval_after=5 #loop=5", size: codexSmallOutput},
		{name: "large outputs", prompt: "Read the large files. #loop=5", size: codexLargeOutput},
		{name: "truncated_frame", prompt: "Summarise what you saw. #scenario=truncated_frame", size: codexSmallOutput, fails: true},
		{name: "after truncated_frame", prompt: "Go on with the task. #scenario=usage_last #loop=3", size: codexSmallOutput},
		{name: "failure_after_text", prompt: "Explain the plan. #scenario=failure_after_text", size: codexSmallOutput, fails: true},
		{name: "after failure_after_text", prompt: "Go on with the next step. #scenario=usage_last #loop=3", size: codexLargeOutput},
		{name: "drop_after_request", prompt: "Describe the result. #scenario=drop_after_request", size: codexSmallOutput, fails: true},
		{name: "after drop_after_request", prompt: "Go on with the checks. #scenario=usage_last #loop=3", size: codexSmallOutput},
		{name: "failure mid-loop", prompt: "Check four more files. #loop=4", size: codexSmallOutput, fails: true, failAt: 2, failSc: "failure_after_text"},
		{name: "after failure mid-loop", prompt: "Go on after the error. #scenario=usage_last #loop=2", size: codexSmallOutput},
		{name: "loop-approval gate", prompt: "Check every remaining file. #approval_after=2 #loop=4", size: codexSmallOutput, fails: true, retries: true},
		{name: "after the gate", prompt: "Continue. #scenario=usage_last #loop=2", size: codexSmallOutput},
		{name: "compaction", prompt: "Now write the final notes. #scenario=usage_last #loop=0", size: codexSmallOutput, compact: true},
		{name: "after compaction", prompt: "Check the notes once more. #scenario=usage_last #usage=request #loop=2", size: codexSmallOutput},
		{name: "compaction mid-loop", prompt: "Read one large file, then two small ones. #scenario=usage_last #approval_after=5 #loop=3", size: codexSmallOutput, midCompact: true},
		{name: "after compaction mid-loop", prompt: "Wrap up. #scenario=usage_last #approval_after=5 #loop=1", size: codexSmallOutput},
	}
}

// codexLongSession is issue 34's long session with the real Codex CLI, under
// the default limits, then a short session that loses its upstream
// conversation. Both run through a recording proxy (codexTap) so that the
// agent's own requests are counted: its retries and its compaction request.
func codexLongSession(t *testing.T, bin, recipe, st string, sink *suiteWitness) {
	emu := newEmulator(t)
	s := serveWith(t, emu, st, nil)
	tap := newCodexTap(t, s.base)
	c := &codexLong{bin: bin, home: t.TempDir(), codexHome: t.TempDir(), work: t.TempDir(), bindir: t.TempDir(),
		config: recipe, tap: tap, sink: sink}
	c.writeValueCommand(t)
	started := time.Now()

	for i, turn := range codexLongTurns() {
		c.put(t, "size", fmt.Sprint(turn.size), 0o644)
		c.put(t, "fail_at", "", 0o644)
		c.put(t, "large_at", "", 0o644)
		if turn.midCompact {
			c.put(t, "large_at", fmt.Sprint(c.calls()+1), 0o644)
			c.put(t, "large_size", fmt.Sprint(codexLargeOutput), 0o644)
		}
		if turn.failAt > 0 {
			c.put(t, "fail_at", fmt.Sprint(c.calls()+turn.failAt), 0o644)
			c.put(t, "fail_scenario", turn.failSc, 0o644)
		}
		// The compaction limit is read at every run: far above the session
		// except in the compacting turn, whose pre-turn check finds the last
		// reported usage over it.
		limit := 100_000_000
		switch {
		case turn.compact:
			limit = 2000
		case turn.midCompact:
			limit = recentUsage(emu.Requests(), 8) + codexMidCompactMargin
		}
		c.config = fmt.Sprintf("model_auto_compact_token_limit = %d\n", limit) + recipe
		if turn.midCompact {
			// Codex keeps about 10,000 characters of a command's output by
			// default: this turn sends the large output whole, so that it
			// alone goes over the limit.
			c.config = "tool_output_token_limit = 12000\n" + c.config
		}
		c.retries = turn.retries
		var args []string
		if i > 0 {
			args = []string{"resume", "--last"}
		}
		emuMark, tapMark, logMark := len(emu.Requests()), len(tap.requests()), len(s.logs.String())
		events, stderr := c.run(t, turn.prompt, args...)
		got := emu.Requests()[emuMark:]
		sent := tap.requests()[tapMark:]
		lines := s.logs.String()[logMark:]
		transcript := func() string {
			return fmt.Sprintf("events:\n%s\nstderr:\n%s\nagent requests: %s\nupstream: %s\ngateway:\n%s",
				strings.Join(events, "\n"), stderr, describeTapped(sent), describeRequests(got), lines)
		}
		completed, failed := hasEvent(events, "turn.completed"), hasEvent(events, "turn.failed")
		switch {
		case turn.fails && (completed || !failed):
			t.Errorf("codex turn %d (%s): the failure was not reported as an error (completed %v, failed %v):\n%s", i+1, turn.name, completed, failed, transcript())
		case !turn.fails && (!completed || failed):
			t.Errorf("codex turn %d (%s) did not complete:\n%s", i+1, turn.name, transcript())
		}
		if turn.name == "loop-approval gate" {
			// The gate is a 400 of its own, and Codex (default retries) must
			// not send it again: every agent request after it is a retry.
			gate, resent := answered(sent, 0)
			switch {
			case gate < 0 || sent[gate].Status != http.StatusBadRequest || !strings.Contains(strings.Join(events, "\n"), "upstream_loop_approval"):
				t.Errorf("codex: the gate turn did not end with 400 upstream_loop_approval:\n%s", transcript())
			case resent != 0 || len(sent) != gate+1:
				t.Errorf("codex re-sent the gated request %d time(s) with its default retries (%d request(s) after it), want none:\n%s", resent, len(sent)-gate-1, transcript())
			}
			sink.note(fmt.Sprintf("%s: codex: the gate (400 upstream_loop_approval) with Codex's default retries: re-sent %d time(s), %d request(s) after it, agent requests %s", st, resent, len(sent)-gate-1, describeTapped(sent)))
		}
		if turn.compact || turn.midCompact {
			var compactions []tapped
			for _, r := range sent {
				if r.compaction() {
					compactions = append(compactions, r)
				}
			}
			phase := "pre_turn"
			if turn.midCompact {
				phase = "mid_turn"
			}
			switch {
			case len(compactions) == 0:
				t.Errorf("codex did not compact in the turn:\n%s", transcript())
			case len(compactions) > 1:
				t.Errorf("codex compacted %d times in one turn, want once (a compaction loop):\n%s", len(compactions), transcript())
			case compactions[0].compactionPhase() != phase:
				t.Errorf("codex's compaction phase is %q, want %q:\n%s", compactions[0].compactionPhase(), phase, transcript())
			case compactions[0].Status != http.StatusOK:
				t.Errorf("codex's compaction request (a %d-byte body) got %d, want 200 (issue 34: compaction passes):\n%s",
					len(compactions[0].Body), compactions[0].Status, transcript())
			}
		}
		sink.note(fmt.Sprintf("%s: codex long session, turn %d (%s): %s; largest upstream query %d chars; dispatches %d USER_QUERY / %d TOOL_RESPONSE; agent requests %s; disclosures %s",
			st, i+1, turn.name, outcome(completed, failed), largestOf(got), countKind(got, "USER_QUERY"), countKind(got, "TOOL_RESPONSE"),
			describeTapped(sent), disclosures(lines)))
	}
	all := emu.Requests()
	for _, p := range longSessionProblems(all, s.logs.String()) {
		t.Errorf("codex long session: %s", p)
	}
	sink.note(fmt.Sprintf("%s: codex long session: %d turns in %.0fs, %d tool rounds (value-cmd calls), largest upstream query %d chars, dispatches %d USER_QUERY / %d TOOL_RESPONSE, refused %d",
		st, len(codexLongTurns()), time.Since(started).Seconds(), c.calls(), largestOf(all), countKind(all, "USER_QUERY"), countKind(all, "TOOL_RESPONSE"), emu.Count("rejected")))

	codexLostConversation(t, st, emu, s, c)
	if dir := os.Getenv("PMGATE_CODEX_DUMP"); dir != "" { // the agent's requests, for a look at their shape
		for i, r := range tap.requests() {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%03d-%d.json", st, i, r.Status)), r.Body, 0o644)
		}
		_ = os.WriteFile(filepath.Join(dir, st+"-gateway.log"), []byte(s.logs.String()), 0o644)
	}
}

// codexLostConversation: a short session whose upstream conversation the
// service loses between two turns. Codex runs with its default retries: the
// 410 upstream_conversation_lost must not be re-sent, and the turn after it
// starts fresh and completes.
func codexLostConversation(t *testing.T, st string, emu *emulator.Server, s *served, long *codexLong) {
	c := &codexLong{bin: long.bin, home: t.TempDir(), codexHome: t.TempDir(), work: t.TempDir(), bindir: t.TempDir(),
		config: "model_auto_compact_token_limit = 100000000\n" + long.config[strings.Index(long.config, "\n")+1:], tap: long.tap, sink: long.sink, retries: true}
	c.writeValueCommand(t)
	c.put(t, "size", fmt.Sprint(codexSmallOutput), 0o644)
	for i, p := range []string{"Start a small task. #loop=1", "Go on. #loop=1", "And once more. #loop=1"} {
		if i == 1 {
			emu.ForgetConversations()
		}
		var args []string
		if i > 0 {
			args = []string{"resume", "--last"}
		}
		mark, logMark := len(c.tap.requests()), len(s.logs.String())
		events, stderr := c.run(t, p, args...)
		sent := c.tap.requests()[mark:]
		completed, failed := hasEvent(events, "turn.completed"), hasEvent(events, "turn.failed")
		if i != 1 {
			if !completed || failed {
				t.Errorf("codex (lost conversation) turn %d did not complete:\nevents:\n%s\nstderr:\n%s\nagent requests: %s", i+1, strings.Join(events, "\n"), stderr, describeTapped(sent))
			}
			continue
		}
		// Codex (default retries) re-sends a 410 once; the gateway's answer to
		// the re-sent request starts a fresh conversation, so the turn goes
		// on. More than one 410, or more than one re-send, is a defect.
		lost, resent := answered(sent, http.StatusGone)
		n410 := 0
		for _, r := range sent {
			if r.Status == http.StatusGone {
				n410++
			}
		}
		switch {
		case lost < 0 || n410 != 1:
			t.Errorf("codex (lost conversation): want exactly one 410 upstream_conversation_lost, got %d:\nevents:\n%s\nagent requests: %s", n410, strings.Join(events, "\n"), describeTapped(sent))
		case resent > 1:
			t.Errorf("codex (lost conversation): the lost turn was re-sent %d times, want at most once:\nagent requests: %s", resent, describeTapped(sent))
		case resent == 0 && (completed || !failed || !strings.Contains(strings.Join(events, "\n"), "upstream_conversation_lost")):
			t.Errorf("codex (lost conversation): not re-sent, and not reported as the error:\nevents:\n%s", strings.Join(events, "\n"))
		case resent == 1 && (!completed || failed):
			t.Errorf("codex (lost conversation): the re-sent turn did not complete:\nevents:\n%s\nagent requests: %s", strings.Join(events, "\n"), describeTapped(sent))
		}
		long.sink.note(fmt.Sprintf("%s: codex: the lost conversation (410 upstream_conversation_lost) with Codex's default retries: re-sent %d time(s), %s, agent requests %s; disclosures %s",
			st, resent, outcome(completed, failed), describeTapped(sent), disclosures(s.logs.String()[logMark:])))
	}
}

// longSessionProblems checks issue 34's rules over a session, counted at
// the emulator: every query within the default limit and none refused, no
// tool result dispatched twice, and no turn refused by the gateway as too
// long (its access lines).
func longSessionProblems(all []emulator.Request, logs string) []string {
	var out []string
	for i, r := range all {
		if q := queryChars(r); q > 10_000 {
			out = append(out, fmt.Sprintf("upstream request %d: a query of %d chars, over the default limit of 10,000", i, q))
		}
		if r.Rejected || r.Refusal != "" {
			out = append(out, fmt.Sprintf("upstream request %d: the emulator refused it (%s %q)", i, r.ChatType, r.Refusal))
		}
	}
	seen := map[string]int{}
	for i, r := range all {
		if r.ChatType != emulator.KindToolResponse {
			continue
		}
		for _, id := range dispatchedCallIDs(r.Body) {
			if j, dup := seen[id]; dup {
				out = append(out, fmt.Sprintf("tool call %s was dispatched twice (upstream requests %d and %d)", id, j, i))
			}
			seen[id] = i
		}
	}
	if f := failedRequests(logs); strings.Contains(f, "upstream_query_too_long") {
		out = append(out, "the gateway refused a turn as too long:\n"+f)
	}
	return out
}

// dispatchedCallIDs are the tool call ids a TOOL_RESPONSE body answers, in
// any of its forms: the flat toolCallId, the array toolResponses[], and the
// web_session packed toolResponse string.
func dispatchedCallIDs(body []byte) []string {
	var b struct {
		Input struct {
			ToolCallID    string `json:"toolCallId"`
			ToolResponse  string `json:"toolResponse"`
			ToolResponses []struct {
				ToolCallID string `json:"toolCallId"`
			} `json:"toolResponses"`
		} `json:"input"`
	}
	if json.Unmarshal(body, &b) != nil {
		return nil
	}
	ids := map[string]bool{}
	if b.Input.ToolCallID != "" {
		ids[b.Input.ToolCallID] = true
	}
	for _, r := range b.Input.ToolResponses {
		ids[r.ToolCallID] = true
	}
	var packed []struct {
		ToolCallID string `json:"toolCallId"`
	}
	if json.Unmarshal([]byte(b.Input.ToolResponse), &packed) == nil {
		for _, r := range packed {
			ids[r.ToolCallID] = true
		}
	}
	out := make([]string, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	return out
}

// recentUsage is the largest usage the emulator reported per request
// (prompt tokens: a token per four bytes of body) among the last n
// requests.
func recentUsage(rs []emulator.Request, n int) int {
	most := 0
	for _, r := range rs[max(0, len(rs)-n):] {
		most = max(most, (len(r.Body)+3)/4)
	}
	return most
}

// answered finds the first request answered with status (0: any status of
// 400 or more): its index (-1 for none) and how many later requests carry
// the same input (re-sends).
func answered(rs []tapped, status int) (at, resent int) {
	at = -1
	for i, r := range rs {
		if r.Status == status || status == 0 && r.Status >= 400 {
			at = i
			break
		}
	}
	if at < 0 {
		return -1, 0
	}
	for _, r := range rs[at+1:] {
		if bytes.Equal(inputOf(r.Body), inputOf(rs[at].Body)) {
			resent++
		}
	}
	return at, resent
}

// inputOf is a Responses request's input items as sent: a re-sent request
// has the same items (its client_metadata map may be in another order).
func inputOf(body []byte) []byte {
	var b struct {
		Input json.RawMessage `json:"input"`
	}
	if json.Unmarshal(body, &b) != nil || len(b.Input) == 0 {
		return body
	}
	return b.Input
}

// codexTurnMetadata is what Codex says about a request in its body's
// client_metadata: the kind of request and, for a compaction, its phase.
type codexTurnMetadata struct {
	RequestKind string `json:"request_kind"`
	Compaction  struct {
		Phase string `json:"phase"` // pre_turn or mid_turn
	} `json:"compaction"`
}

func (r tapped) metadata() codexTurnMetadata {
	var b struct {
		ClientMetadata map[string]string `json:"client_metadata"`
	}
	var m codexTurnMetadata
	if json.Unmarshal(r.Body, &b) == nil {
		_ = json.Unmarshal([]byte(b.ClientMetadata["x-codex-turn-metadata"]), &m)
	}
	return m
}

// compaction reports whether a request is Codex's checkpoint compaction:
// its turn metadata says request_kind "compaction".
func (r tapped) compaction() bool { return r.metadata().RequestKind == "compaction" }

// compactionPhase is a compaction's phase: pre_turn or mid_turn.
func (r tapped) compactionPhase() string { return r.metadata().Compaction.Phase }

// describeTapped lists the agent's requests as status (compaction marked),
// with the disclosure header when there was one.
func describeTapped(rs []tapped) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		p := fmt.Sprint(r.Status)
		if r.compaction() {
			p = "compaction(" + r.compactionPhase() + "):" + p
		}
		if r.Conversation != "" {
			p += "(" + r.Conversation + ")"
		}
		parts = append(parts, p)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// disclosures lists the conversation groups of access lines that carry a
// disclosure (continued conversations), as decision/row/disclosure.
func disclosures(logs string) string {
	var parts []string
	for _, line := range strings.Split(logs, "\n") {
		var e struct {
			Msg          string `json:"msg"`
			Conversation *struct {
				Decision   string `json:"decision"`
				Row        string `json:"row"`
				Disclosure string `json:"disclosure"`
			} `json:"conversation"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Msg == "request" && e.Conversation != nil && e.Conversation.Disclosure != "" {
			parts = append(parts, e.Conversation.Decision+"/"+e.Conversation.Row+"/"+e.Conversation.Disclosure)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func outcome(completed, failed bool) string {
	switch {
	case completed && !failed:
		return "finished"
	case failed:
		return "error reported"
	}
	return "no end event"
}
