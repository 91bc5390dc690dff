package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

func TestProbeRefusesToRunWithoutLive(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	err := run(t.Context(), []string{"probe"}, noEnv, &out, &out)
	is.True(errors.Is(err, errUsage)) // nothing is sent without --live
	is.True(strings.Contains(err.Error(), "--live"))
	err = run(t.Context(), []string{"probe", "--live", "--emulator"}, noEnv, &out, &out)
	is.True(errors.Is(err, errUsage))
}

// probeEmulator runs the emulator probe for one strategy and returns the
// result with the configuration's secrets.
func probeEmulator(t *testing.T, strategy string, measure bool) (probeResult, config) {
	return probeProfile(t, strategy, emulator.ProfileStrict, measure)
}

func probeProfile(t *testing.T, strategy, profile string, measure bool) (probeResult, config) {
	t.Helper()
	is := is.New(t)
	eu, err := startEmulatorUpstream(t.Context(), strategy, "0", profile, noEnv)
	is.NoErr(err)
	t.Cleanup(func() { eu.emu.Close() })
	cfg, err := loadConfig(func(k string) string { return eu.env[k] })
	is.NoErr(err)
	var logs syncBuffer
	res, err := runProbePhases(t.Context(), cfg, probeRun{mode: "emulator", measure: measure, maxQuery: 10000,
		log: newLogger(cfg, &logs), opts: eu.opts})
	is.NoErr(err)
	return res, cfg
}

func TestTheProbePassesAgainstTheEmulatorInBothStrategies(t *testing.T) {
	for _, strategy := range []string{"web_session", "access_token"} {
		t.Run(strategy, func(t *testing.T) {
			is := is.New(t)
			res, cfg := probeEmulator(t, strategy, true)
			r := res.report
			is.Equal(r.Failures, []string{}) // every branch holds
			is.Equal(r.Verdict, "pass")
			if strategy == "web_session" {
				// parallel calling is off on web_session: one tool per turn, and
				// the second turn asks for the missing one
				is.Equal(r.Tools.GatewayRequests, 3)
				is.Equal(r.Tools.UpstreamDispatches, 3)
				is.Equal(len(r.Tools.Requests[0].Calls), 1)
				is.True(r.Tools.Requests[1].AskedMissingTool)
			} else {
				is.Equal(r.Tools.GatewayRequests, 2)        // initial turn + one continuation
				is.Equal(r.Tools.UpstreamDispatches, 2)     // one dispatch each
				is.Equal(len(r.Tools.Requests[0].Calls), 2) // both tools in one parallel group
			}
			last := r.Tools.Requests[len(r.Tools.Requests)-1]
			is.True(last.ExactMarkerLine) // ALPHA=<marker>;BETA=<marker>, exactly
			cont := last.Upstream[0]
			is.Equal(cont.ChatType, "TOOL_RESPONSE")
			is.True(cont.ConversationIDPresent && cont.CallIDsPresent && cont.ResultCount > 0)
			is.True(len(cont.EventTypes) > 0)           // the adapter's summary reached the report
			is.Equal(cont.Outcome, "complete")          // as the adapter judged it
			is.True(cont.WouldComplete[r.TerminalRule]) // the configured rule completes it
			is.True(len(cont.TerminalEvidence) > 0)
			is.True(r.Limits != nil && r.Limits.LongestAcceptedChars == 10000)
			lc := r.Limits.Phase.Requests[len(r.Limits.Phase.Requests)-1]
			is.Equal(r.Limits.Continuation, "accepted")   // continuity sends only the new message
			is.True(lc.Upstream[0].ConversationIDPresent) // on the stored conversation
			is.True(r.Shutdown.Clean)

			// Never content, markers, ids, workspace, cookie or token.
			for _, s := range append(append(cfg.upstream.Secrets(), cfg.apiKey, cfg.upstream.WorkspaceID), res.markers...) {
				is.True(!bytes.Contains(res.raw, []byte(s))) // a secret or marker leaked
			}
			is.Equal(hygiene(res.raw, nil), "")
			for _, word := range []string{"connectivity", "Hello", "emulator said", "conv-", "grp-", "tc-", "call_pmn_"} {
				is.True(!bytes.Contains(res.raw, []byte(word))) // no content, no id
			}
		})
	}
}

func TestProbeCommandWritesReportsThatVerifyAccepts(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	var out bytes.Buffer
	is.NoErr(run(t.Context(), []string{"probe", "--emulator", "--out", filepath.Join(dir, "p.json")}, noEnv, &out, &out))
	is.True(strings.Contains(out.String(), "PASS  report"))
	for _, s := range []string{"web_session", "access_token"} {
		path := filepath.Join(dir, "p."+s+".json")
		_, err := os.Stat(path)
		is.NoErr(err)
		_, err = os.Stat(macPath(path))
		is.True(errors.Is(err, os.ErrNotExist)) // no MAC: an emulator report never verifies a serving gateway
		out.Reset()
		is.NoErr(run(t.Context(), []string{"verify", path}, noEnv, &out, &out)) // the closure gate agrees
	}
	entries, err := os.ReadDir(dir)
	is.NoErr(err)
	is.Equal(len(entries), 2) // exactly the two reports the help names, nothing else
	// The web_session report matches the seeded configuration's fingerprint.
	out.Reset()
	is.NoErr(run(t.Context(), []string{"verify", "--env-file", "testdata/probe/web_session.env", filepath.Join(dir, "p.web_session.json")}, noEnv, &out, &out))
}

// countingFake is an upstream that counts the calls that reached it.
type countingFake struct{ calls int }

func (f *countingFake) Chat(context.Context, ports.UpstreamRequest) (ports.Stream, error) {
	f.calls++
	return nil, errs.Newf(errs.UpstreamServerError, "fake")
}

func TestTheDispatchBeyondTheBudgetIsRefusedBeforeItIsSent(t *testing.T) {
	is := is.New(t)
	fake := &countingFake{}
	pu := &probeUpstream{next: fake}
	pu.begin(4)
	req := ports.UpstreamRequest{Chat: chat.Request{Model: "m"}}
	for range 4 {
		_, err := pu.Chat(t.Context(), req)
		is.True(errs.Has(err, errs.UpstreamServerError)) // sent, and the fake answered
	}
	_, err := pu.Chat(t.Context(), req)
	is.True(errors.Is(err, ports.ErrNotSent)) // the 5th is refused, marked not sent
	is.Equal(fake.calls, 4)                   // and never reached the upstream
	d, refused := pu.counts()
	is.Equal(d, 4)
	is.Equal(refused, 1)
	got := pu.take()
	is.Equal(len(got), 5)
	is.True(got[4].RefusedByBudget)
}

func TestProbeLiveUsesTheServeConfigurationAndWritesAReportVerifyAccepts(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	env := map[string]string{"PROVIDER_API_KEY": testKey, "PROVIDER_MODELS": testModel, "POSTMAN_TRANSPORT_STRATEGY": "web_session",
		"POSTMAN_SESSION_COOKIE": testCookie, "POSTMAN_WORKSPACE_SUBDOMAIN": testSubdomain, "POSTMAN_WORKSPACE_ID": testWorkspace,
		"POSTMAN_MODEL_MAP": testModel + "=GPT_55", "PROVIDER_PORT": "1"} // the probe never binds the configured port
	getenv := func(k string) string { return env[k] }
	out := filepath.Join(t.TempDir(), "live.json")
	var stdout, stderr bytes.Buffer
	upstream := []postman.Option{postman.WithRootCAs(emu.CertPool()),
		postman.WithDialContext(func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, emu.Addr())
		})}
	err := program{getenv: getenv, stdout: &stdout, stderr: &stderr, upstream: upstream}.run(t.Context(), []string{"probe", "--live", "--out", out})
	is.NoErr(err) // exit 0 only on pass
	is.True(strings.Contains(stdout.String(), "pmgate probe (live, web_session"))
	raw, err := os.ReadFile(out)
	is.NoErr(err)
	for _, s := range []string{testKey, testCookie, testWorkspace} {
		is.True(!bytes.Contains(raw, []byte(s))) // no secret, no workspace
		is.True(!strings.Contains(stderr.String(), s))
	}
	var r probeReport
	is.NoErr(json.Unmarshal(raw, &r))
	is.Equal(r.Mode, "live")
	is.Equal(emu.Count(emulator.KindUserQuery), 2)    // the text turn and the tool loop's first turn
	is.Equal(emu.Count(emulator.KindToolResponse), 2) // one tool per turn on web_session, then the answer
	stdout.Reset()
	is.NoErr(run(t.Context(), []string{"verify", "--require-observed-model", out}, getenv, &stdout, &stdout))
}

func TestTheProbeSettlesWhichCompletionRuleFitsTheUpstreamsStreams(t *testing.T) {
	is := is.New(t)
	// Streams like the public projects' fixtures (no usage, no [DONE]): the
	// default web_session rule cannot prove them, and the report says so.
	res, _ := probeProfile(t, "web_session", emulator.ProfileObserved, false)
	b := verdict{res.report.Failures}.branches()
	is.Equal(res.report.Verdict, "fail")
	is.True(slices.Contains(b, branchRule)) // the configured rule would not have completed them
	is.True(slices.Contains(b, branchText))
	d := res.report.Text.Requests[0].Upstream[0]
	is.Equal(d.Outcome, "upstream_completion_ambiguous")
	is.Equal(d.TerminalEvidence, []string{}) // no terminal evidence at all
	is.True(!d.WouldComplete["usage_after_output_v1"] && !d.WouldComplete["explicit_only"])
	is.Equal(d.EventTypes["usage"], 0)

	// A done event after the output is an explicit end under every web rule.
	res, _ = probeProfile(t, "web_session", emulator.ProfileDoneEvent, false)
	is.Equal(res.report.Verdict, "pass")
	d = res.report.Text.Requests[0].Upstream[0]
	is.True(slices.Contains(d.TerminalEvidence, "done_event"))
	is.True(d.WouldComplete["explicit_only"] && d.WouldComplete["usage_after_output_v1"])
}

// The opt-in phases of issue 36 item 8 against the emulator: the query unit
// (one astral query inside the limits phase's bracket), one parallel group
// answered with toolResponses[] and its group id, and, at no cost, every
// stream's usage position and fields and every answer's rate-limit headers.
func TestTheMeasurementPhasesAgainstTheEmulator(t *testing.T) {
	for _, c := range []struct {
		name, strategy string
		accept         emulatorLimits
		unit           string
	}{
		{"web_session utf16", "web_session", emulatorLimits{rateLimit: 30}, "utf16_units"},
		{"web_session code points", "web_session", emulatorLimits{queryCodePoints: true}, "code_points"},
		{"access_token", "access_token", emulatorLimits{}, "utf16_units"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			eu, err := startEmulatorUpstream(t.Context(), c.strategy, "0", emulator.ProfileStrict, noEnv, c.accept)
			is.NoErr(err)
			t.Cleanup(func() { eu.emu.Close() })
			cfg, err := loadConfig(func(k string) string { return eu.env[k] })
			is.NoErr(err)
			var logs syncBuffer
			res, err := runProbePhases(t.Context(), cfg, probeRun{mode: "emulator", measure: true, measureUnit: true, measureParallel: true,
				maxQuery: 10000, maxTools: 20, log: newLogger(cfg, &logs), opts: eu.opts})
			is.NoErr(err)
			r := res.report
			is.Equal(r.Failures, []string{}) // the new phases verify
			is.Equal(r.Verdict, "pass")
			is.Equal(r.QueryUnit.Result, c.unit)                       // the unit the emulated service counts
			is.Equal(r.QueryUnit.UTF16Units, 2*r.QueryUnit.CodePoints) // astral characters
			is.Equal(r.QueryUnit.CodePoints, r.Limits.LongestAcceptedChars)
			is.Equal(r.Parallel.Result, "accepted") // the array with its group id
			cont := r.Parallel.Phase.Requests[1].Upstream[0]
			is.True(cont.GroupIDPresent && cont.ResultCount == 2) // both results in one TOOL_RESPONSE
			text := r.Text.Requests[0].Upstream[0]
			want := "after_output" // access_token: usage after the output
			if c.strategy == "web_session" {
				want = "before_output" // the traced web order
			}
			is.Equal(text.UsagePosition, want)
			is.True(slices.Contains(text.UsageFields, "usageState"))
			is.Equal(text.RateLimit.Headers, c.accept.rateLimit > 0) // recorded when the answer carried them
			if c.accept.rateLimit > 0 {
				is.Equal(text.RateLimit, reportRateLimit{Headers: true, Limit: 30, Remaining: 29, WindowS: 60})
			}
			for _, phase := range []string{"text", "tools", "limits", "query unit", "parallel"} {
				is.True(strings.Contains(logs.String(), `phase=`+strconv.Quote(phase)) || strings.Contains(logs.String(), "phase="+phase)) // each phase said its cost first
			}
			for _, m := range res.markers {
				is.True(!strings.Contains(string(res.raw), m)) // no marker in the report
			}
		})
	}
}
