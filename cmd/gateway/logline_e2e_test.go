package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// logLines returns the process log's JSON lines.
func logLines(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// A plain fresh text turn writes one INFO line, its access line, and that line
// says what the conversation decision and the upstream stream's outcome were;
// at debug, their own lines are there too with the same content.
func TestAFreshTurnWritesOneInfoLineThatSaysEverything(t *testing.T) {
	for _, level := range []string{"info", "debug"} {
		t.Run(level, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, "web_session", map[string]string{"LOG_LEVEL": level})
			_, answer := chatTurn(t, s, testModel, []msg{{"role": "user", "content": "hello #loop=0"}}, sunny)
			is.True(answer != "")
			var info, conv, up []map[string]any
			for _, l := range logLines(t, s.logs.String()) {
				if l["request_id"] == nil {
					continue // not a request's line (start-up)
				}
				switch {
				case l["level"] == "INFO":
					info = append(info, l)
				case l["msg"] == "conversation: fresh":
					conv = append(conv, l)
				case l["msg"] == "upstream stream complete":
					up = append(up, l)
				}
			}
			is.Equal(len(info), 1) // one INFO line for the request
			a := info[0]
			is.Equal(a["msg"], "request")
			is.Equal(a["status"], float64(200))
			is.Equal(a["principal_slot"], "default")
			c, _ := a["conversation"].(map[string]any)
			is.Equal(c, map[string]any{"decision": "fresh", "reason": "no_anchor"}) // the conversation decision
			u, _ := a["upstream"].(map[string]any)
			is.Equal(u["strategy"], "web_session") // the upstream stream's outcome
			is.Equal(u["status"], float64(200))
			is.Equal(u["event_type"], "[DONE]") // the last event the upstream sent (the traced web order ends with it)
			is.True(u["bytes_in"].(float64) > 0)
			is.True(u["output_bytes"].(float64) > 0)
			is.Equal(u["argument_bytes"], float64(0))
			is.Equal(u["model_observed"], true)
			is.Equal(u["model_match"], true)
			if level == "info" {
				is.Equal(len(conv)+len(up), 0) // the other two lines are debug lines
				return
			}
			is.Equal(len(conv), 1) // at debug, the same content on its own lines
			is.Equal(conv[0]["level"], "DEBUG")
			is.Equal(conv[0]["reason"], "no_anchor")
			is.Equal(conv[0]["principal_slot"], "default")
			is.Equal(len(up), 1)
			is.Equal(up[0]["level"], "DEBUG")
			for k, v := range u {
				is.Equal(up[0][k], v) // every field of the group
			}
		})
	}
}
