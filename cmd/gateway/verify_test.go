package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// The seeded reports: each is testdata/probe/good.json with one defect, and
// `gateway verify` must reject it with exactly its branch (the part of the
// file name before "--"). .ci/run checks the same files through the binary.
// PMGATE_UPDATE_TESTDATA=1 rewrites them from this table.
var seeded = []struct {
	file   string
	mutate func(d map[string]any)
}{
	{"format--unknown-schema", func(d map[string]any) { d["schema"] = "pmgate-probe/v0" }},
	{"format--missing-field", func(d map[string]any) { del(d, "text.requests.0.saw_done") }},
	{"format--extra-field", func(d map[string]any) { d["notes"] = "extra" }},
	{"format--wrong-type", func(d map[string]any) { set(d, "text.requests.0.http_status", "200") }},
	{"format--missing-phase", func(d map[string]any) { delete(d, "tools") }},
	{"freshness--too-old", func(d map[string]any) { d["written_at"] = "2026-11-29T09:00:00Z" }},
	{"freshness--other-version", func(d map[string]any) { d["version"] = "0.9.0" }},
	{"configuration--fingerprint", func(d map[string]any) {
		d["config_fingerprint"] = "sha256:" + strings.Repeat("ab", 32)
	}},
	{"policy--retry", func(d map[string]any) { set(d, "policy.retry", true) }},
	{"policy--failover", func(d map[string]any) { set(d, "policy.failover", true) }},
	{"policy--budget-above-default", func(d map[string]any) { set(d, "policy.tool_max_dispatches", 5) }},
	{"policy--measurement-budget-above-default", func(d map[string]any) { set(d, "policy.parallel_max_dispatches", 3) }},
	{"model--not-observed", func(d map[string]any) {
		set(d, "model.model_observed", false)
		set(d, "model.model_match", false)
		eachDispatch(d, func(u map[string]any) { u["model_observed"], u["model_match"] = false, false })
	}},
	{"model--mismatch", func(d map[string]any) {
		set(d, "model.model_match", false)
		eachDispatch(d, func(u map[string]any) { u["model_match"] = false })
	}},
	{"completion-rule--would-not-complete", func(d map[string]any) {
		set(d, "tools.requests.1.upstream.0.would_complete.usage_after_output_v1", false)
	}},
	{"completion-rule--no-evidence", func(d map[string]any) {
		set(d, "text.requests.0.upstream.0.would_complete", map[string]any{})
	}},
	{"text-phase--status", func(d map[string]any) { set(d, "text.requests.0.http_status", 502) }},
	{"text-phase--no-text", func(d map[string]any) { set(d, "text.requests.0.text_bytes", 0) }},
	{"text-phase--no-completion", func(d map[string]any) { set(d, "text.requests.0.saw_done", false) }},
	{"initial-tool-phase--status", func(d map[string]any) { set(d, "tools.requests.0.http_status", 400) }},
	{"initial-tool-phase--zero-calls", func(d map[string]any) { set(d, "tools.requests.0.calls", []any{}) }},
	{"initial-tool-phase--three-calls", func(d map[string]any) {
		calls := get(d, "tools.requests.0.calls").([]any)
		set(d, "tools.requests.0.calls", append(calls, calls[0]))
	}},
	{"initial-tool-phase--unknown-tool", func(d map[string]any) { set(d, "tools.requests.0.calls.1.name", "other") }},
	{"initial-tool-phase--arguments-not-object", func(d map[string]any) {
		set(d, "tools.requests.0.calls.0.arguments_object", false)
		set(d, "tools.requests.0.calls.0.arguments_valid", false)
	}},
	{"initial-tool-phase--arguments-invalid", func(d map[string]any) {
		set(d, "tools.requests.0.calls.0.arguments_valid", false)
	}},
	{"continuation--status", func(d map[string]any) { set(d, "tools.requests.1.http_status", 409) }},
	{"continuation--no-marker-line", func(d map[string]any) { set(d, "tools.requests.1.exact_marker_line", false) }},
	{"continuation--neither-finished-nor-asked", func(d map[string]any) {
		// three turns: the middle one asked again for a tool already answered
		reqs := get(d, "tools.requests").([]any)
		middle := clone(reqs[0]).(map[string]any)
		middle["kind"], middle["asked_missing_tool"] = "tool_continuation", false
		set(d, "tools.requests", []any{reqs[0], middle, reqs[1]})
		set(d, "tools.turns", 3)
		set(d, "tools.gateway_requests", 3)
		set(d, "tools.upstream_dispatches", 3)
	}},
	{"continuation--missing", func(d map[string]any) {
		set(d, "tools.requests", get(d, "tools.requests").([]any)[:1])
		set(d, "tools.turns", 1)
		set(d, "tools.gateway_requests", 1)
		set(d, "tools.upstream_dispatches", 1)
	}},
	{"budgets--turns", func(d map[string]any) { set(d, "tools.turns", 4) }},
	{"budgets--gateway-requests", func(d map[string]any) { set(d, "text.gateway_requests", 2) }},
	{"budgets--dispatches", func(d map[string]any) {
		set(d, "tools.upstream_dispatches", 5)
		set(d, "tools.requests.1.upstream", repeat(get(d, "tools.requests.1.upstream.0"), 4))
	}},
	{"budgets--counters", func(d map[string]any) { set(d, "tools.upstream_dispatches", 1) }},
	{"limits--result-not-from-requests", func(d map[string]any) {
		d["limits"] = limitsPhase()
		set(d, "limits.longest_accepted_chars", 9000)
		set(d, "limits.measured_chars", 9000)
	}},
	{"limits--measured-not-accepted", func(d map[string]any) {
		d["limits"] = limitsPhase()
		set(d, "limits.measured_tools", get(d, "limits.shortest_rejected_tools"))
	}},
	{"limits--above-ceiling", func(d map[string]any) {
		d["limits"] = limitsPhase()
		set(d, "limits.ceiling_chars", 80000)
	}},
	{"query-unit--result-not-from-request", func(d map[string]any) {
		withUnitPhase(d)
		set(d, "query_unit.result", "code_points") // the astral query was refused: UTF-16 units
	}},
	{"query-unit--bracket-not-from-limits", func(d map[string]any) {
		withUnitPhase(d)
		set(d, "query_unit.accepted_chars", 7000)
	}},
	{"query-unit--query-not-the-bracket", func(d map[string]any) {
		withUnitPhase(d)
		set(d, "query_unit.phase.requests.0.query_chars", 3000)
	}},
	{"parallel--result-not-from-requests", func(d map[string]any) {
		withParallelPhase(d)
		set(d, "parallel.result", "rejected") // the group's answer was a proven end: accepted
	}},
	{"parallel--accepted-without-the-array", func(d map[string]any) {
		withParallelPhase(d)
		set(d, "parallel.phase.requests.1.upstream.0.group_id_present", false)
	}},
	{"pending--result-not-from-requests", func(d map[string]any) {
		withPendingPhase(d)
		set(d, "pending.result", "kept") // the late result was answered TOOL_CALL_NOT_FOUND: dropped
	}},
	{"pending--dropped-without-the-error-type", func(d map[string]any) {
		withPendingPhase(d)
		del(d, "pending.phase.requests.3.upstream.0.upstream_error_type") // a failure that names no type decides nothing
	}},
	{"pending--user-query-not-from-the-earlier-point", func(d map[string]any) {
		withPendingPhase(d)
		del(d, "pending.phase.requests.2.disclosure") // the gateway did not say it continued the conversation
	}},
	{"pending--first-query-not-at-the-limit", func(d map[string]any) {
		withPendingPhase(d)
		set(d, "pending.phase.requests.0.query_chars", 5000) // a transcript after one round would fit fresh
	}},
	{"pending--a-request-the-phase-does-not-send", func(d map[string]any) {
		withPendingPhase(d)
		set(d, "pending.phase.requests.1.kind", "pending_user_query")
	}},
	{"pending--late-result-sent-twice", func(d map[string]any) {
		withPendingPhase(d)
		// a retry inside the budget: the first query's dispatch dropped from the count
		set(d, "pending.phase.requests.3.upstream", repeat(get(d, "pending.phase.requests.3.upstream.0"), 2))
		set(d, "pending.phase.requests.0.upstream.0.not_sent", true)
	}},
	{"usage--position-without-usage", func(d map[string]any) {
		set(d, "text.requests.0.upstream.0.event_types.usage", 0)
	}},
	{"usage--none-with-fields", func(d map[string]any) {
		set(d, "text.requests.0.upstream.0.usage_position", "none")
	}},
	{"rate-limit--figures-without-headers", func(d map[string]any) {
		set(d, "text.requests.0.upstream.0.rate_limit.limit", 30)
	}},
	{"rate-limit--remaining-above-limit", func(d map[string]any) {
		set(d, "text.requests.0.upstream.0.rate_limit", map[string]any{"headers": true, "limit": 30, "remaining": 31, "window_s": 60})
	}},
	{"cleanup--not-proven", func(d map[string]any) { set(d, "shutdown.clean", false) }},
	{"hygiene--content", func(d map[string]any) { set(d, "model.upstream_enum", "Hello there") }},
	{"hygiene--id", func(d map[string]any) {
		set(d, "text.requests.0.upstream.0.event_types.call_pmn_QWxhZGRpbjpvcGVu", 1) // beside the real counts
	}},
	{"hygiene--secret", func(d map[string]any) { set(d, "model.public", "testdata-cookie-9d8e7f6a5b4c") }},
	{"hygiene--marker", func(d map[string]any) { set(d, "tools.requests.0.error_code", "mk_0f3a9c2e71b4d865") }},
	{"verdict--fail", func(d map[string]any) { d["verdict"] = "fail" }},
}

// withUnitPhase adds the limits phase and a passing --measure-query-unit
// phase: the astral query as long, in code points, as the longest accepted
// length (6,750), refused by the upstream (its UTF-16 length, 13,500, is over
// the shortest refused, 7,031): the service counts UTF-16 units.
func withUnitPhase(d map[string]any) {
	d["limits"] = limitsPhase()
	refused := clone(get(d, "limits.phase.requests.0")).(map[string]any)
	refused["kind"], refused["query_chars"] = "unit_astral", 6750
	d["query_unit"] = map[string]any{
		"phase": map[string]any{"ran": true, "turns": 1, "gateway_requests": 1, "upstream_dispatches": 1, "refused_dispatches": 0,
			"duration_ms": 40, "requests": []any{refused}},
		"accepted_chars": 6750, "refused_chars": 7031, "code_points": 6750, "utf16_units": 13500, "result": "utf16_units",
	}
}

// withParallelPhase adds a passing --measure-parallel phase: the tool
// phase's two turns again, the first with both calls in one group, the
// second answering both in one TOOL_RESPONSE with the group id.
func withParallelPhase(d map[string]any) {
	first := clone(get(d, "tools.requests.0")).(map[string]any)
	second := clone(get(d, "tools.requests.1")).(map[string]any)
	first["kind"], second["kind"] = "parallel_initial", "parallel_continuation"
	d["parallel"] = map[string]any{
		"phase": map[string]any{"ran": true, "turns": 2, "gateway_requests": 2, "upstream_dispatches": 2, "refused_dispatches": 0,
			"duration_ms": 90, "requests": []any{first, second}},
		"result": "accepted",
	}
}

// withPendingPhase adds a passing --measure-pending phase (recorded from the
// emulator on web_session dropping the pending call): the late result
// answered TOOL_CALL_NOT_FOUND after the user query went up in the
// conversation from the earlier point.
func withPendingPhase(d map[string]any) {
	raw, err := os.ReadFile("testdata/probe/pending-phase.json")
	if err != nil {
		panic(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		panic(err)
	}
	d["pending"] = p
}

// limitsPhase is a passing --measure-limits phase (recorded from the
// emulator accepting 7,000 characters and 16 tools) for the limits seeds.
func limitsPhase() map[string]any {
	raw, err := os.ReadFile("testdata/probe/limits-phase.json")
	if err != nil {
		panic(err)
	}
	var l map[string]any
	if err := json.Unmarshal(raw, &l); err != nil {
		panic(err)
	}
	return l
}

// seededFlags are the flags .ci/run passes too.
var seededFlags = []string{"--env-file", "testdata/probe/web_session.env", "--now", "2026-12-01T10:00:00Z",
	"--require-observed-model"}

func TestTheGoodSeedPassesAndEverySeededBadReportFailsWithExactlyItsBranch(t *testing.T) {
	is := is.New(t)
	good, err := os.ReadFile("testdata/probe/good.json")
	is.NoErr(err)
	update := os.Getenv("PMGATE_UPDATE_TESTDATA") == "1"
	if update {
		is.NoErr(os.RemoveAll("testdata/probe/bad"))
		is.NoErr(os.MkdirAll("testdata/probe/bad", 0o755))
	}
	var out bytes.Buffer
	is.NoErr(run(t.Context(), append([]string{"verify"}, append(seededFlags, "testdata/probe/good.json")...), noEnv, &out, &out))
	is.True(strings.HasPrefix(out.String(), "PASS ")) // the seed itself passes every branch
	var withLimits map[string]any
	is.NoErr(json.Unmarshal(good, &withLimits))
	withLimits["limits"] = limitsPhase()
	raw, err := json.MarshalIndent(withLimits, "", "  ")
	is.NoErr(err)
	measured := filepath.Join(t.TempDir(), "measured.json")
	is.NoErr(os.WriteFile(measured, raw, 0o600))
	out.Reset()
	is.NoErr(run(t.Context(), append([]string{"verify"}, append(seededFlags, measured)...), noEnv, &out, &out))
	is.True(strings.HasPrefix(out.String(), "PASS ")) // and so does it with a measurement
	var withAll map[string]any
	is.NoErr(json.Unmarshal(good, &withAll))
	withUnitPhase(withAll)
	withParallelPhase(withAll)
	withPendingPhase(withAll)
	raw, err = json.MarshalIndent(withAll, "", "  ")
	is.NoErr(err)
	is.NoErr(os.WriteFile(measured, raw, 0o600))
	out.Reset()
	is.NoErr(run(t.Context(), append([]string{"verify"}, append(seededFlags, measured)...), noEnv, &out, &out))
	is.True(strings.HasPrefix(out.String(), "PASS ")) // and with the query-unit, parallel and pending phases

	covered := map[string]bool{}
	for _, s := range seeded {
		path := filepath.Join("testdata/probe/bad", s.file+".json")
		if update {
			var d map[string]any
			is.NoErr(json.Unmarshal(good, &d))
			s.mutate(d)
			raw, err := json.MarshalIndent(d, "", "  ")
			is.NoErr(err)
			is.NoErr(os.WriteFile(path, append(raw, '\n'), 0o644))
		}
		want := strings.ReplaceAll(strings.Split(s.file, "--")[0], "-", " ")
		out.Reset()
		err := run(t.Context(), append([]string{"verify"}, append(seededFlags, path)...), noEnv, &out, &out)
		is.True(err != nil)                                    // rejected
		is.Equal(exitCode(err), 1)                             // a rejection, not a usage error
		is.Equal(failedBranches(out.String()), []string{want}) // exactly its branch
		covered[want] = true
	}
	for _, b := range []string{branchFormat, branchFreshness, branchConfig, branchPolicy, branchModel, branchRule,
		branchText, branchInitialTool, branchContinuation, branchBudgets, branchLimits, branchUnit, branchParallel, branchPending, branchUsage,
		branchRateLimit, branchCleanup, branchHygiene, branchVerdict} {
		is.True(covered[b]) // every branch has a seeded report
	}
	entries, err := os.ReadDir("testdata/probe/bad")
	is.NoErr(err)
	is.Equal(len(entries), len(seeded)) // no stale seeded file
}

func TestVerifyNeverEchoesReportValues(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	err := run(t.Context(), append([]string{"verify"}, append(seededFlags, "testdata/probe/bad/hygiene--secret.json")...), noEnv, &out, &out)
	is.True(err != nil)
	is.True(!strings.Contains(out.String(), "testdata-cookie-9d8e7f6a5b4c")) // the secret is found, not printed
	out.Reset()
	err = run(t.Context(), append([]string{"verify"}, append(seededFlags, "testdata/probe/bad/format--extra-field.json")...), noEnv, &out, &out)
	is.True(err != nil)
	is.True(strings.Contains(out.String(), `FAIL format: not a pmgate-probe/v1 report: unknown field "notes"`)) // names the field
}

func TestVerifyWithoutTheConfigurationSkipsOnlyTheConfigurationBranch(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	err := run(t.Context(), []string{"verify", "--now", "2026-12-01T10:00:00Z", "testdata/probe/bad/configuration--fingerprint.json"}, noEnv, &out, &out)
	is.NoErr(err) // nothing to compare the fingerprint with
	out.Reset()
	err = run(t.Context(), []string{"verify", "--max-age", "1m", "testdata/probe/good.json"}, noEnv, &out, &out)
	is.True(err != nil) // the clock: the seed is older than a minute
	is.Equal(failedBranches(out.String()), []string{branchFreshness})
}

func noEnv(string) string { return "" }

// failedBranches lists the distinct branches of verify's FAIL lines.
func failedBranches(out string) []string {
	seen := map[string]bool{}
	var list []string
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "FAIL ")
		if !ok {
			continue
		}
		b, _, _ := strings.Cut(rest, ":")
		if !seen[b] {
			seen[b] = true
			list = append(list, b)
		}
	}
	sort.Strings(list)
	return list
}

// Path helpers over a decoded JSON document ("a.b.0.c").
func get(d any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := d.(type) {
		case map[string]any:
			d = x[k]
		case []any:
			i, _ := strconv.Atoi(k)
			d = x[i]
		}
	}
	return d
}

func set(d map[string]any, path string, v any) {
	parent, last := splitPath(path)
	switch x := get(d, parent).(type) {
	case map[string]any:
		x[last] = v
	case []any:
		i, _ := strconv.Atoi(last)
		x[i] = v
	}
}

func del(d map[string]any, path string) {
	parent, last := splitPath(path)
	delete(get(d, parent).(map[string]any), last)
}

func splitPath(path string) (string, string) {
	i := strings.LastIndex(path, ".")
	return path[:i], path[i+1:]
}

func clone(v any) any {
	raw, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

func repeat(v any, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = clone(v)
	}
	return out
}

func eachDispatch(d map[string]any, fn func(map[string]any)) {
	for _, ph := range []string{"text", "tools"} {
		for _, q := range get(d, ph+".requests").([]any) {
			for _, u := range q.(map[string]any)["upstream"].([]any) {
				fn(u.(map[string]any))
			}
		}
	}
}

func TestAFailingProbeReportKeepsItsFailuresAndPassesHygiene(t *testing.T) {
	is := is.New(t)
	res, _ := probeProfile(t, "web_session", "observed", false)
	is.Equal(res.report.Verdict, "fail")
	is.Equal(hygiene(res.raw, res.markers), "") // failure sentences are within their pattern
	_, v := verifyReport(res.raw, verifyOptions{now: time.Now(), maxAge: time.Hour, version: version, commit: buildCommit()})
	is.Equal(v.failures[len(v.failures)-1], "verdict: the report does not record a pass without failures") // and refuses it
	is.Equal(v.failures[:len(v.failures)-1], res.report.Failures)                                          // the verifier reaches the probe's own verdict
	for _, f := range []string{"continuation: turn 2: HTTP status 409",
		"hygiene: field text.requests[].upstream[].event_types{} holds a value that looks like an id or a secret",
		"freshness: written 25h0m0s ago, older than --max-age 24h0m0s"} {
		is.Equal(checkString("failures[]", f), "") // every verifier sentence fits a report's failures
	}
}

func TestHygieneTellsIdsFromOrdinaryNames(t *testing.T) {
	is := is.New(t)
	for _, ok := range []string{"gpt-5.5", "task-model", "claude-sonnet-4-5"} {
		is.Equal(checkString("model.public", ok), "") // an ordinary public model id
	}
	for _, bad := range []string{"sk-pmgate-0123", "conv-1a2b", "call_pmn_x", "a1b2c3d4e5f60718", "tc-9", strings.Repeat("Ab1", 14)} {
		is.True(checkString("model.public", bad) != "") // ids, keys and long random runs
	}
}

func TestVerifySaysWhichPartOfTheFingerprintDiffers(t *testing.T) {
	for extra, want := range map[string]string{
		"POSTMAN_MODEL_MAP": "the report's model maps to another upstream enum in POSTMAN_MODEL_MAP",
		"PROVIDER_MODELS":   "the report's model is not in PROVIDER_MODELS / POSTMAN_MODEL_MAP",
		"POSTMAN_WORKSPACE_ID": "the strategy and the report's model match, so the chat host (POSTMAN_WORKSPACE_SUBDOMAIN or POSTMAN_ORIGIN), " +
			"POSTMAN_WORKSPACE_ID, or another entry or observed label of POSTMAN_MODEL_MAP differs",
	} {
		t.Run(extra, func(t *testing.T) {
			is := is.New(t)
			env := map[string]string{
				"POSTMAN_MODEL_MAP":    "pmgate-demo=GPT_54",
				"PROVIDER_MODELS":      "other-model",
				"POSTMAN_WORKSPACE_ID": "another-team",
			}
			if extra == "PROVIDER_MODELS" {
				env["POSTMAN_MODEL_MAP"] = "other-model=GPT_55"
			}
			var out bytes.Buffer
			err := run(t.Context(), []string{"verify", "--now", "2026-12-01T10:00:00Z", "--env-file", "testdata/probe/web_session.env", "testdata/probe/good.json"},
				func(k string) string {
					if k == extra || extra == "PROVIDER_MODELS" && k == "POSTMAN_MODEL_MAP" {
						return env[k]
					}
					return ""
				}, &out, &out)
			is.True(err != nil)
			is.True(strings.Contains(out.String(), "FAIL configuration: the configuration fingerprint differs from the current configuration: "+want))
			is.True(!strings.Contains(out.String(), "another-team")) // names, never values
		})
	}
}
