package emulator_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

func TestHTTPScenariosAnswerWithTheirStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		scenario string
		status   int
		check    func(is *is.I, resp *http.Response, body []byte)
	}{
		{"auth_failure", 401, nil},
		{"forbidden", 403, nil},
		{"rate_limited", 429, func(is *is.I, resp *http.Response, _ []byte) {
			is.Equal(resp.Header.Get("Retry-After"), "7") // retry hint
		}},
		{"redirect", 302, func(is *is.I, resp *http.Response, _ []byte) {
			is.Equal(resp.Header.Get("Location"), "https://example.invalid/login") // login redirect
		}},
		{"server_error", 503, nil},
		{"json_200", 200, func(is *is.I, resp *http.Response, body []byte) {
			is.Equal(resp.Header.Get("Content-Type"), "application/json") // not a stream
			is.True(strings.Contains(string(body), `"error"`))            // an error body
		}},
	}
	for _, tc := range cases {
		for _, web := range []bool{false, true} {
			t.Run(tc.scenario, func(t *testing.T) {
				t.Parallel()
				is := is.New(t)
				s := start(t)
				p := tokenPeer(t, s)
				if web {
					p = webPeer(t, s)
				}
				resp, body := p.post(userQuery("hi #scenario=" + tc.scenario))
				is.Equal(resp.StatusCode, tc.status) // scenario status
				if tc.check != nil {
					tc.check(is, resp, body)
				}
				is.Equal(s.Count(emulator.KindUserQuery), 1) // a scenario is not a rejection
				is.Equal(s.Count(emulator.KindRejected), 0)  // nothing rejected
				rec := s.Requests()[0]
				is.Equal(rec.Scenario, tc.scenario) // recorded scenario
				is.Equal(rec.Status, tc.status)     // recorded status
			})
		}
	}
}

func TestDropAfterRequestClosesTheConnectionWithoutAResponse(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := tokenPeer(t, s)
	resp, err := p.hc.Do(p.request(context.Background(), userQuery("bye #scenario=drop_after_request")))
	if resp != nil {
		resp.Body.Close()
	}
	is.True(err != nil)                                      // no response at all
	is.Equal(s.Count(emulator.KindUserQuery), 1)             // the request was read and recorded
	is.Equal(s.Requests()[0].Status, 0)                      // no status sent
	is.Equal(s.Requests()[0].Scenario, "drop_after_request") // recorded scenario
}

func TestStreamScenarios(t *testing.T) {
	t.Parallel()
	const quota = "Your team has exceeded its monthly AI credit limit by 16%. You'll regain Agent Mode access in 30 days. To continue using Agent Mode without interruption, enable pay-as-you-go"
	cases := []struct {
		scenario string
		web      bool
		shape    []string
		check    func(is *is.I, st stream)
	}{
		{"quota_exhausted", false, []string{"conversation", "failure"}, func(is *is.I, st stream) {
			is.Equal(st.first("failure")["errorType"], "FORBIDDEN") // error type
			is.Equal(st.first("failure")["userMessage"], quota)     // monthly-credit message
		}},
		{"quota_usage_state", true, []string{"conversation", "usage"}, func(is *is.I, st stream) {
			is.Equal(st.first("usage")["usageState"], "EXCEEDED") // quota state
		}},
		{"truncated_frame", false, []string{"conversation", "thinkingChunk", "textChunk"}, func(is *is.I, st stream) {
			is.Equal(st.tail, `data: {"eventType":"textChunk","data":{"textCo`) // half a frame, no newline
		}},
		{"ambiguous_eof", false, []string{"conversation", "thinkingChunk", "textChunk"}, func(is *is.I, st stream) {
			is.Equal(st.tail, "")                                // whole frames
			is.True(strings.HasPrefix(st.text(), greeting+"hi")) // the whole reply
		}},
		{"ambiguous_eof", true, []string{"conversation", "thinkingChunk", "textChunk"}, nil},
		{"empty_stream", false, []string{"conversation", "usage", "[DONE]"}, func(is *is.I, st stream) {
			is.Equal(st.first("usage")["completionTokens"], float64(0)) // no output
		}},
		{"empty_stream", true, []string{"conversation", "usage"}, nil},
		{"failure_after_text", true, []string{"conversation", "textChunk", "failure"}, nil},
		{"unknown_event", false, []string{"conversation", "thinkingChunk", "textChunk", "mysteryEvent", "usage", "[DONE]"}, nil},
		{"model_mismatch", true, []string{"conversation", "usage", "thinkingChunk", "textChunk", "[DONE]"}, func(is *is.I, st stream) {
			for _, d := range st.all("textChunk") {
				is.Equal(label(d), "SOME_OTHER_MODEL") // replaced label
			}
		}},
		{"data_after_done", false, []string{"conversation", "thinkingChunk", "textChunk", "usage", "[DONE]", "textChunk"}, nil},
		{"loop_approval", false, []string{"conversation", "usage", "loopApprovalChunk", "[DONE]"}, func(is *is.I, st stream) {
			is.Equal(st.first("loopApprovalChunk")["message"], "Continue running tools?") // gate message
		}},
		{"loop_approval", true, []string{"conversation", "usage", "loopApprovalChunk"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			s := start(t)
			p := tokenPeer(t, s)
			if tc.web {
				p = webPeer(t, s)
			}
			st := p.turn(userQuery("hi #scenario=" + tc.scenario))
			is.Equal(st.shape(), tc.shape) // scenario stream
			if tc.check != nil {
				tc.check(is, st)
			}
			is.Equal(s.Requests()[0].Scenario, tc.scenario) // recorded
		})
	}
}

func TestToolCallNoIDScenarioOmitsCallIDs(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	st := tokenPeer(t, s).turn(userQuery("#scenario=tool_call_no_id").withTools(true, true, weatherTool, timeTool))
	calls, group := st.calls(t)
	is.Equal(len(calls), 2)                   // still a parallel group
	is.True(strings.HasPrefix(group, "grp-")) // group id kept
	for _, c := range calls {
		is.True(!c.hasID)      // no id on any entry
		is.True(c.chunks >= 2) // still chunked
	}
}

func TestScenarioInToolResultSelectsTheFaultAndKeepsTheGroup(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := webPeer(t, s)
	st := p.turn(userQuery("go").withTools(false, true, weatherTool))
	calls, group := st.calls(t)
	conv := st.conversationID()

	resp, _ := p.post(toolResponse(conv, false, weatherTool).flat(group, result{calls[0].id, "out #scenario=server_error"}))
	is.Equal(resp.StatusCode, http.StatusServiceUnavailable) // directive found in the result content
	is.Equal(s.Requests()[1].Scenario, "server_error")       // recorded
	is.Equal(s.Count(emulator.KindToolResponse), 1)          // counted as a continuation

	st = p.turn(toolResponse(conv, false, weatherTool).flat(group, result{calls[0].id, "fine"}))
	is.Equal(st.text(), "Tool results received: get_weather=fine") // HTTP faults leave the group pending
}

func TestSlowStreamDelaysEveryEvent(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t, func(c *emulator.Config) { c.SlowDelay = 15 * time.Millisecond })
	began := time.Now()
	st := tokenPeer(t, s).turn(userQuery("slowly #scenario=slow_stream"))
	elapsed := time.Since(began)
	is.Equal(st.shape(), []string{"conversation", "thinkingChunk", "textChunk", "usage", "[DONE]"}) // the normal reply
	is.True(elapsed >= time.Duration(len(st.kinds)-1)*15*time.Millisecond)                          // delay between events
}

func TestSlowStreamStopsWhenTheClientGoesAway(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t, func(c *emulator.Config) { c.SlowDelay = 10 * time.Second })
	p := tokenPeer(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := p.hc.Do(p.request(ctx, userQuery("slowly #scenario=slow_stream")))
	is.NoErr(err) // headers arrive at once
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	is.NoErr(err)                                                 // first event arrives at once
	is.True(strings.Contains(line, `"eventType":"conversation"`)) // it is the conversation
	is.Equal(s.ActiveHandlers(), 1)                               // the stream is waiting

	cancel()
	deadline := time.Now().Add(2 * time.Second)
	for s.ActiveHandlers() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	is.Equal(s.ActiveHandlers(), 0) // the handler noticed the cancellation long before SlowDelay
}

func TestCloseEndsOpenStreamsPromptly(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t, func(c *emulator.Config) { c.SlowDelay = 10 * time.Second })
	p := tokenPeer(t, s)
	resp, err := p.hc.Do(p.request(context.Background(), userQuery("slowly #scenario=slow_stream")))
	is.NoErr(err) // stream open
	defer resp.Body.Close()

	began := time.Now()
	is.NoErr(s.Close())                        // closes cleanly
	is.True(time.Since(began) < 2*time.Second) // without waiting for the slow stream
	is.Equal(s.ActiveHandlers(), 0)            // every handler returned
	is.NoErr(s.Close())                        // idempotent
	_, err = p.hc.Do(p.request(context.Background(), userQuery("after close")))
	is.True(err != nil) // nothing listens any more
}

func TestCancellingTheStartContextClosesTheServer(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := emulator.Start(ctx, emulator.Config{WorkspaceID: workspace, AccessToken: token, CADir: t.TempDir()})
	is.NoErr(err) // started
	defer s.Close()
	cancel()
	p := tokenPeer(t, s)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := p.hc.Do(p.request(context.Background(), userQuery("x")))
		if err != nil {
			return // closed
		}
		resp.Body.Close()
		time.Sleep(10 * time.Millisecond)
	}
	is.Fail() // still serving after the context was cancelled
}

func TestScenarioListIsComplete(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	is.Equal(len(emulator.Scenarios()), 41) // every documented scenario
}

// listTool has no parameters: the emulator calls it with {}.
var listTool = map[string]any{"name": "list_files", "description": "List", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}

// Each response-side variant changes exactly what it names, on both strategies.
func TestResponseVariantsShapeTheNormalTurn(t *testing.T) {
	t.Parallel()
	type check func(is *is.I, st stream, web bool)
	// web_session's default order is usage first (the traces), access_token's
	// usage last; both end with [DONE] unless the variant changes it.
	normal := func(web bool) []string {
		if web {
			return []string{"conversation", "usage", "thinkingChunk", "textChunk"}
		}
		return []string{"conversation", "thinkingChunk", "textChunk", "usage"}
	}
	cases := []struct {
		scenario string
		tools    bool
		check    check
	}{
		{"usage_last", false, func(is *is.I, st stream, _ bool) {
			is.Equal(st.shape(), []string{"conversation", "thinkingChunk", "textChunk", "usage", "[DONE]"}) // usage after the output
		}},
		{"usage_absent", false, func(is *is.I, st stream, _ bool) {
			is.Equal(st.shape(), []string{"conversation", "thinkingChunk", "textChunk", "[DONE]"}) // no usage at all
		}},
		{"usage_first", false, func(is *is.I, st stream, _ bool) {
			is.Equal(st.shape(), []string{"conversation", "usage", "thinkingChunk", "textChunk", "[DONE]"}) // usage before the output only
		}},
		{"done_event", false, func(is *is.I, st stream, web bool) {
			want := append(normal(web), "done", "[DONE]") // a done event, then the access-token terminal
			if web {
				want = append(normal(web), "done") // the done event in place of [DONE]
			}
			is.Equal(st.shape(), want)
		}},
		{"no_done_marker", false, func(is *is.I, st stream, web bool) {
			is.Equal(st.shape(), normal(web)) // never [DONE]
		}},
		{"conversation_on_chunk", false, func(is *is.I, st stream, _ bool) {
			is.Equal(st.first("conversation"), nil)                                              // no conversation event
			md := st.first("textChunk")["metadata"].(map[string]any)                             // the first text chunk
			is.True(strings.HasPrefix(md["conversationId"].(string), "conv-"))                   // carries the id
			is.Equal(st.all("textChunk")[1]["metadata"].(map[string]any)["conversationId"], nil) // only the first
		}},
		{"conversation_on_chunk", true, func(is *is.I, st stream, _ bool) {
			is.Equal(st.first("conversation"), nil)                                                   // no conversation event
			is.True(strings.HasPrefix(st.first("toolCallChunk")["conversationId"].(string), "conv-")) // data.conversationId of the tool chunk
		}},
		{"late_tool_name", true, func(is *is.I, st stream, _ bool) {
			chunks := st.all("toolCallChunk")
			is.Equal(len(chunks), 2)
			fn := func(i int) map[string]any {
				return chunks[i]["toolCalls"].([]any)[0].(map[string]any)["function"].(map[string]any)
			}
			_, named := fn(0)["name"]
			is.True(!named)                       // the first chunk has no name
			is.Equal(fn(1)["name"], "list_files") // the second names the call
		}},
		{"empty_arguments", true, func(is *is.I, st stream, _ bool) {
			var args string
			for _, c := range st.all("toolCallChunk") {
				args += c["toolCalls"].([]any)[0].(map[string]any)["function"].(map[string]any)["arguments"].(string)
			}
			is.Equal(args, "") // "" instead of {}
		}},
	}
	for _, tc := range cases {
		for _, web := range []bool{true, false} {
			t.Run(tc.scenario, func(t *testing.T) {
				t.Parallel()
				is := is.New(t)
				s := start(t)
				p := tokenPeer(t, s)
				if web {
					p = webPeer(t, s)
				}
				q := userQuery("a longer greeting so that the reply is cut into several chunks #scenario=" + tc.scenario)
				if tc.tools {
					q = q.withTools(false, true, listTool)
				}
				tc.check(is, p.turn(q), web)
			})
		}
	}
}

// The observed profile answers like the projects' fixtures, and a continuation
// stream names no conversation.
func TestObservedProfile(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t, func(c *emulator.Config) { c.Profile = emulator.ProfileObserved })
	for _, p := range []*peer{webPeer(t, s), tokenPeer(t, s)} {
		st := p.turn(userQuery("go #loop=2").withTools(false, true, listTool))
		is.Equal(st.shape(), []string{"thinkingChunk", "toolCallChunk"}) // no conversation event, no usage, no [DONE]
		first := st.first("toolCallChunk")
		conv := first["conversationId"].(string)
		entry := first["toolCalls"].([]any)[0].(map[string]any)
		_, named := entry["function"].(map[string]any)["name"]
		is.True(!named) // the name comes late
		cont := toolResponse(conv, false, listTool).flat(entry["toolCallGroupId"].(string), result{entry["id"].(string), "files"})
		st = p.turn(cont)
		is.Equal(st.shape(), []string{"thinkingChunk", "toolCallChunk"}) // the next round
		is.Equal(st.first("toolCallChunk")["conversationId"], nil)       // a continuation stream names no conversation
	}
}

func TestUnknownProfileIsRefused(t *testing.T) {
	is := is.New(t)
	_, err := emulator.Start(t.Context(), emulator.Config{WorkspaceID: "w", AccessToken: "t", Profile: "lenient"})
	is.True(err != nil) // unknown profile
	is.Equal(emulator.Profiles(), []string{"done_event", "forbid_schemas", "observed", "strict", "usage_last_eof"})
}

// The gate as the note describes it: after N consecutive tool rounds the
// answer to a TOOL_RESPONSE is usage, the loopApprovalChunk (with the counter
// and the threshold) and the profile's clean end; the results are consumed (a
// re-sent TOOL_RESPONSE is TOOL_CALL_NOT_FOUND); a later USER_QUERY on the same
// conversation goes on normally, with the counter of consecutive rounds reset.
// N comes from Config.LoopApprovalAfter or from "#approval_after=N".
func TestTheLoopApprovalGateFollowsTheNote(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		cfg       int
		directive string
		n         int
	}{{"config", 2, "", 2}, {"directive", 0, " #approval_after=2", 2}, {"directive over config", 1, " #approval_after=2", 2}} {
		s := start(t, func(cfg *emulator.Config) { cfg.LoopApprovalAfter = c.cfg })
		for _, p := range []*peer{webPeer(t, s), tokenPeer(t, s)} {
			t.Run(c.name+"/"+p.strategy, func(t *testing.T) {
				is := is.New(t)
				// the metadata, then a clean [DONE] on both strategies (ps2Api
				// stream.go streamInternal: the gate ends like the other
				// metadata-only streams, measured)
				end := []string{"conversation", "usage", "loopApprovalChunk", "[DONE]"}
				st := p.turn(userQuery("go #loop=5"+c.directive).withTools(false, true, weatherTool))
				conv := st.conversationID()
				var cont body
				for round := 1; ; round++ {
					calls, group := st.calls(t)
					cont = toolResponse(conv, false, weatherTool).flat(group, result{calls[0].id, "x"})
					st = p.turn(cont)
					if round == c.n {
						break
					}
					is.True(len(st.all("toolCallChunk")) > 0) // rounds before N are tool rounds
				}
				is.Equal(st.shape(), end) // after N rounds: usage, the gate, the clean end
				gate := st.first("loopApprovalChunk")
				is.Equal(gate["counters"], map[string]any{"toolRounds": float64(c.n)})   // the consecutive rounds
				is.Equal(gate["thresholds"], map[string]any{"toolRounds": float64(c.n)}) // and the threshold
				again := p.turn(cont)
				is.Equal(again.first("failure")["errorType"], "TOOL_CALL_NOT_FOUND") // the results were consumed
				next := userQuery("go on #loop=5"+c.directive).withTools(false, true, weatherTool)
				next.input()["conversationId"] = conv
				st = p.turn(next)
				is.True(len(st.all("toolCallChunk")) > 0) // the conversation goes on: a tool round, not the gate
				calls, group := st.calls(t)
				st = p.turn(toolResponse(conv, false, weatherTool).flat(group, result{calls[0].id, "y"}))
				if c.n > 1 {
					is.True(len(st.all("toolCallChunk")) > 0) // the counter was reset by the user turn
				}
			})
		}
	}
}

// After N tool rounds the next round is the loop-approval gate.
func TestLoopApprovalAfterRounds(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t, func(c *emulator.Config) { c.LoopApprovalAfter = 1 })
	p := webPeer(t, s)
	st := p.turn(userQuery("go #loop=3").withTools(false, true, weatherTool))
	calls, group := st.calls(t)
	st = p.turn(toolResponse(st.conversationID(), false, weatherTool).flat(group, result{calls[0].id, "x"}))
	is.Equal(st.shape(), []string{"conversation", "usage", "loopApprovalChunk", "[DONE]"}) // the gate instead of round 2
	resp, _ := p.post(userQuery("go #approval_after=9"))
	is.Equal(resp.StatusCode, http.StatusBadRequest) // 1-5 only
}

// A client that re-sends a whole conversation as a fresh one repeats its
// earlier user turns in the transcript the gateway renders; only the newest
// user turn's directives apply, so a failure asked for in turn 1 is not
// replayed in turn 2, while the same directive in the newest turn still is.
func TestOnlyTheNewestUserTurnsDirectivesApply(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, p := range []*peer{webPeer(t, s), tokenPeer(t, s)} {
		t.Run(p.strategy, func(t *testing.T) {
			is := is.New(t)
			earlier := "[System]\nbe brief\n\n[User]\nfirst #scenario=failure_after_text #loop=0\n\n[Assistant]\nHello\n\n[User name=ann]\nsecond"
			st := p.turn(userQuery(earlier))
			is.Equal(st.first("failure"), nil)                                                 // turn 1's scenario does not apply again
			is.True(strings.Contains(st.text(), "[User]\nfirst #scenario=failure_after_text")) // the reply quotes the transcript as usual
			newest := "[User]\nfirst\n\n[Assistant]\nHello\n\n[User]\nsecond #scenario=failure_after_text"
			st = p.turn(userQuery(newest))
			is.True(st.first("failure") != nil) // the newest turn's directive applies
			tools := "[User]\nfirst #loop=0\n\n[Assistant]\nHello\n\n[User]\nsecond #loop=1"
			st = p.turn(userQuery(tools).withTools(false, true, weatherTool))
			is.True(len(st.all("toolCallChunk")) > 0) // #loop=0 of turn 1 is ignored: the newest turn's #loop=1 asks for tools
			plain := "just one message #scenario=failure_after_text"
			st = p.turn(userQuery(plain))
			is.True(st.first("failure") != nil) // a single user message is its own newest turn
			oneTurn := "[User]\nlook around #loop=0\n\n[User]\n<system-reminder>be careful</system-reminder>"
			st = p.turn(userQuery(oneTurn).withTools(false, true, weatherTool))
			is.Equal(len(st.all("toolCallChunk")), 0) // a prompt and a reminder after it are one turn: its #loop=0 applies
			later := "[User]\nfirst #loop=0\n\n[Assistant]\nHello\n\n[User]\nsecond #scenario=failure_after_text\n\n[User]\n<system-reminder>x</system-reminder>"
			st = p.turn(userQuery(later))
			is.True(st.first("failure") != nil) // every user block after the last answer is the newest turn
		})
	}
}

// Usage per request counts one exchange; usage per conversation (Config or
// "#usage=conversation") reports the conversation's context, whose prompt
// tokens grow with every exchange, as Codex expects when it decides to
// compact.
func TestUsagePerRequestOrPerConversation(t *testing.T) {
	t.Parallel()
	tokens := func(st stream) (prompt, total float64) {
		u := st.all("usage")
		last := u[len(u)-1]
		return last["promptTokens"].(float64), last["totalTokens"].(float64)
	}
	for _, c := range []struct {
		name, cfg, directive string
		grows                bool
	}{
		{"default", "", "", false}, {"config", emulator.UsagePerConversation, "", true},
		{"directive", "", " #usage=conversation", true}, {"directive over config", emulator.UsagePerConversation, " #usage=request", false},
	} {
		s := start(t, func(cfg *emulator.Config) { cfg.Usage = c.cfg })
		for _, p := range []*peer{webPeer(t, s), tokenPeer(t, s)} {
			t.Run(c.name+"/"+p.strategy, func(t *testing.T) {
				is := is.New(t)
				st := p.turn(userQuery("go #loop=1"+c.directive).withTools(false, true, weatherTool))
				_, firstTotal := tokens(st)
				calls, group := st.calls(t)
				cont := toolResponse(st.conversationID(), false, weatherTool).flat(group, result{calls[0].id, "x"})
				raw, err := json.Marshal(cont)
				is.NoErr(err)
				own := float64((len(raw) + 3) / 4) // this exchange's body, as the emulator counts it
				st = p.turn(cont)
				prompt, _ := tokens(st)
				if c.grows {
					is.Equal(prompt, firstTotal+own) // the context: the first exchange, then this one's body
				} else {
					is.Equal(prompt, own) // one exchange: its body alone
				}
			})
		}
	}
	is := is.New(t)
	s := start(t)
	resp, _ := webPeer(t, s).post(userQuery("go #usage=forever"))
	is.Equal(resp.StatusCode, http.StatusBadRequest) // request or conversation only
	_, err := emulator.Start(t.Context(), emulator.Config{WorkspaceID: "w", AccessToken: "t", Usage: "sometimes"})
	is.True(err != nil) // the Config is checked too
}

// The gate counts consecutive tool rounds: a user turn between them starts a
// new count, even when no gate came.
func TestAUserTurnRestartsTheLoopApprovalCount(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t, func(c *emulator.Config) { c.LoopApprovalAfter = 2 })
	p := webPeer(t, s)
	st := p.turn(userQuery("go #loop=1").withTools(false, true, weatherTool))
	conv := st.conversationID()
	calls, group := st.calls(t)
	st = p.turn(toolResponse(conv, false, weatherTool).flat(group, result{calls[0].id, "x"}))
	is.Equal(len(st.all("toolCallChunk")), 0) // one round, then the answer: no gate
	next := userQuery("again #loop=3").withTools(false, true, weatherTool)
	next.input()["conversationId"] = conv
	st = p.turn(next)
	calls, group = st.calls(t)
	st = p.turn(toolResponse(conv, false, weatherTool).flat(group, result{calls[0].id, "y"}))
	is.True(len(st.all("toolCallChunk")) > 0) // the second consecutive round of this turn: still no gate
	calls, group = st.calls(t)
	st = p.turn(toolResponse(conv, false, weatherTool).flat(group, result{calls[0].id, "z"}))
	is.True(st.first("loopApprovalChunk") != nil) // after two consecutive rounds: the gate
}

// What a USER_QUERY does to a pending tool group is not measured on the
// service: by default it abandons the group (its answer afterwards fails with
// TOOL_CALL_NOT_FOUND); Config.PendingOnQuery "keep", or "#pending=keep" in a
// USER_QUERY (for that conversation from then on), keeps it answerable once.
func TestAUserQueryDropsOrKeepsThePendingGroup(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, cfg, directive string
		kept                 bool
	}{
		{"default", "", "", false},
		{"config keep", emulator.PendingKept, "", true},
		{"directive keep", "", " #pending=keep", true},
		{"directive drop over config", emulator.PendingKept, " #pending=drop", false},
	} {
		s := start(t, func(cfg *emulator.Config) { cfg.PendingOnQuery = c.cfg })
		for _, p := range []*peer{webPeer(t, s), tokenPeer(t, s)} {
			t.Run(c.name+"/"+p.strategy, func(t *testing.T) {
				is := is.New(t)
				st := p.turn(userQuery("go #loop=2"+c.directive).withTools(false, true, weatherTool))
				conv := st.conversationID()
				calls, group := st.calls(t)
				// a user turn that goes past the pending group, answered with text
				q := userQuery("summarise so far #loop=0").withTools(false, true, weatherTool)
				q.input()["conversationId"] = conv
				is.Equal(len(p.turn(q).all("toolCallChunk")), 0)
				is.Equal(len(p.turn(q).all("toolCallChunk")), 0) // a second one (Claude Code may send two summaries)
				late := toolResponse(conv, false, weatherTool).flat(group, result{calls[0].id, "late-result"})
				st = p.turn(late)
				if !c.kept {
					is.Equal(st.first("failure")["errorType"], "TOOL_CALL_NOT_FOUND") // the group was abandoned
					return
				}
				is.Equal(st.first("failure"), nil)                                          // the late answer is taken
				is.True(strings.Contains(st.text(), "late-result"))                         // and quoted
				is.Equal(p.turn(late).first("failure")["errorType"], "TOOL_CALL_NOT_FOUND") // once
			})
		}
	}
}
