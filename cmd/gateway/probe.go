package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

const probeHelp = `usage: gateway probe --live [--env-file FILE] [--out FILE] [--measure-limits]
                         [--measure-query-unit] [--measure-parallel] [--measure-pending]
       gateway probe --emulator [--strategy S] [--profile P] [--out FILE] [--measure-limits]
                            [--measure-query-unit] [--measure-parallel] [--measure-pending]
                            [--accept-query-chars N] [--accept-tools N] [--accept-query-unit U]
                            [--accept-pending P]

Starts the gateway in-process on a loopback port with exactly the serve
configuration and drives it over HTTP like a client: a streamed text turn, then
a two-tool loop (tool_choice required, then auto; at most 3 turns, 3 gateway
requests and 4 upstream dispatches, the 5th refused before it is sent) whose
final answer must be exactly ALPHA=<marker>;BETA=<marker>. Nothing is retried
and nothing fails over. Writes a pmgate-probe/v1 evidence report (docs/PROBE.md)
and prints a one-screen verdict; exits 0 only on pass. A live probe costs a few
upstream queries (2-4, plus at most 12 with --measure-limits, 1 with
--measure-query-unit, 2 with --measure-parallel, 4 with --measure-pending); each
phase prints its cost before it runs. Every answer's usage event (position, field
names) and rate-limit headers are recorded at no extra cost.

flags:
  --live              talk to the configured upstream (required for a real account)
  --emulator          run the same probe against the built-in emulator, offline
  --strategy S        with --emulator: web_session, access_token or both (default both)
  --profile P         with --emulator: the emulator profile (default strict; observed answers like
                      the public projects' fixtures, done_event ends streams with a done event)
  --env-file FILE     KEY=VALUE lines read first; the real environment wins
  --out FILE          where the report is written (default pmgate-probe.json), with its MAC
                      in FILE.mac (--live only: serve's PROBE_REPORT needs it); a failing
                      probe never replaces a passing report there: it writes FILE's
                      .failed sibling. With --emulator and both strategies, FILE gets
                      .web_session/.access_token before its extension (one report each)
  --measure-limits    also measure the service's two budgets on fresh conversations, each
                      searched both ways from its setting up to 4 times it: the longest
                      query (at most 7 queries from POSTMAN_MAX_QUERY_CHARS) and the most
                      tools (at most 4 queries from POSTMAN_MAX_TOOLS_UPSTREAM); then one
                      continuation. A verified report's measured limits are what serve
                      enforces where those settings are not set
  --measure-query-unit
                      with --measure-limits: one more query of astral characters (one code
                      point, two UTF-16 units each) as long, in code points, as the longest
                      accepted query, and longer, in UTF-16 units, than the shortest refused
                      one: its answer says whether the service counts code points or UTF-16
  --measure-parallel  one parallel tool group (2 queries): a turn asking for both probe
                      tools at once, then both results in one toolResponses[] with the
                      group id. On web_session a verified report that saw it accepted lets
                      serve follow the client's parallel_tool_calls where
                      POSTMAN_PARALLEL_TOOL_CALLS is not set
  --measure-pending   what a user query in a conversation does to a tool call still pending
                      there (at most 4 queries): a first query just under
                      POSTMAN_MAX_QUERY_CHARS asks for the probe tools one after the other;
                      the first result is answered with the second call; the history before
                      that call plus a new user message (too long to start fresh) goes up in
                      the conversation; then the second call's result. kept: the service
                      answered it; dropped: it answered TOOL_CALL_NOT_FOUND; unknown: a step
                      did not go as planned (the report names it). Not with --measure-limits
                      or --measure-query-unit (they raise the gateway's query limit)
  --accept-query-chars N, --accept-tools N
                      with --emulator: the longest query and the most tools the emulated
                      service accepts (default: as the gateway's settings), to try
                      --measure-limits offline
  --accept-query-unit U
                      with --emulator: utf16 (default) or code_points, the unit the emulated
                      service counts the query in
  --accept-pending P  with --emulator: drop (default) or keep, what the emulated service does
                      with a pending tool call after a newer user query in its conversation

variables read: every variable of gateway serve (see gateway serve --help), and
POSTMAN_MAX_QUERY_CHARS (default 10000) and POSTMAN_MAX_TOOLS_UPSTREAM (default 20)
as the starts of --measure-limits.
`

// probeInstruction is the tool loop's user message. The emulator follows its
// "reply with exactly this line and nothing else:" template.
const probeInstruction = "This is an automated connectivity check of a tool-calling gateway. " +
	"Call the tools probe_alpha and probe_beta (both of them; in parallel if you can). Each returns a short code. " +
	"When you have both results, reply with exactly this line and nothing else: ALPHA=<result of probe_alpha>;BETA=<result of probe_beta>"

const probeTextInstruction = "This is an automated connectivity check. Reply with one short sentence."

// probeToolSchema is the parameter schema of both probe tools: no arguments.
const probeToolSchema = `{"type":"object","properties":{},"additionalProperties":false}`

func runProbe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, upstream []postman.Option) error {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	live := fs.Bool("live", false, "")
	emu := fs.Bool("emulator", false, "")
	strategy := fs.String("strategy", "both", "")
	profile := fs.String("profile", emulator.ProfileStrict, "")
	envPath := fs.String("env-file", "", "")
	out := fs.String("out", "pmgate-probe.json", "")
	measure := fs.Bool("measure-limits", false, "")
	acceptQuery := fs.Int("accept-query-chars", 0, "")
	acceptTools := fs.Int("accept-tools", 0, "")
	measureUnit := fs.Bool("measure-query-unit", false, "")
	measureParallel := fs.Bool("measure-parallel", false, "")
	acceptUnit := fs.String("accept-query-unit", "utf16", "")
	measurePending := fs.Bool("measure-pending", false, "")
	acceptPending := fs.String("accept-pending", emulator.PendingDropped, "")
	if done, err := parseFlags(fs, args, probeHelp, stdout); done || err != nil {
		return err
	}
	switch {
	case *live && *emu:
		return fmt.Errorf("%w: --live and --emulator exclude each other", errUsage)
	case !*live && !*emu:
		return fmt.Errorf("%w: probe sends real upstream queries and refuses to run without --live (or use --emulator, offline)", errUsage)
	case *emu && *envPath != "":
		return fmt.Errorf("%w: --env-file is for --live; --emulator builds its own configuration", errUsage)
	case *live && *profile != emulator.ProfileStrict:
		return fmt.Errorf("%w: --profile is for --emulator", errUsage)
	case *live && (*acceptQuery != 0 || *acceptTools != 0 || *acceptUnit != "utf16" || *acceptPending != emulator.PendingDropped):
		return fmt.Errorf("%w: --accept-query-chars, --accept-tools, --accept-query-unit and --accept-pending are for --emulator", errUsage)
	case *acceptUnit != "utf16" && *acceptUnit != "code_points":
		return fmt.Errorf("%w: --accept-query-unit must be utf16 or code_points", errUsage)
	case *acceptPending != emulator.PendingDropped && *acceptPending != emulator.PendingKept:
		return fmt.Errorf("%w: --accept-pending must be drop or keep", errUsage)
	case *measurePending && (*measure || *measureUnit):
		return fmt.Errorf("%w: --measure-pending runs in a probe of its own, without --measure-limits and --measure-query-unit "+
			"(they raise the gateway's query limit, and this phase needs the gateway to refuse a fresh transcript just over it)", errUsage)
	case *measureUnit && !*measure:
		return fmt.Errorf("%w: --measure-query-unit needs --measure-limits (it uses the lengths that phase proved accepted and refused)", errUsage)
	case *acceptQuery < 0 || *acceptQuery > pmconfig.MaxQueryCharsBound || *acceptTools < 0 || *acceptTools > pmconfig.MaxToolsUpstreamBound:
		return fmt.Errorf("%w: --accept-query-chars must be 1-%d and --accept-tools 1-%d", errUsage, pmconfig.MaxQueryCharsBound, pmconfig.MaxToolsUpstreamBound)
	}
	if *live {
		if *strategy != "both" {
			return fmt.Errorf("%w: --strategy is for --emulator; --live uses POSTMAN_TRANSPORT_STRATEGY", errUsage)
		}
		cfg, err := configFromArgs("probe", envArgs(*envPath), getenv)
		if err != nil {
			return err
		}
		return probeAndReport(ctx, cfg, "live", *out, measures{limits: *measure, unit: *measureUnit, parallel: *measureParallel, pending: *measurePending},
			getenv, stdout, stderr, upstream)
	}
	var strategies []string
	switch *strategy {
	case "both":
		strategies = []string{"web_session", "access_token"}
	case "web_session", "access_token":
		strategies = []string{*strategy}
	default:
		return fmt.Errorf("%w: --strategy must be web_session, access_token or both", errUsage)
	}
	var failed []string
	for _, s := range strategies {
		path := *out
		if len(strategies) > 1 {
			ext := filepath.Ext(path)
			path = strings.TrimSuffix(path, ext) + "." + s + ext
		}
		eu, err := startEmulatorUpstream(ctx, s, "0", *profile, getenv, emulatorLimits{queryChars: *acceptQuery, tools: *acceptTools,
			queryCodePoints: *acceptUnit == "code_points", pendingKept: *acceptPending == emulator.PendingKept})
		if err != nil {
			return err
		}
		cfg, err := loadConfig(func(k string) string { return eu.env[k] })
		if err == nil {
			err = probeAndReport(ctx, cfg, "emulator", path, measures{limits: *measure, unit: *measureUnit, parallel: *measureParallel, pending: *measurePending},
				getenv, stdout, stderr, eu.opts)
		}
		eu.emu.Close()
		if errors.Is(err, errVerify) {
			failed = append(failed, s)
			continue
		}
		if err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %s", errVerify, strings.Join(failed, ", "))
	}
	return nil
}

func envArgs(path string) []string {
	if path == "" {
		return nil
	}
	return []string{"--env-file", path}
}

// measures are the opt-in phases of a probe.
type measures struct{ limits, unit, parallel, pending bool }

// probeAndReport runs the probe, writes the report and prints the verdict.
func probeAndReport(ctx context.Context, cfg config, mode, out string, m measures, getenv func(string) string,
	stdout, stderr io.Writer, opts []postman.Option) error {
	log := newLogger(cfg, stderr)
	res, err := runProbePhases(ctx, cfg, probeRun{mode: mode, measure: m.limits, measureUnit: m.unit, measureParallel: m.parallel,
		measurePending: m.pending, maxQuery: cfg.upstream.MaxQueryChars, maxTools: cfg.upstream.MaxToolsUpstream, log: log, opts: opts})
	if err != nil {
		return err
	}
	// A failing probe never replaces a passing report: the daily re-probe
	// writes over the served PROBE_REPORT, and a failure must leave the last
	// proof (and its MAC) in force.
	path := out
	kept := res.report.Verdict != "pass" && passingReportAt(out)
	if kept {
		path = failedPath(out)
	}
	mac := ""
	if mode == "live" {
		// Only a live report can verify a serving gateway (mode: live); a MAC
		// under the emulator's throwaway credentials would authenticate nothing.
		mac = reportMAC(cfg.upstream, res.raw)
	}
	if err := writeReport(path, res.raw, mac); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	printVerdict(stdout, res.report, path, reportDigest(res.raw))
	if kept {
		fmt.Fprintf(stdout, "kept    %s and its .mac: the last passing report, left in place\n", out)
	}
	if res.report.Verdict != "pass" {
		return fmt.Errorf("%w: %s", errVerify, strings.Join(verdict{res.report.Failures}.branches(), ", "))
	}
	return nil
}

// probeRun is one probe's settings.
type probeRun struct {
	mode    string
	measure bool
	// measureUnit, measureParallel and measurePending run the query-unit,
	// parallel-group and pending-call phases.
	measureUnit, measureParallel, measurePending bool
	maxQuery                                     int
	maxTools                                     int // the start of the tool-count search
	log                                          *slog.Logger
	opts                                         []postman.Option
	// onUpstream, when set, receives the probe's upstream wrapper (tests hook
	// the adapter's stream summaries through it).
	onUpstream func(*probeUpstream)
}

// probeResult is the report (and its bytes) plus the markers it must never
// contain, for the tests.
type probeResult struct {
	report  probeReport
	raw     []byte
	markers []string
}

// runProbePhases starts the gateway in-process on loopback, runs every phase
// once and shuts it down. Only the listen address differs from serve.
func runProbePhases(ctx context.Context, cfg config, pr probeRun) (probeResult, error) {
	cfg.host, cfg.port = "127.0.0.1", 0
	if pr.measure {
		// The search must reach the upstream up to its ceilings; the
		// gateway's own limits would refuse those queries before sending.
		cfg.upstream.MaxQueryChars = max(cfg.upstream.MaxQueryChars, pr.maxQuery*limitCeilingFactor)
		cfg.upstream.MaxToolsUpstream = max(cfg.upstream.MaxToolsUpstream, min(max(pr.maxTools, 1)*limitCeilingFactor, limitToolsCap))
		cfg.upstream.MaxTools = max(cfg.upstream.MaxTools, cfg.upstream.MaxToolsUpstream)
		cfg.request.limits.MaxTools = max(cfg.request.limits.MaxTools, cfg.upstream.MaxToolsUpstream)
	}
	if pr.measureUnit {
		// The astral query is twice as long in UTF-16 units as in code
		// points; the gateway counts UTF-16, the upstream is what is asked.
		cfg.upstream.MaxQueryChars = min(max(cfg.upstream.MaxQueryChars, 2*pr.maxQuery*limitCeilingFactor), pmconfig.MaxQueryCharsBound)
	}
	if pr.measureParallel {
		// The group is measured whatever the setting says: the probe's
		// gateway follows the client's parallel_tool_calls, as serve does
		// after a proven result; the tool phase asks for serial calls on
		// web_session, as serve's default sends them.
		cfg.upstream.ParallelToolCalls, cfg.upstream.ParallelMeasured = pmconfig.ParallelUnset, true
	}
	// The in-process gateway is reached only by the probe: it gets a key of its
	// own, so that a PROVIDER_KEYS_FILE configuration (whose keys are stored
	// hashed) can be probed too.
	ownerKey := cfg.apiKey
	cfg.apiKey, cfg.keysFile = "sk-pmgate-probe-"+randomHex(16), ""
	pu := &probeUpstream{cfg: cfg.upstream}
	if pr.onUpstream != nil {
		pr.onUpstream(pu)
	}
	opts := append(append([]postman.Option(nil), pr.opts...), probeEvidence()...)
	gctx, stopGateway := context.WithCancel(ctx)
	defer stopGateway()
	gw, err := startGatewayWith(gctx, cfg, pr.log, func(u ports.Upstream) ports.Upstream { pu.next = u; return pu }, opts...)
	if err != nil {
		return probeResult{}, err
	}
	subscribeProbe(pu, gw.events)
	waited := make(chan error, 1)
	go func() { waited <- gw.wait(gctx) }()

	m := cfg.upstream.Models[0]
	rep := probeReport{
		Schema: reportSchema, Version: version, Commit: buildCommit(), Mode: pr.mode,
		Strategy: string(cfg.upstream.Strategy), ConfigFingerprint: fingerprint(cfg.upstream), TerminalRule: terminalRuleOf(cfg),
		Model:    reportModel{Public: m.Public, UpstreamEnum: m.Upstream},
		Policy:   defaultPolicy(int(cfg.upstream.RequestTimeout.Milliseconds()), pr.maxQuery),
		Failures: []string{},
	}
	cl := &probeClient{base: "http://" + gw.addr() + "/v1", key: cfg.apiKey, model: m.Public,
		hc: &http.Client{Timeout: cfg.upstream.RequestTimeout + 15*time.Second}}
	alpha, beta := probeMarker(), probeMarker()
	markers := []string{alpha, beta}

	say := func(phase string, n int) { // before the phase runs, so its cost is known first
		pr.log.Info("probe phase", "phase", phase, "max_upstream_queries", n)
	}
	serialWeb := pr.measureParallel && cfg.upstream.Strategy == pmconfig.StrategyWebSession
	say("text", rep.Policy.TextMaxDispatches)
	rep.Text = runTextPhase(ctx, cl, pu, rep.Policy)
	say("tools", rep.Policy.ToolMaxDispatches)
	rep.Tools = runToolPhase(ctx, cl, pu, rep.Policy, alpha, beta, !serialWeb)
	rep.Text.Cause, rep.Tools.Cause = phaseCause(rep.Text), phaseCause(rep.Tools)
	if pr.measure {
		say("limits", rep.Policy.LimitMaxQueries+rep.Policy.LimitMaxContinuations)
		rep.Limits = runLimitsPhase(ctx, cl, pu, rep.Policy, pr.maxTools)
	}
	if pr.measureUnit && rep.Limits != nil {
		say("query unit", rep.Policy.UnitMaxQueries)
		rep.QueryUnit = runQueryUnitPhase(ctx, cl, pu, rep.Policy, rep.Limits)
	}
	if pr.measureParallel {
		say("parallel", rep.Policy.ParallelMaxDispatches)
		gamma, delta := probeMarker(), probeMarker()
		markers = append(markers, gamma, delta) // kept out of the report too
		rep.Parallel = runParallelPhase(ctx, cl, pu, rep.Policy, gamma, delta)
	}
	if pr.measurePending {
		say("pending", rep.Policy.PendingMaxDispatches)
		first, second := probeMarker(), probeMarker()
		markers = append(markers, first, second) // kept out of the report too
		rep.Pending = runPendingPhase(ctx, cl, pu, rep.Policy, first, second)
	}

	start := time.Now()
	stopGateway()
	werr := <-waited
	rep.Shutdown.DurationMS = time.Since(start).Milliseconds()
	rep.Shutdown.Clean = werr == nil && !listening(gw.addr())

	for _, d := range dispatches(rep) {
		rep.Model.ModelObserved = rep.Model.ModelObserved || d.ModelObserved
	}
	rep.Model.ModelMatch = rep.Model.ModelObserved
	for _, d := range dispatches(rep) {
		if d.ModelObserved && !d.ModelMatch {
			rep.Model.ModelMatch = false
		}
	}

	rep.WrittenAt = time.Now().UTC().Format(time.RFC3339)
	rep.Verdict = "fail" // until the verifier says otherwise
	secrets := append(append(cfg.upstream.Secrets(), cfg.apiKey, ownerKey, cfg.upstream.WorkspaceID), markers...)
	raw, err := marshalReport(rep)
	if err != nil {
		return probeResult{}, err
	}
	_, v := verifyReport(raw, verifyOptions{now: time.Now(), maxAge: time.Hour, version: version, commit: buildCommit(),
		fingerprint: rep.ConfigFingerprint, strategy: rep.Strategy, terminalRule: rep.TerminalRule, secrets: secrets, writing: true})
	rep.Verdict = "pass"
	if !v.ok() {
		rep.Verdict, rep.Failures = "fail", v.failures
	}
	if raw, err = marshalReport(rep); err != nil {
		return probeResult{}, err
	}
	return probeResult{report: rep, raw: raw, markers: markers}, nil
}

// listening reports whether something still accepts connections at addr.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// probeMarker is a fresh random tool result: "MK-" and 16 upper-case hex digits.
func probeMarker() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "MK-" + strings.ToUpper(hex.EncodeToString(b))
}

func runTextPhase(ctx context.Context, cl *probeClient, pu *probeUpstream, pol reportPolicy) reportPhase {
	ph := reportPhase{Ran: true, Requests: []reportRequest{}}
	start := time.Now()
	pu.begin(pol.TextMaxDispatches)
	body := map[string]any{"model": cl.model, "stream": true, "messages": []any{userMessage(probeTextInstruction)}}
	q, _ := cl.send(ctx, body, "text", "")
	q.QueryChars = len(probeTextInstruction)
	q.Upstream = pu.take()
	ph.Requests = append(ph.Requests, q)
	ph.Turns, ph.GatewayRequests = 1, 1
	ph.UpstreamDispatches, ph.RefusedDispatches = pu.counts()
	ph.DurationMS = time.Since(start).Milliseconds()
	return ph
}

func userMessage(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

func runToolPhase(ctx context.Context, cl *probeClient, pu *probeUpstream, pol reportPolicy, alpha, beta string, parallel bool) reportPhase {
	ph := reportPhase{Ran: true, Requests: []reportRequest{}}
	start := time.Now()
	pu.begin(pol.ToolMaxDispatches)
	results := map[string]string{"probe_alpha": alpha, "probe_beta": beta}
	want := "ALPHA=" + alpha + ";BETA=" + beta
	tools := []any{}
	for _, name := range probeTools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
			"name": name, "description": "Returns a short code for the connectivity check.", "parameters": json.RawMessage(probeToolSchema)}})
	}
	messages := []any{userMessage(probeInstruction)}
	answered := map[string]bool{}
	for turn := 1; turn <= pol.ToolMaxTurns && turn <= pol.ToolMaxRequests; turn++ {
		// The first turn requires a tool; the continuations let the model
		// decide (tool_choice steers one request and is not part of a group's
		// binding, so the switch is a valid continuation).
		choice, kind := "required", "tool_initial"
		if turn > 1 {
			choice, kind = "auto", "tool_continuation"
		}
		body := map[string]any{"model": cl.model, "messages": messages, "tools": tools, "tool_choice": choice,
			"parallel_tool_calls": parallel}
		q, msg := cl.send(ctx, body, kind, choice)
		q.ToolsOffered = len(probeTools)
		q.Upstream = pu.take()
		ph.Turns++
		ph.GatewayRequests++
		if q.HTTPStatus == http.StatusOK && q.FinishReason == "stop" {
			q.ExactMarkerLine = strings.TrimSpace(msg.content) == want
		}
		if q.HTTPStatus != http.StatusOK || q.FinishReason != "tool_calls" || len(msg.calls) == 0 {
			ph.Requests = append(ph.Requests, q)
			break
		}
		// Answer every call; a later turn that asks only for tools not yet
		// answered is "asking for the missing tool".
		if turn > 1 {
			q.AskedMissingTool = true
			for _, c := range msg.calls {
				q.AskedMissingTool = q.AskedMissingTool && !answered[c.Function.Name] && results[c.Function.Name] != ""
			}
		}
		ph.Requests = append(ph.Requests, q)
		messages = append(messages, msg.assistant)
		for _, c := range msg.calls {
			content := results[c.Function.Name]
			if content == "" {
				content = "unknown tool"
			}
			answered[c.Function.Name] = true
			messages = append(messages, map[string]any{"role": "tool", "tool_call_id": c.ID, "content": content})
		}
	}
	ph.UpstreamDispatches, ph.RefusedDispatches = pu.counts()
	ph.DurationMS = time.Since(start).Milliseconds()
	return ph
}

// Budgets of the limits phase: the query-length search sends at most
// limitLengthQueries fresh conversations, the tool-count search at most
// limitToolQueries, each within limitCeilingFactor times its start (the
// configured limit); then one continuation.
const (
	limitLengthQueries = 7
	limitToolQueries   = 4
	limitCeilingFactor = 4
	limitToolsCap      = pmconfig.MaxToolsUpstreamBound
)

// limitOutcome is what one search query proved.
type limitOutcome int

const (
	limitAccepted     limitOutcome = iota // a proven answer
	limitRefused                          // the upstream refused it
	limitInconclusive                     // anything else: the search stops there
)

// outcomeOf judges one search query: accepted with a proven completion,
// refused by the upstream itself (it was sent and answered with a refusal),
// or inconclusive (a transport failure, a refusal of the gateway's own, the
// budget).
func outcomeOf(q reportRequest) limitOutcome {
	switch {
	case q.HTTPStatus == http.StatusOK && upstreamComplete(q):
		return limitAccepted
	case upstreamRefused(q):
		return limitRefused
	}
	return limitInconclusive
}

// upstreamRefused: the request was sent and the upstream refused it before
// answering (a 4xx, or a refusal event in its stream), not a transport or
// capacity failure.
func upstreamRefused(q reportRequest) bool {
	if q.HTTPStatus == http.StatusOK || q.HTTPStatus == 0 || len(q.Upstream) == 0 {
		return false
	}
	d := q.Upstream[len(q.Upstream)-1]
	if d.NotSent || d.RefusedByBudget {
		return false
	}
	switch errs.Code(d.ErrorCode) {
	case errs.UpstreamRateLimited, errs.UpstreamUnavailable, errs.UpstreamTimeout, errs.ClientCancelled:
		return false
	}
	return q.HTTPStatus >= 400
}

// search finds the largest accepted value from start within [1, ceiling] in at
// most n tries: upwards by doubling while accepted, downwards (first just
// below the start, then halving) while refused, then bisecting between the
// largest accepted and the smallest refused until they are within precision.
// An inconclusive try ends the search. try sends one query of that size.
func search(start, ceiling, n, precision int, try func(size int) limitOutcome) (lo, hi int) {
	size := start
	for i := 0; i < n && size > 0 && size <= ceiling; i++ {
		switch try(size) {
		case limitAccepted:
			lo = size
		case limitRefused:
			hi = size
		default:
			return lo, hi
		}
		switch {
		case hi == 0 && lo >= ceiling:
			return lo, hi // accepted at the ceiling: the budget's end
		case hi == 0:
			size = min(2*lo, ceiling)
		case lo == 0 && hi == start:
			size = hi - max(hi/10, 1) // first refusal: just below it
		case lo == 0:
			size = hi / 2
		case hi-lo <= precision:
			return lo, hi
		default:
			size = (lo + hi) / 2
		}
	}
	return lo, hi
}

// runLimitsPhase measures the two budgets of the service on fresh
// conversations: the longest query it accepts (from POSTMAN_MAX_QUERY_CHARS,
// searching both ways up to limitCeilingFactor times it) and the most tools
// it accepts in one request (from POSTMAN_MAX_TOOLS_UPSTREAM, likewise); then
// one continuation of the longest accepted conversation. The probe's own
// gateway runs with both limits raised to their ceilings, so that every query
// of the search reaches the upstream. The measured values are the largest
// accepted ones: a verified report carries them to serve.
func runLimitsPhase(ctx context.Context, cl *probeClient, pu *probeUpstream, pol reportPolicy, toolsStart int) *reportLimits {
	start := pol.MaxQueryCharsAtStartup
	lim := &reportLimits{Phase: reportPhase{Ran: true, Requests: []reportRequest{}}, StartChars: start,
		CeilingChars: start * limitCeilingFactor, ToolsStart: toolsStart,
		ToolsCeiling: min(max(toolsStart, 1)*limitCeilingFactor, limitToolsCap), Continuation: "not_tried"}
	began := time.Now()
	pu.begin(pol.LimitMaxQueries + pol.LimitMaxContinuations)
	record := func(q reportRequest) {
		q.Upstream = pu.take()
		lim.Phase.Requests = append(lim.Phase.Requests, q)
		lim.Phase.Turns++
		lim.Phase.GatewayRequests++
	}
	var longest []any
	lim.LongestAcceptedChars, lim.ShortestRejectedChars = search(start, lim.CeilingChars, limitLengthQueries, 100, func(size int) limitOutcome {
		filler := strings.Repeat("pmgate filler text. ", size/20+1)[:size]
		msgs := []any{userMessage(filler)}
		q, msg := cl.send(ctx, map[string]any{"model": cl.model, "messages": msgs}, "limit_fresh", "")
		q.QueryChars = size
		record(q)
		o := outcomeOf(lim.Phase.Requests[len(lim.Phase.Requests)-1])
		if o == limitAccepted && size > start {
			lim.UpperBoundTested = true
		}
		if o == limitAccepted && size >= lim.LongestAcceptedChars {
			longest = append(msgs, msg.assistant)
		}
		return o
	})
	lim.UpperBoundTested = lim.UpperBoundTested || lim.ShortestRejectedChars > start
	lim.MeasuredChars = lim.LongestAcceptedChars
	if toolsStart > 0 {
		lim.LongestAcceptedTools, lim.ShortestRejectedTools = search(toolsStart, lim.ToolsCeiling, limitToolQueries, 0, func(n int) limitOutcome {
			q, _ := cl.send(ctx, map[string]any{"model": cl.model, "messages": []any{userMessage("Reply with OK.")},
				"tools": limitTools(n), "tool_choice": "none"}, "limit_tools", "none")
			q.ToolsOffered = n
			record(q)
			return outcomeOf(lim.Phase.Requests[len(lim.Phase.Requests)-1])
		})
		lim.MeasuredTools = lim.LongestAcceptedTools
	}
	if longest != nil {
		msgs := append(longest, userMessage("Reply with OK."))
		q, _ := cl.send(ctx, map[string]any{"model": cl.model, "messages": msgs}, "limit_continuation", "")
		record(q)
		q = lim.Phase.Requests[len(lim.Phase.Requests)-1]
		switch {
		case q.HTTPStatus == http.StatusOK:
			lim.Continuation = "accepted"
		case allNotSent(q.Upstream):
			lim.Continuation = "refused_by_gateway" // e.g. upstream_query_too_long: nothing was sent
		default:
			lim.Continuation = "rejected"
		}
	}
	lim.Phase.UpstreamDispatches, lim.Phase.RefusedDispatches = pu.counts()
	lim.Phase.DurationMS = time.Since(began).Milliseconds()
	return lim
}

// limitTools is n distinct probe tools without parameters.
func limitTools(n int) []any {
	tools := make([]any, n)
	for i := range tools {
		tools[i] = map[string]any{"type": "function", "function": map[string]any{"name": fmt.Sprintf("probe_limit_%d", i+1),
			"description": "An unused tool of the probe's tool-count measurement.", "parameters": json.RawMessage(probeToolSchema)}}
	}
	return tools
}

// The budgets of the opt-in measurement phases: one query of the query-unit
// phase, two requests (a parallel group and its answer) of the parallel one.
const (
	unitQueries      = 1
	parallelRequests = 2
)

// astral is the query-unit phase's character: one code point outside the
// Basic Multilingual Plane, two UTF-16 code units (U+1D400, MATHEMATICAL BOLD
// CAPITAL A).
const astral = "\U0001D400"

// unitCodePoints is the length, in code points, of the query-unit phase's
// query: the longest length the limits phase saw accepted, provided that,
// counted in UTF-16 units (twice as many), it reaches the shortest length
// that phase saw refused. 0 when the bounds cannot tell the units apart.
func unitCodePoints(accepted, refused int) int {
	if accepted <= 0 || refused <= 0 || 2*accepted < refused {
		return 0
	}
	return accepted
}

// unitResult is what the query-unit phase's one query proved: accepted, the
// service counts code points (in UTF-16 units the query is refused length);
// refused by the upstream, it counts UTF-16 units (or more); anything else
// decides nothing.
func unitResult(q reportRequest) string {
	switch outcomeOf(q) {
	case limitAccepted:
		return "code_points"
	case limitRefused:
		return "utf16_units"
	}
	return "undecided"
}

// runQueryUnitPhase sends, after the limits phase, one fresh query of astral
// characters whose code-point count that phase proved accepted and whose
// UTF-16 length it proved refused (the note's open question: ps2Api's CJK
// test could not tell the units apart).
func runQueryUnitPhase(ctx context.Context, cl *probeClient, pu *probeUpstream, pol reportPolicy, lim *reportLimits) *reportUnit {
	u := &reportUnit{Phase: reportPhase{Requests: []reportRequest{}}, AcceptedChars: lim.LongestAcceptedChars,
		RefusedChars: lim.ShortestRejectedChars, Result: "undecided"}
	n := unitCodePoints(u.AcceptedChars, u.RefusedChars)
	if n == 0 {
		return u // nothing to send: the limits phase proved no bracket
	}
	began := time.Now()
	pu.begin(pol.UnitMaxQueries)
	u.Phase.Ran, u.CodePoints, u.UTF16Units = true, n, 2*n
	q, _ := cl.send(ctx, map[string]any{"model": cl.model, "messages": []any{userMessage(strings.Repeat(astral, n))}}, "unit_astral", "")
	q.QueryChars = n
	q.Upstream = pu.take()
	u.Phase.Requests = append(u.Phase.Requests, q)
	u.Phase.Turns, u.Phase.GatewayRequests = 1, 1
	u.Result = unitResult(q)
	u.Phase.UpstreamDispatches, u.Phase.RefusedDispatches = pu.counts()
	u.Phase.DurationMS = time.Since(began).Milliseconds()
	return u
}

// parallelResult is what the parallel phase's requests proved: accepted when
// the first turn was one proven tool_calls answer with both calls and the
// second sent both results in one toolResponses[] with the group id (one
// TOOL_RESPONSE, group id present, two results) and was answered with a
// proven end; rejected when the upstream refused that continuation;
// no_group when the model made fewer than two calls (nothing to measure);
// inconclusive otherwise.
func parallelResult(reqs []reportRequest) string {
	if len(reqs) == 0 {
		return "inconclusive"
	}
	first := reqs[0]
	if first.HTTPStatus != http.StatusOK || first.FinishReason != "tool_calls" || !upstreamComplete(first) || len(first.Upstream) != 1 {
		return "inconclusive"
	}
	if len(first.Calls) < 2 {
		return "no_group"
	}
	if len(reqs) < 2 || len(reqs[1].Upstream) != 1 {
		return "inconclusive"
	}
	second := reqs[1]
	if d := second.Upstream[0]; d.ChatType != "TOOL_RESPONSE" || !d.GroupIDPresent || d.ResultCount != len(first.Calls) || d.NotSent {
		return "inconclusive"
	}
	switch {
	case second.HTTPStatus == http.StatusOK && upstreamComplete(second):
		return "accepted"
	case upstreamRefused(second):
		return "rejected"
	}
	return "inconclusive"
}

// runParallelPhase asks for both probe tools at once (tool_choice required,
// parallel_tool_calls true) and answers the group with both results in one
// request: the gateway sends them as toolResponses[] with the group id
// (ps2Api's traces show that accepted on web _gw/chat; TT reported it
// Forbidden). Two requests, two dispatches at most.
func runParallelPhase(ctx context.Context, cl *probeClient, pu *probeUpstream, pol reportPolicy, gamma, delta string) *reportGroup {
	g := &reportGroup{Phase: reportPhase{Ran: true, Requests: []reportRequest{}}}
	began := time.Now()
	pu.begin(pol.ParallelMaxDispatches)
	results := map[string]string{"probe_alpha": gamma, "probe_beta": delta}
	tools := []any{}
	for _, name := range probeTools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
			"name": name, "description": "Returns a short code for the connectivity check.", "parameters": json.RawMessage(probeToolSchema)}})
	}
	messages := []any{userMessage(probeInstruction)}
	for i, kind := range []string{"parallel_initial", "parallel_continuation"} {
		choice := "required"
		if i > 0 {
			choice = "auto"
		}
		q, msg := cl.send(ctx, map[string]any{"model": cl.model, "messages": messages, "tools": tools, "tool_choice": choice,
			"parallel_tool_calls": true}, kind, choice)
		q.ToolsOffered = len(probeTools)
		q.Upstream = pu.take()
		g.Phase.Requests = append(g.Phase.Requests, q)
		g.Phase.Turns++
		g.Phase.GatewayRequests++
		if i > 0 || q.HTTPStatus != http.StatusOK || len(msg.calls) < 2 {
			break // answered, or nothing to answer as a group
		}
		messages = append(messages, msg.assistant)
		for _, c := range msg.calls {
			content := results[c.Function.Name]
			if content == "" {
				content = "unknown tool"
			}
			messages = append(messages, map[string]any{"role": "tool", "tool_call_id": c.ID, "content": content})
		}
	}
	g.Result = parallelResult(g.Phase.Requests)
	g.Phase.UpstreamDispatches, g.Phase.RefusedDispatches = pu.counts()
	g.Phase.DurationMS = time.Since(began).Milliseconds()
	return g
}

// allNotSent: no dispatch of a request reached the upstream.
func allNotSent(ds []reportDispatch) bool {
	for _, d := range ds {
		if !d.NotSent {
			return false
		}
	}
	return true
}

// printVerdict is the one-screen summary on stdout.
func printVerdict(w io.Writer, r probeReport, path, digest string) {
	fmt.Fprintf(w, "pmgate probe (%s, %s, %s → %s)\n", r.Mode, r.Strategy, r.Model.Public, r.Model.UpstreamEnum)
	line := func(name string, p reportPhase) {
		if !p.Ran {
			fmt.Fprintf(w, "  %-8s not run\n", name)
			return
		}
		var parts []string
		for _, q := range p.Requests {
			s := fmt.Sprintf("%d", q.HTTPStatus)
			if q.FinishReason != "" {
				s += " " + q.FinishReason
			}
			if q.ErrorCode != "" {
				s += " " + q.ErrorCode
			}
			if len(q.Calls) > 0 {
				names := make([]string, len(q.Calls))
				for i, c := range q.Calls {
					names[i] = c.Name
				}
				s += " [" + strings.Join(names, ",") + "]"
			}
			for _, d := range q.Upstream {
				ev := d.TerminalEvidence
				if len(ev) == 0 {
					ev = []string{"no terminal evidence"}
				}
				s += fmt.Sprintf(" (%s %s: %s)", d.ChatType, d.Outcome, strings.Join(ev, "+"))
			}
			parts = append(parts, s)
		}
		fmt.Fprintf(w, "  %-8s %d request(s), %d dispatch(es), %d ms: %s\n", name, p.GatewayRequests, p.UpstreamDispatches,
			p.DurationMS, strings.Join(parts, "; "))
	}
	line("text", r.Text)
	line("tools", r.Tools)
	if r.Limits != nil {
		line("limits", r.Limits.Phase)
		l := r.Limits
		bracket := func(lo, hi, ceiling int) string {
			if hi == 0 {
				return fmt.Sprintf("none refused up to %d", max(lo, ceiling))
			}
			return fmt.Sprintf("refused from %d", hi)
		}
		fmt.Fprintf(w, "           query: longest accepted %d chars (%s; start %d, ceiling %d), measured limit %d\n",
			l.LongestAcceptedChars, bracket(l.LongestAcceptedChars, l.ShortestRejectedChars, l.CeilingChars), l.StartChars, l.CeilingChars, l.MeasuredChars)
		fmt.Fprintf(w, "           tools: most accepted %d (%s; start %d, ceiling %d), measured limit %d; continuation %s\n",
			l.LongestAcceptedTools, bracket(l.LongestAcceptedTools, l.ShortestRejectedTools, l.ToolsCeiling), l.ToolsStart, l.ToolsCeiling, l.MeasuredTools, l.Continuation)
	}
	if u := r.QueryUnit; u != nil {
		line("unit", u.Phase)
		fmt.Fprintf(w, "           query unit: %s (%d code points, %d UTF-16 units, between %d accepted and %d refused)\n",
			u.Result, u.CodePoints, u.UTF16Units, u.AcceptedChars, u.RefusedChars)
	}
	if g := r.Parallel; g != nil {
		line("parallel", g.Phase)
		fmt.Fprintf(w, "           parallel group answered with toolResponses[] and its group id: %s\n", g.Result)
	}
	if p := r.Pending; p != nil {
		line("pending", p.Phase)
		at := ""
		if p.UnknownAt != "" {
			at = " (not as planned at " + p.UnknownAt + ")"
		}
		fmt.Fprintf(w, "           a pending tool call after a newer user query in its conversation: %s%s\n", p.Result, at)
	}
	fmt.Fprintf(w, "  model    observed %t, match %t\n", r.Model.ModelObserved, r.Model.ModelMatch)
	fmt.Fprintf(w, "  shutdown clean %t\n", r.Shutdown.Clean)
	if r.Verdict == "pass" {
		fmt.Fprintf(w, "PASS  report %s (%s)\n", path, digest)
		return
	}
	for i, f := range r.Failures {
		if i == 0 {
			f += causeNote(r) // the first failing line says why
		}
		fmt.Fprintf(w, "FAIL  %s\n", f)
	}
	fmt.Fprintf(w, "FAIL  report %s (%s)\n", path, digest)
}

// writeReport puts a report and its MAC at path and path.mac, each written to
// a temporary file and renamed over the old one: the MAC first, then the
// report, so that the report's rename is the one step that replaces the pair
// and a reader never finds half a file. No MAC (a configuration without a
// credential) removes a stale one.
func writeReport(path string, raw []byte, mac string) error {
	if mac == "" {
		if err := os.Remove(macPath(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	} else if err := replaceFile(macPath(path), []byte(mac+"\n")); err != nil {
		return err
	}
	return replaceFile(path, raw)
}

// replaceFile writes b to a temporary file beside path (0600) and renames it
// over path.
func replaceFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// passingReportAt reports whether path holds a report whose verdict is pass.
func passingReportAt(path string) bool {
	raw, err := readReport(path)
	if err != nil {
		return false
	}
	r, err := decodeReport(raw)
	return err == nil && r.Verdict == "pass"
}

// failedPath is where a failing probe writes its report when a passing one
// is at path: probe.json → probe.failed.json.
func failedPath(path string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + ".failed" + ext
}
