package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
)

// errVerify marks a report that `gateway verify` rejected (exit code 1).
var errVerify = errors.New("report rejected")

// The verifier's branches, in the order they are checked and printed.
const (
	branchFormat       = "format"
	branchFreshness    = "freshness"
	branchConfig       = "configuration"
	branchPolicy       = "policy"
	branchModel        = "model"
	branchRule         = "completion rule"
	branchText         = "text phase"
	branchInitialTool  = "initial tool phase"
	branchContinuation = "continuation"
	branchBudgets      = "budgets"
	branchLimits       = "limits"
	branchUnit         = "query unit"
	branchParallel     = "parallel"
	branchPending      = "pending"
	branchUsage        = "usage"
	branchRateLimit    = "rate limit"
	branchCleanup      = "cleanup"
	branchHygiene      = "hygiene"
	branchVerdict      = "verdict"
)

// outcomeComplete is a dispatch's outcome for a proven end (otherwise the
// outcome is the stream's stable error code).
const outcomeComplete = "complete"

// probeTools are the two tools of the probe's tool loop; both take an empty
// object.
var probeTools = []string{"probe_alpha", "probe_beta"}

// verifyOptions are the verifier's inputs besides the report.
type verifyOptions struct {
	now             time.Time
	maxAge          time.Duration
	version, commit string
	fingerprint     string // "" when no configuration was given
	strategy        string // "" when no configuration was given
	terminalRule    string // "" when no configuration was given
	// models are the configuration's public → upstream enum, so that a
	// fingerprint that differs can be traced to the model the report names.
	models               map[string]string
	requireObservedModel bool
	secrets              []string // values that must not occur in the report
	writing              bool     // the probe judging the report it writes: its verdict is not set yet
}

// verdict is the outcome of verifyReport: each failure is "branch: reason",
// with fixed reasons (no value from the report is echoed).
type verdict struct{ failures []string }

func (v *verdict) fail(branch, format string, args ...any) {
	v.failures = append(v.failures, branch+": "+fmt.Sprintf(format, args...))
}

func (v verdict) ok() bool { return len(v.failures) == 0 }

// branches returns the distinct failed branches in order.
func (v verdict) branches() []string {
	var out []string
	for _, f := range v.failures {
		b, _, _ := strings.Cut(f, ":")
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// verifyReport is the deterministic closure gate: it never retries, never
// chooses a fallback, never repairs the evidence and never treats a missing
// field as success. The probe uses it for its own verdict (without the raw
// report's age), so the rules live here only.
func verifyReport(raw []byte, o verifyOptions) (probeReport, verdict) {
	var v verdict
	r, err := decodeReport(raw)
	if err == nil && r.Schema != reportSchema {
		err = fmt.Errorf("unknown schema version (want %s)", reportSchema)
	}
	if err != nil {
		v.fail(branchFormat, "%s", err.Error())
		return r, v // nothing else can be judged
	}
	verifyFreshness(&v, r, o)
	verifyConfig(&v, r, o)
	verifyPolicy(&v, r)
	verifyModel(&v, r, o)
	verifyRule(&v, r, o)
	verifyText(&v, r)
	verifyInitialTool(&v, r)
	verifyContinuation(&v, r)
	verifyBudgets(&v, r)
	verifyLimits(&v, r)
	verifyQueryUnit(&v, r)
	verifyParallel(&v, r)
	verifyPending(&v, r)
	verifyUsage(&v, r)
	verifyRateLimit(&v, r)
	if !r.Shutdown.Clean {
		v.fail(branchCleanup, "the in-process server's shutdown was not proven clean")
	}
	if p := hygiene(raw, o.secrets); p != "" {
		v.fail(branchHygiene, "%s", p)
	}
	if !o.writing && (r.Verdict != "pass" || len(r.Failures) != 0) {
		v.fail(branchVerdict, "the report does not record a pass without failures")
	}
	return r, v
}

func verifyFreshness(v *verdict, r probeReport, o verifyOptions) {
	t, err := time.Parse(time.RFC3339, r.WrittenAt)
	switch {
	case err != nil:
		v.fail(branchFreshness, "written_at is not an RFC 3339 time")
	case o.now.Sub(t) > o.maxAge:
		v.fail(branchFreshness, "written %s ago, older than --max-age %s", o.now.Sub(t).Round(time.Second), o.maxAge)
	case t.Sub(o.now) > 5*time.Minute:
		v.fail(branchFreshness, "written in the future")
	}
	if r.Version != o.version || (r.Commit != "" || o.commit != "") && r.Commit != o.commit {
		v.fail(branchFreshness, "written by another version than this verifier")
	}
}

func verifyConfig(v *verdict, r probeReport, o verifyOptions) {
	if o.fingerprint == "" {
		return
	}
	if r.ConfigFingerprint != o.fingerprint {
		v.fail(branchConfig, "the configuration fingerprint differs from the current configuration: %s", fingerprintPart(r, o))
	}
	if r.Strategy != o.strategy {
		v.fail(branchConfig, "the strategy differs from the current configuration")
	}
	if r.TerminalRule != o.terminalRule {
		v.fail(branchConfig, "the terminal rule differs from the current configuration")
	}
}

// fingerprintPart says which part of the fingerprint differs, as far as the
// report's own fields tell (strategy, its model's mapping); the endpoint, the
// workspace and the other entries of the model map are only in the hash, so
// they are named together. Fixed words only: no value is echoed.
func fingerprintPart(r probeReport, o verifyOptions) string {
	up, served := o.models[r.Model.Public]
	switch {
	case r.Strategy != o.strategy:
		return "the strategy (POSTMAN_TRANSPORT_STRATEGY)"
	case o.models != nil && !served:
		return "the report's model is not in PROVIDER_MODELS / POSTMAN_MODEL_MAP"
	case o.models != nil && up != r.Model.UpstreamEnum:
		return "the report's model maps to another upstream enum in POSTMAN_MODEL_MAP"
	}
	return "the strategy and the report's model match, so the chat host (POSTMAN_WORKSPACE_SUBDOMAIN or POSTMAN_ORIGIN), " +
		"POSTMAN_WORKSPACE_ID, or another entry or observed label of POSTMAN_MODEL_MAP differs"
}

// modelsOf is a configuration's public → upstream enum, for verifyOptions.
func modelsOf(cfg config) map[string]string {
	m := map[string]string{}
	for _, mm := range cfg.upstream.Models {
		m[mm.Public] = mm.Upstream
	}
	return m
}

func verifyPolicy(v *verdict, r probeReport) {
	p, d := r.Policy, defaultPolicy(r.Policy.RequestTimeoutMS, r.Policy.MaxQueryCharsAtStartup)
	if p.Retry {
		v.fail(branchPolicy, "retry was enabled")
	}
	if p.Failover {
		v.fail(branchPolicy, "failover was enabled")
	}
	if p.TextMaxRequests > d.TextMaxRequests || p.TextMaxDispatches > d.TextMaxDispatches ||
		p.ToolMaxTurns > d.ToolMaxTurns || p.ToolMaxRequests > d.ToolMaxRequests ||
		p.ToolMaxDispatches > d.ToolMaxDispatches || p.LimitMaxQueries > d.LimitMaxQueries ||
		p.LimitMaxContinuations > d.LimitMaxContinuations {
		v.fail(branchPolicy, "budgets above the defaults")
	}
	if p.UnitMaxQueries > d.UnitMaxQueries || p.ParallelMaxRequests > d.ParallelMaxRequests || p.ParallelMaxDispatches > d.ParallelMaxDispatches ||
		p.PendingMaxRequests > d.PendingMaxRequests || p.PendingMaxDispatches > d.PendingMaxDispatches {
		v.fail(branchPolicy, "measurement budgets above the defaults")
	}
	if p.TextMaxRequests < 1 || p.ToolMaxTurns < 2 || p.ToolMaxRequests < 2 || p.ToolMaxDispatches < 2 {
		v.fail(branchPolicy, "budgets too small for the phases to be judged")
	}
}

func verifyModel(v *verdict, r probeReport, o verifyOptions) {
	switch {
	case !r.Model.ModelObserved && o.requireObservedModel:
		v.fail(branchModel, "the upstream reported no model and --require-observed-model is set")
	case r.Model.ModelObserved && !r.Model.ModelMatch:
		v.fail(branchModel, "the observed model does not match the configured enum")
	}
	for _, d := range dispatches(r) {
		if d.ModelObserved && !d.ModelMatch {
			v.fail(branchModel, "a stream reported a model that does not match the configured enum")
			return
		}
	}
}

// verifyRule flags a configured completion rule that would not have completed
// a stream the upstream ended normally: it is the live answer to "does this
// account's upstream send what the rule needs".
func verifyRule(v *verdict, r probeReport, o verifyOptions) {
	rule := r.TerminalRule
	if o.terminalRule != "" {
		rule = o.terminalRule
	}
	for _, d := range dispatches(r) {
		if d.RefusedByBudget || d.Outcome != outcomeComplete && d.Outcome != "upstream_completion_ambiguous" {
			continue // never sent, or a failure that no rule completes
		}
		would, known := d.WouldComplete[rule]
		switch {
		case !known:
			v.fail(branchRule, "a stream carries no evidence for the configured rule")
			return
		case !would:
			v.fail(branchRule, "the configured rule would not have completed a stream the upstream ended")
			return
		}
	}
}

func verifyText(v *verdict, r probeReport) {
	p := r.Text
	if !p.Ran || len(p.Requests) == 0 {
		v.fail(branchText, "the text phase did not run")
		return
	}
	q := p.Requests[len(p.Requests)-1]
	if q.HTTPStatus != 200 {
		v.fail(branchText, "HTTP status %d", q.HTTPStatus)
	}
	if q.TextBytes == 0 {
		v.fail(branchText, "no text")
	}
	if q.FinishReason != "stop" || (q.Stream && !q.SawDone) || !upstreamComplete(q) {
		v.fail(branchText, "no proven completion")
	}
}

// upstreamComplete: the request's last upstream dispatch ended in a complete
// outcome.
func upstreamComplete(q reportRequest) bool {
	if len(q.Upstream) == 0 {
		return false
	}
	return q.Upstream[len(q.Upstream)-1].Outcome == outcomeComplete
}

func verifyInitialTool(v *verdict, r probeReport) {
	p := r.Tools
	if !p.Ran || len(p.Requests) == 0 {
		v.fail(branchInitialTool, "the tool phase did not run")
		return
	}
	q := p.Requests[0]
	if q.HTTPStatus != 200 {
		v.fail(branchInitialTool, "HTTP status %d", q.HTTPStatus)
	}
	if n := len(q.Calls); n == 0 || n > 2 {
		v.fail(branchInitialTool, "%d tool calls (want 1 or 2)", n)
	}
	if q.HTTPStatus == 200 && (q.FinishReason != "tool_calls" || !upstreamComplete(q)) {
		v.fail(branchInitialTool, "the tool turn did not end with a proven tool_calls completion")
	}
	for _, c := range q.Calls {
		switch {
		case !slices.Contains(probeTools, c.Name):
			v.fail(branchInitialTool, "a call to an unknown tool")
		case !c.ArgumentsObject:
			v.fail(branchInitialTool, "arguments are not a JSON object")
		case !c.ArgumentsValid:
			v.fail(branchInitialTool, "arguments are not valid for the tool's schema")
		}
	}
}

func verifyContinuation(v *verdict, r probeReport) {
	p := r.Tools
	if len(p.Requests) < 2 {
		v.fail(branchContinuation, "no continuation turn")
		return
	}
	last := p.Requests[len(p.Requests)-1]
	for i, q := range p.Requests[1:] {
		if q.HTTPStatus != 200 {
			v.fail(branchContinuation, "turn %d: HTTP status %d", i+2, q.HTTPStatus)
			return
		}
		final := i+2 == len(p.Requests)
		if !final && !q.AskedMissingTool {
			v.fail(branchContinuation, "turn %d neither finished nor asked for the missing tool", i+2)
			return
		}
	}
	if last.FinishReason == "tool_calls" {
		v.fail(branchContinuation, "the last turn neither finished nor asked for the missing tool within the budget")
		return
	}
	if !last.ExactMarkerLine {
		v.fail(branchContinuation, "the final answer is not exactly the marker line")
	}
	if last.FinishReason != "stop" || !upstreamComplete(last) {
		v.fail(branchContinuation, "the final answer has no proven completion")
	}
}

func verifyBudgets(v *verdict, r probeReport) {
	p := r.Policy
	check := func(name string, ph reportPhase, maxTurns, maxReq, maxDisp int) {
		n := 0 // dispatches sent or refused by the budget; the adapter's own refusals sent nothing and count as neither
		for _, q := range ph.Requests {
			for _, d := range q.Upstream {
				if !d.NotSent || d.RefusedByBudget {
					n++
				}
			}
		}
		switch {
		case ph.Turns > maxTurns:
			v.fail(branchBudgets, "%s: more turns than the policy", name)
		case ph.GatewayRequests > maxReq || len(ph.Requests) > maxReq:
			v.fail(branchBudgets, "%s: more gateway requests than the policy", name)
		case ph.UpstreamDispatches > maxDisp:
			v.fail(branchBudgets, "%s: more upstream dispatches than the policy", name)
		case ph.GatewayRequests != len(ph.Requests) || ph.UpstreamDispatches+ph.RefusedDispatches != n:
			v.fail(branchBudgets, "%s: the counters do not match the recorded requests", name)
		}
	}
	check("text", r.Text, p.TextMaxRequests, p.TextMaxRequests, p.TextMaxDispatches)
	check("tools", r.Tools, p.ToolMaxTurns, p.ToolMaxRequests, p.ToolMaxDispatches)
	if r.Limits != nil {
		n := p.LimitMaxQueries + p.LimitMaxContinuations
		check("limits", r.Limits.Phase, n, n, n)
	}
	if r.QueryUnit != nil {
		check("query unit", r.QueryUnit.Phase, p.UnitMaxQueries, p.UnitMaxQueries, p.UnitMaxQueries)
	}
	if r.Parallel != nil {
		check("parallel", r.Parallel.Phase, p.ParallelMaxRequests, p.ParallelMaxRequests, p.ParallelMaxDispatches)
	}
	if r.Pending != nil {
		check("pending", r.Pending.Phase, p.PendingMaxRequests, p.PendingMaxRequests, p.PendingMaxDispatches)
	}
}

// verifyQueryUnit checks the --measure-query-unit evidence: the bracket it
// used is the limits phase's own, its one query is the astral query that
// bracket calls for, and the result follows from that query's answer.
func verifyQueryUnit(v *verdict, r probeReport) {
	u := r.QueryUnit
	if u == nil {
		return
	}
	if r.Limits == nil || u.AcceptedChars != r.Limits.LongestAcceptedChars || u.RefusedChars != r.Limits.ShortestRejectedChars {
		v.fail(branchUnit, "the bracket is not the limits phase's longest accepted and shortest refused length")
		return
	}
	n := unitCodePoints(u.AcceptedChars, u.RefusedChars)
	want := "undecided"
	for i, q := range u.Phase.Requests {
		if i > 0 || q.Kind != "unit_astral" || q.QueryChars != n || n == 0 {
			v.fail(branchUnit, "a query the bracket does not call for")
			return
		}
		want = unitResult(q)
	}
	switch {
	case u.CodePoints != n || u.UTF16Units != 2*n || (n > 0) != (len(u.Phase.Requests) == 1):
		v.fail(branchUnit, "the query's length does not follow from the bracket")
	case u.Result != want:
		v.fail(branchUnit, "the result does not follow from the query's answer")
	}
}

// verifyParallel checks the --measure-parallel evidence: at most the group's
// turn and its answer, and a result that follows from them. A verified
// report's accepted result changes what serve sends, so nothing in it may be
// unsupported.
func verifyParallel(v *verdict, r probeReport) {
	g := r.Parallel
	if g == nil {
		return
	}
	for i, q := range g.Phase.Requests {
		if i > 1 || q.Kind != [...]string{"parallel_initial", "parallel_continuation"}[i] {
			v.fail(branchParallel, "a request the phase does not send")
			return
		}
	}
	if g.Result != parallelResult(g.Phase.Requests) {
		v.fail(branchParallel, "the result does not follow from its requests")
	}
}

// verifyPending checks the --measure-pending evidence: only the phase's four
// requests, in order, each with at most one dispatch that reached the
// upstream (nothing retried); a first query just under the query limit (so
// that the transcript after one tool round does not fit a fresh
// conversation); and a result, and a step where it did not go as planned,
// that follow from the requests — the user query continued the
// conversation from the earlier point, and the late result's own answer
// says kept or dropped.
func verifyPending(v *verdict, r probeReport) {
	p := r.Pending
	if p == nil {
		return
	}
	for i, q := range p.Phase.Requests {
		if i >= len(pendingKinds) || q.Kind != pendingKinds[i] {
			v.fail(branchPending, "a request the phase does not send")
			return
		}
		if len(sentDispatches(q)) > 1 {
			v.fail(branchPending, "a request sent more than one dispatch")
			return
		}
	}
	if p.Phase.Ran != (len(p.Phase.Requests) > 0) {
		v.fail(branchPending, "the phase ran without a request, or did not run and has one")
	}
	if len(p.Phase.Requests) > 0 && p.Phase.Requests[0].QueryChars != r.Policy.MaxQueryCharsAtStartup-pendingMargin {
		v.fail(branchPending, "the first query is not just under the query limit")
	}
	if result, at := pendingResult(p.Phase.Requests); p.Result != result || p.UnknownAt != at {
		v.fail(branchPending, "the result does not follow from its requests")
	}
}

// verifyUsage checks that each stream's usage position agrees with its event
// counts: a position other than none needs usage events, none (or no
// stream) needs none, and a position around the output needs output.
func verifyUsage(v *verdict, r probeReport) {
	for _, d := range dispatches(r) {
		usage := d.EventTypes["usage"]
		output := d.EventTypes["textChunk"] + d.EventTypes["toolCallChunk"]
		var ok bool
		switch d.UsagePosition {
		case "", "none":
			ok = usage == 0 && len(d.UsageFields) == 0
		case "no_output":
			ok = usage > 0 && output == 0
		default:
			ok = usage > 0 && output > 0
		}
		if !ok {
			v.fail(branchUsage, "a stream's usage position does not match its event counts")
			return
		}
	}
}

// verifyRateLimit checks each answer's rate-limit record: without the
// headers every figure is 0; with them, what remains is within the limit.
func verifyRateLimit(v *verdict, r probeReport) {
	for _, d := range dispatches(r) {
		l := d.RateLimit
		switch {
		case !l.Headers && (l.Limit != 0 || l.Remaining != 0 || l.WindowS != 0):
			v.fail(branchRateLimit, "figures recorded for an answer without rate-limit headers")
			return
		case l.Limit < 0 || l.Remaining < 0 || l.WindowS < 0 || l.Limit > 0 && l.Remaining > l.Limit:
			v.fail(branchRateLimit, "a window whose figures do not fit together")
			return
		}
	}
}

// verifyLimits checks the --measure-limits evidence: every figure of the
// limits phase must follow from its recorded requests (the largest accepted
// and smallest refused size of each search, the measured values, whether the
// configured limit was exceeded), within the phase's query budgets and
// ceilings. A verified report's measured values become serve's limits, so
// nothing in them may be unsupported.
func verifyLimits(v *verdict, r probeReport) {
	l := r.Limits
	if l == nil {
		return
	}
	if l.StartChars != r.Policy.MaxQueryCharsAtStartup || l.CeilingChars > l.StartChars*limitCeilingFactor ||
		l.ToolsCeiling > min(max(l.ToolsStart, 1)*limitCeilingFactor, limitToolsCap) {
		v.fail(branchLimits, "a start or ceiling is outside the phase's policy")
	}
	type found struct{ tries, accepted, refused int }
	judge := func(kind string, size func(reportRequest) int, ceiling int) found {
		var f found
		for _, q := range l.Phase.Requests {
			if q.Kind != kind {
				continue
			}
			f.tries++
			n := size(q)
			if n > ceiling {
				v.fail(branchLimits, "a %s query above its ceiling", kind)
			}
			switch outcomeOf(q) {
			case limitAccepted:
				f.accepted = max(f.accepted, n)
			case limitRefused:
				if f.refused == 0 || n < f.refused {
					f.refused = n
				}
			}
		}
		return f
	}
	chars := judge("limit_fresh", func(q reportRequest) int { return q.QueryChars }, l.CeilingChars)
	tools := judge("limit_tools", func(q reportRequest) int { return q.ToolsOffered }, l.ToolsCeiling)
	switch {
	case chars.tries > limitLengthQueries || tools.tries > limitToolQueries:
		v.fail(branchLimits, "more search queries than the phase's budget")
	case chars.accepted != l.LongestAcceptedChars || chars.refused != l.ShortestRejectedChars:
		v.fail(branchLimits, "the query-length result does not follow from its requests")
	case tools.accepted != l.LongestAcceptedTools || tools.refused != l.ShortestRejectedTools:
		v.fail(branchLimits, "the tool-count result does not follow from its requests")
	case l.MeasuredChars != l.LongestAcceptedChars || l.MeasuredTools != l.LongestAcceptedTools:
		v.fail(branchLimits, "a measured value is not the largest accepted one")
	case l.ShortestRejectedChars > 0 && l.ShortestRejectedChars <= l.LongestAcceptedChars,
		l.ShortestRejectedTools > 0 && l.ShortestRejectedTools <= l.LongestAcceptedTools:
		v.fail(branchLimits, "a refused size is not above the accepted one")
	case l.UpperBoundTested != (chars.accepted > l.StartChars || chars.refused > l.StartChars):
		v.fail(branchLimits, "upper_bound_tested does not follow from the requests")
	}
}

// dispatches lists every upstream dispatch of the report.
func dispatches(r probeReport) []reportDispatch {
	var out []reportDispatch
	phases := []reportPhase{r.Text, r.Tools}
	if r.Limits != nil {
		phases = append(phases, r.Limits.Phase)
	}
	if r.QueryUnit != nil {
		phases = append(phases, r.QueryUnit.Phase)
	}
	if r.Parallel != nil {
		phases = append(phases, r.Parallel.Phase)
	}
	if r.Pending != nil {
		phases = append(phases, r.Pending.Phase)
	}
	for _, p := range phases {
		for _, q := range p.Requests {
			out = append(out, q.Upstream...)
		}
	}
	return out
}

// buildCommit is the VCS revision of this binary ("" when unknown), with
// "-dirty" when it was built from a modified tree.
func buildCommit() string {
	rev, modified := buildInfo()
	if rev != "" && modified {
		rev += "-dirty"
	}
	return rev
}

const verifyHelp = `usage: gateway verify [--max-age 24h] [--env-file FILE] [--require-observed-model] [--now T] REPORT

Checks a pmgate-probe/v1 evidence report (written by gateway probe) and exits 0
only when every check holds; each failure prints its branch: format, freshness,
configuration, policy, model, completion rule, text phase, initial tool phase,
continuation, budgets, limits, query unit, parallel, pending, usage, rate limit,
cleanup, hygiene, verdict.

flags:
  --max-age D                reject reports older than D (default 24h)
  --env-file FILE            compare the report with this configuration (fingerprint,
                             strategy, terminal rule); KEY=VALUE lines, the environment wins
  --require-observed-model   reject a report whose streams reported no model
  --now T                    judge freshness at the RFC 3339 time T instead of the clock
                             (for reproducible checks of stored reports)

variables read (with --env-file or from the environment when --env-file is given):
  every variable of gateway serve (see gateway serve --help)
`

func runVerify(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	maxAge := fs.Duration("max-age", 24*time.Hour, "")
	envPath := fs.String("env-file", "", "")
	requireModel := fs.Bool("require-observed-model", false, "")
	nowFlag := fs.String("now", "", "")
	if done, err := parseFlags(fs, args, verifyHelp, stdout); done || err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: verify needs exactly one REPORT file", errUsage)
	}
	raw, err := readReport(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	now := time.Now()
	if *nowFlag != "" {
		if now, err = time.Parse(time.RFC3339, *nowFlag); err != nil {
			return fmt.Errorf("%w: --now must be an RFC 3339 time", errUsage)
		}
	}
	o := verifyOptions{now: now, maxAge: *maxAge, version: version, commit: buildCommit(),
		requireObservedModel: *requireModel}
	if *envPath != "" {
		cfg, err := configFromArgs("verify", []string{"--env-file", *envPath}, getenv)
		if err != nil {
			return err
		}
		o.fingerprint, o.strategy, o.terminalRule = fingerprint(cfg.upstream), string(cfg.upstream.Strategy), terminalRuleOf(cfg)
		o.models = modelsOf(cfg)
		o.secrets = append(cfg.upstream.Secrets(), cfg.apiKey, cfg.upstream.WorkspaceID)
	}
	_, v := verifyReport(raw, o)
	if v.ok() {
		fmt.Fprintf(stdout, "PASS %s (%s)\n", fs.Arg(0), reportDigest(raw))
		return nil
	}
	for _, f := range v.failures {
		fmt.Fprintf(stdout, "FAIL %s\n", f)
	}
	return fmt.Errorf("%w: %s", errVerify, strings.Join(v.branches(), ", "))
}

// readReport reads a report file (readRegular: a regular file of at most
// maxReportBytes).
func readReport(path string) ([]byte, error) {
	raw, err := readRegular(path, maxReportBytes)
	var open *os.PathError
	if err != nil && !errors.As(err, &open) { // an open error names its path already
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return raw, err
}

// terminalRuleOf is the completion rule the configuration's strategy uses.
func terminalRuleOf(cfg config) string {
	r, _ := cfg.upstream.Rule() // "" for a configuration no client could be built from
	return string(r)
}
