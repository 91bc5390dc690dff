package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// queryLimit is the input.query length the service is reported to refuse
// (POSTMAN_MAX_QUERY_CHARS' default), in UTF-16 code units.
const queryLimit = 10000

// userQuery is one USER_QUERY the emulator received.
type userQuery struct {
	query          string
	conversationID *string
}

// userQueries returns the USER_QUERY bodies the emulator received, in order.
func userQueries(t *testing.T, emu *emulator.Server) []userQuery {
	t.Helper()
	var out []userQuery
	for _, r := range emu.Requests() {
		if r.ChatType != emulator.KindUserQuery {
			continue
		}
		var b struct {
			Input struct {
				Query          string  `json:"query"`
				ConversationID *string `json:"conversationId"`
			} `json:"input"`
		}
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatalf("USER_QUERY body: %v", err)
		}
		out = append(out, userQuery{b.Input.Query, b.Input.ConversationID})
	}
	return out
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// transcriptChars is the length of every message content of the history.
func transcriptChars(history []msg) int {
	n := 0
	for _, m := range history {
		if c, ok := m["content"].(string); ok {
			n += utf16Len(c)
		}
		if c, ok := m["content"].(*string); ok && c != nil {
			n += utf16Len(*c)
		}
	}
	return n
}

// chatTurn sends one user turn and runs any tool loop to its final answer,
// returning the history with the answer appended.
func chatTurn(t *testing.T, s *served, model string, history []msg, result func(string) string) ([]msg, string) {
	t.Helper()
	history = append([]msg(nil), history...) // never share the caller's backing array
	for {
		status, c, e := turnResult(t, s, chatBody(t, model, history, toolsJSON, `,"parallel_tool_calls":false`))
		if status != 200 {
			t.Fatalf("turn: %d %s %s", status, e.Error.Code, e.Error.Message)
		}
		if c.Choices[0].FinishReason == "tool_calls" {
			history = append(history, assistantAndResults(c, result)...)
			continue
		}
		answer := *c.Choices[0].Message.Content
		return append(history, msg{"role": "assistant", "content": answer}), answer
	}
}

func TestATwentyTurnChatStaysUnderTheQueryLimit(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			system := "You are a careful coding agent. " + strings.Repeat("Follow the house rules exactly. ", 218) // ~7,000 characters
			history := []msg{{"role": "system", "content": system}}
			bigResult := func(name string) string { return name + " output: " + strings.Repeat("line of tool output\n", 150) } // 3,000+ characters
			for turn := 1; turn <= 20; turn++ {
				directive := "#loop=0"
				if turn == 7 || turn == 15 {
					directive = "#loop=2" // two tool loops of two rounds each
				}
				text := fmt.Sprintf("turn %d %s: %s", turn, directive, strings.Repeat(fmt.Sprintf("detail %02d of the task. ", turn), 100))
				history = append(history, msg{"role": "user", "content": text})
				var answer string
				history, answer = chatTurn(t, s, testModel, history, bigResult)
				if turn == 7 || turn == 15 {
					is.True(strings.Contains(answer, "get_weather=get_weather output")) // the tool loop's final answer quotes its results
				} else if turn > 1 {
					// answered from the conversation the emulator holds, from the new message alone
					is.True(strings.HasPrefix(answer, fmt.Sprintf("Hello again from the pmgate emulator (turn %d of this conversation). You said: turn %d ", turn, turn)))
				}
			}
			chars := transcriptChars(history)
			is.True(chars > 50000) // the transcript outgrew the limit five times over

			qs := userQueries(t, s.emu)
			is.Equal(len(qs), 20) // one USER_QUERY per turn
			maxQ, sum := 0, 0
			for i, q := range qs {
				n := utf16Len(q.query)
				is.True(n <= queryLimit) // every upstream query stays under the limit
				maxQ, sum = max(maxQ, n), sum+n
				if i == 0 {
					is.True(q.conversationID == nil) // the first turn starts the conversation
					is.True(n > 7000)                // with the system prompt
					continue
				}
				is.True(q.conversationID != nil && *q.conversationID == *qs[1].conversationID) // every later turn continues the same one
				is.True(!strings.Contains(q.query, "house rules"))                             // without re-sending the history
			}
			is.Equal(s.emu.Count(emulator.KindToolResponse), 4)   // two loops of two rounds, each dispatched once
			is.Equal(decisions(s.logs.String(), "continued"), 19) // each turn's access line says how it reached the upstream
			is.Equal(decisions(s.logs.String(), "fresh"), 1)
			t.Logf("%s: transcript %d characters after 20 turns; upstream queries: first %d, max %d, mean of later turns %d",
				st, chars, utf16Len(qs[0].query), maxQ, (sum-utf16Len(qs[0].query))/19)

			health := s.health(t)
			is.Equal(health.Conversation.AnchorsByState["ACTIVE"], 1)    // the last answer waits for the next turn
			is.Equal(health.Conversation.AnchorsByState["ADVANCED"], 19) // every earlier one was continued
		})
	}
}

func TestWithoutContinuityTheTranscriptOutgrowsTheQueryLimit(t *testing.T) {
	is := is.New(t)
	s := serve(t, "web_session", map[string]string{"CONVERSATION_CONTINUITY": "false"})
	history := []msg{{"role": "system", "content": strings.Repeat("Follow the house rules exactly. ", 218)}}
	history = append(history, msg{"role": "user", "content": "turn 1 #loop=0 " + strings.Repeat("more detail. ", 150)})
	history, _ = chatTurn(t, s, testModel, history, sunny)
	history = append(history, msg{"role": "user", "content": "turn 2 #loop=0 " + strings.Repeat("more detail. ", 150)})
	status, _, e := turnResult(t, s, chatBody(t, testModel, history, toolsJSON, `,"parallel_tool_calls":false`))
	is.Equal(status, 400)                             // the second turn's whole transcript is over the limit
	is.Equal(e.Error.Code, "upstream_query_too_long") // refused before sending
	is.Equal(len(userQueries(t, s.emu)), 1)           // so it never reached the upstream
	is.Equal(s.health(t).Conversation.Continuity, false)
}

type healthBody struct {
	Conversation struct {
		Continuity     bool           `json:"continuity"`
		AnchorsByState map[string]int `json:"anchors_by_state"`
		MaxAnchors     int            `json:"max_anchors"`
	} `json:"conversation"`
}

func (s *served) health(t *testing.T) healthBody {
	t.Helper()
	resp, err := http.Get(s.base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h healthBody
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

// accessConversations returns the "conversation" groups of the access lines
// ("msg":"request"), in the order of the lines.
func accessConversations(logs string) []conversationGroup {
	var out []conversationGroup
	for _, e := range logEntries(logs) {
		if e.Msg == "request" && e.Conversation != nil {
			out = append(out, *e.Conversation)
		}
	}
	return out
}

// decisions counts the access lines whose conversation decision is d.
func decisions(logs, d string) int {
	n := 0
	for _, c := range accessConversations(logs) {
		if c.Decision == d {
			n++
		}
	}
	return n
}

// freshReasons returns the reasons of the fresh conversation decisions of the
// access lines.
func freshReasons(logs string) []string {
	var out []string
	for _, c := range accessConversations(logs) {
		if c.Decision == "fresh" {
			out = append(out, c.Reason)
		}
	}
	return out
}

func TestEveryFallBackToAFreshConversationIsExplicit(t *testing.T) {
	is := is.New(t)
	s := serve(t, "web_session", map[string]string{"PROVIDER_MODELS": testModel + ",gpt-other",
		"POSTMAN_MODEL_MAP": testModel + "=GPT_55,gpt-other=GPT_55", "CONVERSATION_TTL_MS": "1000"})
	sys := msg{"role": "system", "content": "be brief"}
	history, answer := chatTurn(t, s, testModel, []msg{sys, {"role": "user", "content": "one #loop=0"}}, sunny)
	two := msg{"role": "user", "content": "two #loop=0"}

	chatTurn(t, s, testModel, []msg{sys, {"role": "user", "content": "ONE #loop=0"}, history[2], two}, sunny)         // edited history
	chatTurn(t, s, testModel, []msg{{"role": "system", "content": "be verbose"}, history[1], history[2], two}, sunny) // changed system prompt
	chatTurn(t, s, "gpt-other", append(append([]msg(nil), history...), two), sunny)                                   // another model
	is.True(strings.Contains(answer, "one"))
	deadline := time.Now().Add(5 * time.Second)
	for s.health(t).Conversation.AnchorsByState["EXPIRED"] < 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	is.Equal(s.health(t).Conversation.AnchorsByState["EXPIRED"], 4)               // the sweep expired every anchor after CONVERSATION_TTL_MS
	chatTurn(t, s, testModel, append(append([]msg(nil), history...), two), sunny) // CONVERSATION_TTL_MS passed

	is.Equal(freshReasons(s.logs.String()), []string{"no_anchor", "history_changed", "instructions_changed", "model_changed", "expired"})
	for _, q := range userQueries(t, s.emu) {
		is.True(q.conversationID == nil) // every one of them started a new upstream conversation
	}
	for _, line := range strings.Split(s.logs.String(), "\n") {
		is.True(!strings.Contains(line, "conv-")) // no log line names a conversation
	}
}

func TestTwoRacingTurnsProduceOneContinuation(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			history, _ := chatTurn(t, s, testModel, []msg{{"role": "user", "content": "one #loop=0"}}, sunny)
			next := append(history, msg{"role": "user", "content": "two #loop=0 #scenario=slow_stream"}) // holds its claim for a while
			var wg sync.WaitGroup
			answers := make([]string, 2)
			for i := range answers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, answers[i] = chatTurn(t, s, testModel, next, sunny)
				}()
			}
			wg.Wait()
			for _, a := range answers {
				is.True(strings.Contains(a, "two")) // both turns are answered
			}
			qs := userQueries(t, s.emu)
			is.Equal(len(qs), 3)
			continued := 0
			for _, q := range qs[1:] {
				if q.conversationID != nil {
					continued++
				}
			}
			is.Equal(continued, 1)                                                  // exactly one continues the conversation
			is.Equal(freshReasons(s.logs.String()), []string{"no_anchor", "raced"}) // the other started fresh, and said why
		})
	}
}

func TestAConversationStartedThroughOneReplicaContinuesThroughAnother(t *testing.T) {
	is := is.New(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := map[string]string{"CORRELATION_STORE": "postgres", "CORRELATION_POSTGRES_URL": pgSchema(t),
		"CORRELATION_PRINCIPAL_KEY": base64.RawURLEncoding.EncodeToString(key)}
	emu := newEmulator(t)
	a := serveWith(t, emu, "web_session", env)
	b := serveWith(t, emu, "web_session", env)
	history := []msg{{"role": "system", "content": strings.Repeat("Rules. ", 1000)}}
	for i, r := range []*served{a, b, a, b} {
		history = append(history, msg{"role": "user", "content": fmt.Sprintf("turn %d #loop=0", i+1)})
		if i == 2 {
			history[len(history)-1]["content"] = "turn 3, with a tool" // a tool loop on replica A, answered through A
		}
		history, _ = chatTurn(t, r, testModel, history, sunny)
	}
	qs := userQueries(t, emu)
	is.Equal(len(qs), 4)
	for _, q := range qs[1:] {
		is.True(q.conversationID != nil && *q.conversationID == *qs[1].conversationID) // one upstream conversation over both replicas
	}
	h := b.health(t)
	is.Equal(h.Conversation.AnchorsByState["ADVANCED"], 3) // the shared store counts every replica's anchors
	is.Equal(h.Conversation.AnchorsByState["ACTIVE"], 1)
}
