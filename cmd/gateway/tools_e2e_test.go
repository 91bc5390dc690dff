package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

const toolsJSON = `[{"type":"function","function":{"name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},` +
	`{"type":"function","function":{"name":"get_time","description":"Time in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`

type msg = map[string]any

type completion struct {
	Choices []struct {
		Message struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

func chatBody(t *testing.T, model string, messages []msg, tools string, extra string) string {
	t.Helper()
	m, err := json.Marshal(messages)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"model":%q,"messages":%s,"tools":%s%s}`, model, m, tools, extra)
}

// turnResult posts and decodes a JSON chat completion or error.
// header pairs are passed to post (e.g. another key's Authorization).
func turnResult(t *testing.T, s *served, body string, header ...string) (int, completion, errorBody) {
	t.Helper()
	resp := s.post(t, body, header...)
	var c completion
	var e errorBody
	raw := new(strings.Builder)
	_, _ = fmt.Fprint(raw, "")
	dec := json.NewDecoder(resp.Body)
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(v, &c); err != nil {
			t.Fatal(err)
		}
	} else if err := json.Unmarshal(v, &e); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, c, e
}

// assistantAndResults echoes the assistant turn and answers every call.
func assistantAndResults(c completion, result func(name string) string) []msg {
	m := c.Choices[0].Message
	var calls []msg
	var out []msg
	for _, tc := range m.ToolCalls {
		calls = append(calls, msg{"id": tc.ID, "type": "function", "function": msg{"name": tc.Function.Name, "arguments": tc.Function.Arguments}})
	}
	out = append(out, msg{"role": "assistant", "content": m.Content, "tool_calls": calls})
	for _, tc := range m.ToolCalls {
		out = append(out, msg{"role": "tool", "tool_call_id": tc.ID, "content": result(tc.Function.Name)})
	}
	return out
}

func sunny(name string) string { return "sunny for " + name }

// parallelCases are the ways a client's parallel_tool_calls meets the
// strategy's POSTMAN_PARALLEL_TOOL_CALLS: web_session asks for parallel calls
// only with the setting on; access_token follows the client unless it is set.
var parallelCases = []struct {
	strategy string
	client   bool
	setting  string
	want     int // calls per group
}{
	{"web_session", true, "", 1},
	{"web_session", false, "", 1},
	{"web_session", false, "true", 2},
	{"access_token", true, "", 2},
	{"access_token", false, "", 1},
	{"access_token", true, "false", 1},
}

func TestTheToolLoopRunsToItsFinalAnswer(t *testing.T) {
	for _, pc := range parallelCases {
		st, parallel := pc.strategy, pc.client
		t.Run(fmt.Sprintf("%s/parallel=%v/setting=%q", st, parallel, pc.setting), func(t *testing.T) {
			is := is.New(t)
			var env map[string]string
			if pc.setting != "" {
				env = map[string]string{"POSTMAN_PARALLEL_TOOL_CALLS": pc.setting}
			}
			s := serve(t, st, env)
			history := []msg{{"role": "user", "content": "weather and time please #loop=2"}}
			extra := fmt.Sprintf(`,"parallel_tool_calls":%v`, parallel)
			status, c, e := turnResult(t, s, chatBody(t, testModel, history, toolsJSON, extra))
			is.Equal(status, 200) // the first turn asks for tools
			is.Equal(e.Error.Code, "")
			for round := 1; ; round++ {
				calls := c.Choices[0].Message.ToolCalls
				is.Equal(c.Choices[0].FinishReason, "tool_calls")
				is.Equal(len(calls), pc.want) // a parallel group of two only when the flag is on
				for _, tc := range calls {
					is.True(strings.HasPrefix(tc.ID, "call_pmn_"))           // public ids only
					is.True(json.Valid([]byte(tc.Function.Arguments)))       // exact argument JSON
					is.True(strings.Contains(tc.Function.Arguments, "city")) // from the schema
				}
				history = append(history, assistantAndResults(c, sunny)...)
				status, c, e = turnResult(t, s, chatBody(t, testModel, history, toolsJSON, extra))
				is.Equal(status, 200) // each continuation is accepted
				if c.Choices[0].FinishReason == "stop" {
					is.Equal(round, 2)                                                                // two rounds, then the answer
					is.True(strings.Contains(*c.Choices[0].Message.Content, "sunny for get_weather")) // quoting the results
					break
				}
			}
			is.Equal(s.emu.Count(emulator.KindToolResponse), 2)  // exactly one TOOL_RESPONSE per round
			is.Equal(s.emu.Count(emulator.KindRepeatedGroup), 0) // every group was answered in the form its flag asks for
			is.Equal(s.emu.Count(emulator.KindRejected), 0)      // and every body accepted
		})
	}
}

// pending issues one tool group and returns the history and the continuation.
func pending(t *testing.T, s *served, text string) (history []msg, cont []msg, c completion) {
	t.Helper()
	history = []msg{{"role": "user", "content": text}}
	status, c, e := turnResult(t, s, chatBody(t, testModel, history, toolsJSON, ""))
	if status != 200 {
		t.Fatalf("tool turn: %d %s", status, e.Error.Code)
	}
	return history, append(append([]msg(nil), history...), assistantAndResults(c, sunny)...), c
}

func TestEachValidationStepIsRefusedWithoutDispatch(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			s := serve(t, st, map[string]string{"PROVIDER_MODELS": testModel + ",other-model", "POSTMAN_MODEL_MAP": testModel + "=GPT_55,other-model=GPT_55",
				"POSTMAN_PARALLEL_TOOL_CALLS": "true"}) // groups of two calls on both strategies
			_, cont, _ := pending(t, s, "first")
			_, cont2, _ := pending(t, s, "second")
			n := len(cont)
			cases := []struct {
				name   string
				msgs   []msg
				model  string
				tools  string
				status int
				code   string
			}{
				{"unknown id", append(append([]msg(nil), cont[:n-2]...), msg{"role": "tool", "tool_call_id": "call_pmn_forged", "content": "x"}, cont[n-1]), testModel, toolsJSON, 404, "unknown_tool_call"},
				{"mixed groups", append(append([]msg(nil), cont[:n-1]...), cont2[len(cont2)-1]), testModel, toolsJSON, 400, "tool_result_group_mismatch"},
				{"duplicate result", append(append([]msg(nil), cont...), cont[n-1]), testModel, toolsJSON, 400, "tool_result_group_mismatch"},
				{"missing result", cont[:n-1], testModel, toolsJSON, 400, "tool_result_incomplete"},
				{"misplaced result", append(append(append([]msg(nil), cont[:n-1]...), msg{"role": "user", "content": "also"}), cont[n-2:]...), testModel, toolsJSON, 400, "tool_result_group_mismatch"},
				{"changed call", changedCall(t, cont), testModel, toolsJSON, 409, "continuation_history_mismatch"},
				{"other model", cont, "other-model", toolsJSON, 409, "continuation_model_mismatch"},
				{"other tools", cont, testModel, strings.Replace(toolsJSON, "Weather for a city", "Weather", 1), 409, "continuation_tools_mismatch"},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					is := is.New(t)
					status, _, e := turnResult(t, s, chatBody(t, c.model, c.msgs, c.tools, ""))
					is.Equal(status, c.status)     // the step's status
					is.Equal(e.Error.Code, c.code) // and stable code
				})
			}
			is := is.New(t)
			is.Equal(s.emu.Count(emulator.KindToolResponse), 0) // nothing was dispatched
			status, _, _ := turnResult(t, s, chatBody(t, testModel, cont, toolsJSON, ""))
			is.Equal(status, 200) // and the group is still pending: the valid continuation succeeds
		})
	}
}

func TestConsumedExpiredAndUncertainGroupsAnswerWithTheirRows(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, map[string]string{"CORRELATION_PENDING_TTL_MS": "1000"})
			_, cont, _ := pending(t, s, "replay me")
			status, first, _ := turnResult(t, s, chatBody(t, testModel, cont, toolsJSON, ""))
			is.Equal(status, 200)
			status, again, _ := turnResult(t, s, chatBody(t, testModel, cont, toolsJSON, ""))
			is.Equal(status, 200)                                                          // a replay of a consumed group
			is.Equal(*again.Choices[0].Message.Content, *first.Choices[0].Message.Content) // returns the cached answer
			conflict := append(append([]msg(nil), cont[:len(cont)-1]...), msg{"role": "tool", "tool_call_id": cont[len(cont)-1]["tool_call_id"], "content": "different"})
			status, _, e := turnResult(t, s, chatBody(t, testModel, conflict, toolsJSON, ""))
			is.Equal(status, 409)
			is.Equal(e.Error.Code, "continuation_conflict")     // different results conflict
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // one dispatch in all

			_, late, _ := pending(t, s, "too late")
			time.Sleep(1100 * time.Millisecond)
			status, _, e = turnResult(t, s, chatBody(t, testModel, late, toolsJSON, ""))
			is.Equal(status, 410)
			is.Equal(e.Error.Code, "tool_call_expired") // past the pending TTL

			_, lost, _ := pending(t, s, "lost")
			lost[len(lost)-1]["content"] = "#scenario=drop_after_request"
			if len(lost) > 3 {
				lost[len(lost)-2]["content"] = "#scenario=drop_after_request"
			}
			status, _, e = turnResult(t, s, chatBody(t, testModel, lost, toolsJSON, ""))
			is.Equal(status, 502)
			is.Equal(e.Error.Code, "continuation_outcome_uncertain") // the connection dropped after sending
			status, _, e = turnResult(t, s, chatBody(t, testModel, lost, toolsJSON, ""))
			is.Equal(status, 502)
			is.Equal(e.Error.Code, "continuation_outcome_uncertain") // and it is never re-sent
			is.Equal(s.emu.Count(emulator.KindToolResponse), 2)
		})
	}
}

func TestConcurrentIdenticalContinuationsDispatchOnce(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, map[string]string{"MAX_CONCURRENT_REQUESTS": "64"})
			_, cont, _ := pending(t, s, "race")
			for _, m := range cont {
				if m["role"] == "tool" {
					m["content"] = "#scenario=slow_stream"
				}
			}
			codes := raceContinuations(chatBody(t, testModel, cont, toolsJSON, ""), 32, s)
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // exactly one upstream dispatch
			ok := codes["200 "]
			is.True(ok >= 1)                                    // at least the winner succeeded
			is.Equal(ok+codes["409 continuation_inflight"], 32) // the rest were in flight or replays
		})
	}
}

func TestAFullStoreRefusesNewToolGroups(t *testing.T) {
	is := is.New(t)
	s := serve(t, "web_session", map[string]string{"CORRELATION_MAX_GROUPS": "1"})
	pending(t, s, "one")
	status, _, e := turnResult(t, s, chatBody(t, testModel, []msg{{"role": "user", "content": "two"}}, toolsJSON, ""))
	is.Equal(status, 503)
	is.Equal(e.Error.Code, "correlation_capacity_exceeded") // refused before any id is shown
	resp := s.post(t, chatBody(t, testModel, []msg{{"role": "user", "content": "three"}}, toolsJSON, `,"stream":true`))
	if resp.StatusCode == 200 { // text came first: the stream ends with the error event
		evs := sseEvents(t, resp.Body)
		all := strings.Join(evs, "\n")
		is.True(!strings.Contains(all, "call_pmn_"))                    // no unusable id in the stream
		is.True(strings.Contains(all, "correlation_capacity_exceeded")) // it ends with the stable error
		is.True(evs[len(evs)-1] != "[DONE]")
	} else { // nothing was shown yet: a plain error
		is.Equal(resp.StatusCode, 503)
		var e errorBody
		is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
		is.Equal(e.Error.Code, "correlation_capacity_exceeded")
	}

	h, err := http.Get(s.base + "/health")
	is.NoErr(err)
	var health map[string]any
	is.NoErr(json.NewDecoder(h.Body).Decode(&health))
	h.Body.Close()
	corr := health["correlation"].(map[string]any)
	is.Equal(corr["live_groups"], float64(1)) // /health reports live groups, without ids
	is.True(!strings.Contains(fmt.Sprint(health), "call_pmn_"))
}

func TestMoreRowsThroughHTTP(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			s := serve(t, st, map[string]string{"CORRELATION_TERMINAL_TTL_MS": "1000", "MAX_CONCURRENT_REQUESTS": "8"})

			t.Run("different results while in flight conflict", func(t *testing.T) {
				is := is.New(t)
				_, cont, _ := pending(t, s, "inflight")
				before := s.emu.Count(emulator.KindToolResponse)
				slow := append([]msg(nil), cont...)
				slow[len(slow)-1] = msg{"role": "tool", "tool_call_id": cont[len(cont)-1]["tool_call_id"], "content": "#scenario=slow_stream"}
				done := make(chan int, 1)
				go func() {
					req, _ := http.NewRequest("POST", s.base+"/v1/chat/completions", strings.NewReader(chatBody(t, testModel, slow, toolsJSON, "")))
					req.Header.Set("Authorization", "Bearer "+testKey)
					req.Header.Set("Content-Type", "application/json")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						done <- 0
						return
					}
					resp.Body.Close()
					done <- resp.StatusCode
				}()
				for range 250 { // until the slow continuation holds the claim and reached the upstream
					if s.emu.Count(emulator.KindToolResponse) > before {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				status, _, e := turnResult(t, s, chatBody(t, testModel, cont, toolsJSON, ""))
				is.Equal(status, 409)
				is.Equal(e.Error.Code, "continuation_conflict") // other results for a claimed group
				is.Equal(<-done, 200)                           // the claimed one completes
			})

			t.Run("an upstream refusal returns the group to pending", func(t *testing.T) {
				is := is.New(t)
				_, cont, _ := pending(t, s, "refused")
				limited := append([]msg(nil), cont...)
				limited[len(limited)-1] = msg{"role": "tool", "tool_call_id": cont[len(cont)-1]["tool_call_id"], "content": "#scenario=rate_limited"}
				status, _, e := turnResult(t, s, chatBody(t, testModel, limited, toolsJSON, ""))
				is.Equal(status, 429)
				is.Equal(e.Error.Code, "upstream_rate_limited") // the upstream refused before processing
				status, _, _ = turnResult(t, s, chatBody(t, testModel, cont, toolsJSON, ""))
				is.Equal(status, 200) // so the group was pending again and the results could be sent
			})

			t.Run("a tombstone past its TTL is unknown", func(t *testing.T) {
				is := is.New(t)
				_, cont, _ := pending(t, s, "tombstone")
				status, _, _ := turnResult(t, s, chatBody(t, testModel, cont, toolsJSON, ""))
				is.Equal(status, 200)
				time.Sleep(1100 * time.Millisecond)
				status, _, e := turnResult(t, s, chatBody(t, testModel, cont, toolsJSON, ""))
				is.Equal(status, 404)
				is.Equal(e.Error.Code, "unknown_tool_call") // the record was removed
			})
		})
	}
}

// raceContinuations sends body n times at once, spread round-robin over the
// gateways, and counts the answers by "status code".
func raceContinuations(body string, n int, gateways ...*served) map[string]int {
	return raceContinuationsAs(testKey, body, n, gateways...)
}

// raceContinuationsAs is raceContinuations with another API key.
func raceContinuationsAs(key, body string, n int, gateways ...*served) map[string]int {
	var mu sync.Mutex
	codes := map[string]int{}
	var wg sync.WaitGroup
	for i := range n {
		target := gateways[i%len(gateways)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", target.base+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var e errorBody
			_ = json.NewDecoder(resp.Body).Decode(&e)
			mu.Lock()
			codes[fmt.Sprintf("%d %s", resp.StatusCode, e.Error.Code)]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return codes
}

func TestMoreToolsThanTheUpstreamAcceptsAreRefusedBeforeSending(t *testing.T) {
	var tools []string
	for i := range 21 {
		tools = append(tools, fmt.Sprintf(`{"type":"function","function":{"name":"t%d","parameters":{"type":"object","properties":{}}}}`, i))
	}
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			history := []msg{{"role": "user", "content": "many tools"}}
			status, _, e := turnResult(t, s, chatBody(t, testModel, history, "["+strings.Join(tools, ",")+"]", ""))
			is.Equal(status, 400)                                                    // refused
			is.Equal(e.Error.Code, "unsupported_parameter")                          // with the stable code
			is.True(e.Error.Param != nil && *e.Error.Param == "tools")               // naming the tools
			is.True(strings.Contains(e.Error.Message, "POSTMAN_MAX_TOOLS_UPSTREAM")) // and the setting
			is.Equal(len(s.emu.Requests()), 0)                                       // before anything was sent
			status, _, _ = turnResult(t, s, chatBody(t, testModel, history, "["+strings.Join(tools[:20], ",")+"]", ""))
			is.Equal(status, 200) // 20 tools are sent and accepted by the emulator's own limit
		})
	}
}

func TestToolChoiceMayChangeBetweenTurnsOfAToolLoop(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			history := []msg{{"role": "user", "content": "weather please"}}
			status, c, e := turnResult(t, s, chatBody(t, testModel, history, toolsJSON, `,"tool_choice":"required"`))
			is.Equal(status, 200) // a first call forced with "required"
			is.Equal(e.Error.Code, "")
			history = append(history, assistantAndResults(c, sunny)...)
			status, c, e = turnResult(t, s, chatBody(t, testModel, history, toolsJSON, `,"tool_choice":"auto"`))
			is.Equal(status, 200) // the results answered with "auto" continue the same group
			is.Equal(e.Error.Code, "")
			is.Equal(c.Choices[0].FinishReason, "stop")
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1)
		})
	}
}

// changedCall is cont with the assistant's echoed tool call changed (another
// argument value): not the call the gateway issued.
func changedCall(t *testing.T, cont []msg) []msg {
	t.Helper()
	out := append([]msg(nil), cont...)
	for i := len(out) - 1; i >= 0; i-- {
		calls, ok := out[i]["tool_calls"].([]msg)
		if !ok || len(calls) == 0 {
			continue
		}
		m := msg{}
		for k, v := range out[i] {
			m[k] = v
		}
		c := msg{}
		for k, v := range calls[0] {
			c[k] = v
		}
		c["function"] = msg{"name": c["function"].(msg)["name"], "arguments": `{"city":"Atlantis"}`}
		m["tool_calls"] = append([]msg{c}, calls[1:]...)
		out[i] = m
		return out
	}
	t.Fatal("no tool call to change")
	return nil
}
