package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/app"
)

// --measure-pending against the emulator both ways: the service keeping a
// pending tool call after a newer user query in its conversation (kept: the
// call's late result is answered) or dropping it (dropped: the late result is
// answered TOOL_CALL_NOT_FOUND), in four dispatches, the user query having
// gone up in the conversation from the earlier point.
func TestThePendingPhaseTellsKeptFromDroppedAgainstTheEmulator(t *testing.T) {
	for _, c := range []struct {
		strategy string
		kept     bool
		parallel bool // with --measure-parallel in the same probe
	}{
		{"web_session", false, false}, {"web_session", true, true}, {"access_token", false, true}, {"access_token", true, false},
	} {
		want := map[bool]string{false: "dropped", true: "kept"}[c.kept]
		t.Run(c.strategy+"/"+want, func(t *testing.T) {
			is := is.New(t)
			eu, err := startEmulatorUpstream(t.Context(), c.strategy, "0", emulator.ProfileStrict, noEnv, emulatorLimits{pendingKept: c.kept})
			is.NoErr(err)
			t.Cleanup(func() { eu.emu.Close() })
			cfg, err := loadConfig(func(k string) string { return eu.env[k] })
			is.NoErr(err)
			var logs syncBuffer
			res, err := runProbePhases(t.Context(), cfg, probeRun{mode: "emulator", measurePending: true, measureParallel: c.parallel,
				maxQuery: cfg.upstream.MaxQueryChars, log: newLogger(cfg, &logs), opts: eu.opts})
			is.NoErr(err)
			r := res.report
			is.Equal(r.Failures, []string{}) // the phase's evidence verifies
			is.Equal(r.Pending.Result, want)
			is.Equal(r.Pending.UnknownAt, "")
			ph := r.Pending.Phase
			is.Equal(ph.UpstreamDispatches, 4) // one per request: nothing retried
			is.Equal(ph.RefusedDispatches, 0)
			first, query, late := ph.Requests[0], ph.Requests[2], ph.Requests[3]
			is.Equal(first.QueryChars, cfg.upstream.MaxQueryChars-pendingMargin) // fits a fresh conversation
			// The user query did not fit fresh (the gateway refused that itself,
			// sending nothing) and went up in the conversation from the
			// earlier point, disclosed.
			is.Equal(len(query.Upstream), 2)
			is.True(query.Upstream[0].NotSent && query.Upstream[0].ErrorCode == "upstream_query_too_long")
			is.True(query.Upstream[1].ChatType == "USER_QUERY" && query.Upstream[1].ConversationIDPresent)
			is.Equal(query.Disclosure, app.DisclosedFromEarlierPoint)
			d := late.Upstream[0]
			is.True(d.ChatType == "TOOL_RESPONSE" && d.ConversationIDPresent && d.ResultCount == 1)
			if c.kept {
				is.Equal(late.HTTPStatus, 200)
				is.Equal(d.UpstreamErrorType, "")
			} else {
				is.Equal(d.UpstreamErrorType, "TOOL_CALL_NOT_FOUND") // the service's error type, recorded
				is.True(late.HTTPStatus >= 500)
			}
			is.True(strings.Contains(logs.String(), "phase=pending max_upstream_queries=4")) // its cost said first
			is.Equal(hygiene(res.raw, res.markers), "")
			for _, m := range res.markers {
				is.True(!strings.Contains(string(res.raw), m)) // no marker in the report
			}
			var out bytes.Buffer
			printVerdict(&out, r, "probe.json", "sha256:x")
			is.True(strings.Contains(out.String(), "a pending tool call after a newer user query in its conversation: "+want+"\n"))
		})
	}
}

// A query limit with no room for the phase's instruction sends nothing: the
// result is unknown, at query_limit, and the report still verifies.
func TestThePendingPhaseSendsNothingUnderATinyQueryLimit(t *testing.T) {
	is := is.New(t)
	eu, err := startEmulatorUpstream(t.Context(), "access_token", "0", emulator.ProfileStrict, noEnv)
	is.NoErr(err)
	t.Cleanup(func() { eu.emu.Close() })
	cfg, err := loadConfig(func(k string) string { return eu.env[k] })
	is.NoErr(err)
	cfg.upstream.MaxQueryChars = 300 // the tool phase's instruction fits, the pending phase's does not
	var logs syncBuffer
	res, err := runProbePhases(t.Context(), cfg, probeRun{mode: "emulator", measurePending: true, maxQuery: cfg.upstream.MaxQueryChars,
		log: newLogger(cfg, &logs), opts: eu.opts})
	is.NoErr(err)
	p := res.report.Pending
	is.Equal(p.Result, "unknown")
	is.Equal(p.UnknownAt, "query_limit")
	is.True(!p.Phase.Ran && len(p.Phase.Requests) == 0 && p.Phase.UpstreamDispatches == 0)
	_, v := verifyReport(res.raw, verifyOptions{writing: true})
	is.True(!strings.Contains(strings.Join(v.failures, "\n"), branchPending+":")) // consistent evidence
}

// pendingResult names the step that did not go as planned, and decides kept
// or dropped only from the late result's own answer.
func TestThePendingResultFollowsOnlyFromAPlannedRun(t *testing.T) {
	dispatch := func(chatType string, conv bool, outcome, errType string) reportDispatch {
		return reportDispatch{ChatType: chatType, ConversationIDPresent: conv, CallIDsPresent: chatType == "TOOL_RESPONSE",
			ResultCount: map[bool]int{true: 1}[chatType == "TOOL_RESPONSE"], Outcome: outcome, UpstreamErrorType: errType}
	}
	call := func(kind, chatType string, conv bool) reportRequest {
		return reportRequest{Kind: kind, HTTPStatus: 200, FinishReason: "tool_calls", Calls: []reportCall{{Name: "probe_alpha"}},
			Upstream: []reportDispatch{dispatch(chatType, conv, outcomeComplete, "")}}
	}
	planned := func() []reportRequest {
		return []reportRequest{
			call("pending_first_query", "USER_QUERY", false),
			call("pending_first_result", "TOOL_RESPONSE", true),
			{Kind: "pending_user_query", HTTPStatus: 200, FinishReason: "stop", Disclosure: app.DisclosedFromEarlierPoint,
				Upstream: []reportDispatch{{ChatType: "USER_QUERY", NotSent: true, Outcome: "upstream_query_too_long"},
					dispatch("USER_QUERY", true, outcomeComplete, "")}},
			{Kind: "pending_late_result", HTTPStatus: 502, Upstream: []reportDispatch{dispatch("TOOL_RESPONSE", true, "upstream_failure", toolCallNotFound)}},
		}
	}
	for _, c := range []struct {
		name       string
		change     func(r []reportRequest) []reportRequest
		result, at string
	}{
		{"dropped", func(r []reportRequest) []reportRequest { return r }, "dropped", ""},
		{"kept", func(r []reportRequest) []reportRequest {
			r[3] = reportRequest{Kind: "pending_late_result", HTTPStatus: 200, FinishReason: "stop",
				Upstream: []reportDispatch{dispatch("TOOL_RESPONSE", true, outcomeComplete, "")}}
			return r
		}, "kept", ""},
		{"another error type", func(r []reportRequest) []reportRequest {
			r[3].Upstream[0].UpstreamErrorType = "CONVERSATION_NOT_FOUND"
			return r
		}, "unknown", "late_result"},
		{"the late result refused by the budget", func(r []reportRequest) []reportRequest {
			r[3].Upstream[0] = reportDispatch{ChatType: "TOOL_RESPONSE", ConversationIDPresent: true, RefusedByBudget: true, NotSent: true}
			return r
		}, "unknown", "late_result"},
		{"the late result sent twice", func(r []reportRequest) []reportRequest {
			r[3].Upstream = append(r[3].Upstream, r[3].Upstream[0])
			return r
		}, "unknown", "late_result"},
		{"the user query started fresh", func(r []reportRequest) []reportRequest {
			r[2].Disclosure, r[2].Upstream = "", r[2].Upstream[1:]
			r[2].Upstream[0].ConversationIDPresent = false
			return r
		}, "unknown", "user_query"},
		{"the user query answered with a call", func(r []reportRequest) []reportRequest {
			r[2].Calls = []reportCall{{Name: "probe_beta"}}
			return r
		}, "unknown", "user_query"},
		{"no second call", func(r []reportRequest) []reportRequest {
			r[1].FinishReason, r[1].Calls = "stop", []reportCall{}
			return r[:2]
		}, "unknown", "first_result"},
		{"both calls at once", func(r []reportRequest) []reportRequest {
			r[0].Calls = append(r[0].Calls, reportCall{Name: "probe_beta"})
			return r[:1]
		}, "unknown", "first_query"},
		{"the first query refused", func(r []reportRequest) []reportRequest {
			r[0] = reportRequest{Kind: "pending_first_query", HTTPStatus: 400,
				Upstream: []reportDispatch{dispatch("USER_QUERY", false, "upstream_query_too_long", "")}}
			return r[:1]
		}, "unknown", "first_query"},
		{"stopped after the user query", func(r []reportRequest) []reportRequest { return r[:3] }, "unknown", "late_result"},
		{"nothing sent", func([]reportRequest) []reportRequest { return nil }, "unknown", "query_limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			result, at := pendingResult(c.change(planned()))
			is.Equal(result, c.result)
			is.Equal(at, c.at)
		})
	}
}

func TestTheProbesPendingFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"probe", "--emulator", "--measure-pending", "--measure-limits"},
		{"probe", "--emulator", "--measure-pending", "--measure-limits", "--measure-query-unit"},
		{"probe", "--emulator", "--accept-pending", "sometimes"},
		{"probe", "--live", "--accept-pending", "keep"},
	} {
		t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
			is := is.New(t)
			var out bytes.Buffer
			err := run(t.Context(), args, noEnv, &out, &out)
			is.True(errors.Is(err, errUsage)) // refused before anything starts
			is.True(strings.Contains(err.Error(), "pending"))
		})
	}
}

// The service's error type is kept as named when the report's hygiene
// accepts it, and as OTHER when it would look like an id.
func TestTheReportKeepsTheServicesErrorTypeOnly(t *testing.T) {
	is := is.New(t)
	for typ, want := range map[string]string{
		"TOOL_CALL_NOT_FOUND":                          "TOOL_CALL_NOT_FOUND",
		"DEADBEEF0123456789ABCDEF":                     "OTHER", // a hexadecimal run
		"A_VERY_LONG_ERROR_TYPE_NAME_THAT_NEVER_ENDS_": "OTHER", // a run the hygiene takes for a key
	} {
		is.Equal(reportErrorType(typ), want)
	}
	is.Equal(reportErrorType(""), "") // no type named
}
