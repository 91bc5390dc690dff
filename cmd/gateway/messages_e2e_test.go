package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// rawMessages posts a Messages request body (x-api-key, ?beta=true, as
// Claude Code does) and returns status, headers' usage mark and body.
func rawMessages(t *testing.T, s *served, body string, header ...string) (int, string, string) {
	t.Helper()
	h := append([]string{"Content-Type", "application/json", "Authorization", "", "x-api-key", testKey,
		"anthropic-version", "2023-06-01"}, header...)
	resp := s.do(t, "POST", "/v1/messages?beta=true", strings.NewReader(body), h...)
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("x-pmgate-usage"), string(b)
}

func messagesBody(text string, stream bool, extra string) string {
	b, _ := json.Marshal(text)
	s, _ := json.Marshal(stream)
	return `{"model":"` + testModel + `","max_tokens":32000,"stream":` + string(s) + `,"messages":[{"role":"user","content":` + string(b) + `}]` + extra + `}`
}

func TestTheMessagesAPIAnswersTextThroughEachStrategy(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			status, usage, body := rawMessages(t, s, messagesBody("Hello there", false, ""))
			is.Equal(status, 200)
			var m struct {
				ID         string
				Content    []struct{ Type, Text string }
				StopReason string `json:"stop_reason"`
			}
			is.NoErr(json.Unmarshal([]byte(body), &m))
			is.True(strings.HasPrefix(m.ID, "msg_"))
			is.Equal(len(m.Content), 1)
			is.True(m.Content[0].Text != "")
			is.Equal(m.StopReason, "end_turn")
			is.True(usage == "reported" || usage == "estimated")

			status, _, body = rawMessages(t, s, messagesBody("Hello again", true, ""))
			is.Equal(status, 200)
			is.True(strings.HasPrefix(body, "event: message_start\n"))
			is.True(strings.HasSuffix(body, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
			is.True(!strings.Contains(body, "[DONE]"))
			is.Equal(s.emu.Count(emulator.KindUserQuery), 2) // one dispatch per request
		})
	}
}
