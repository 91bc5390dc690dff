package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// envUpdate is the system message Claude Code sends after the user's prompt
// when its environment changed since the last turn.
var envUpdate = msg{"role": "system", "content": "# Environment update\n - Is a git repository: true (was false)"}

// A system message after the new prompt belongs to the new turn: the turn
// continues the conversation (only the new messages go up), instead of
// starting fresh with the whole transcript (too long in a long session, for
// every later turn too).
func TestASystemMessageAfterThePromptStillContinuesTheConversation(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			history := []msg{{"role": "system", "content": resumeSystem}, {"role": "user", "content": "Hello. #loop=0"}}
			history, _ = chatTurn(t, s, testModel, history, sunny)
			history = append(history, msg{"role": "user", "content": "And now? #loop=0"}, envUpdate)
			resp := s.post(t, chatBody(t, testModel, history, toolsJSON, ""))
			is.Equal(resp.StatusCode, 200)
			var c completion
			is.NoErr(json.NewDecoder(resp.Body).Decode(&c))
			qs := userQueries(t, s.emu)
			is.Equal(len(qs), 2)
			is.True(qs[1].conversationID != nil) // continued, not fresh
			is.Equal(qs[1].query, "[User]\nAnd now? #loop=0\n\n[System]\n# Environment update\n - Is a git repository: true (was false)")
		})
	}
}

// The same after a failed tool round: the results are history, the prompt
// and the update are the new turn of the same conversation.
func TestASystemMessageAfterThePromptContinuesAfterAFailedRound(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			history := []msg{{"role": "system", "content": resumeSystem}, {"role": "user", "content": "Look around. #tool=get_weather"}}
			status, c, _ := turnResult(t, s, chatBody(t, testModel, history, toolsJSON, `,"parallel_tool_calls":false`))
			is.Equal(status, 200)
			history = append(history, assistantAndResults(c, bigOutput("#scenario=failure_after_text"))...)
			status, _, _ = turnResult(t, s, chatBody(t, testModel, history, toolsJSON, `,"parallel_tool_calls":false`))
			is.True(status >= 500) // the round failed after its results were dispatched

			history = append(history, msg{"role": "user", "content": "Please go on. #loop=0"}, envUpdate)
			resp := s.post(t, chatBody(t, testModel, history, toolsJSON, `,"parallel_tool_calls":false`))
			is.Equal(resp.StatusCode, 200)
			is.Equal(resp.Header.Get("x-pmgate-conversation"), "continued-after-failure")
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // the results went up once
			qs := userQueries(t, s.emu)
			is.Equal(len(qs), 2)
			is.True(qs[1].conversationID != nil)
			is.True(strings.HasPrefix(qs[1].query, "[User]\nPlease go on. #loop=0\n\n[System]\n# Environment update"))
		})
	}
}
