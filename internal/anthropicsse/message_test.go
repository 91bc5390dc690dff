package anthropicsse_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/internal/anthropicsse"
)

const goodMessage = `{"id":"msg_01","type":"message","role":"assistant","model":"m",` +
	`"content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"a"}}],` +
	`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":4}}`

func TestCheckMessage(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	res, err := anthropicsse.CheckMessage([]byte(goodMessage))
	is.NoErr(err)
	is.Equal(res.Text(), "Reading.")
	is.Equal(string(res.ToolUses()[0].Input), `{"path":"a"}`)

	text := `{"id":"msg_02","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"x"}],` +
		`"stop_reason":"stop_sequence","stop_sequence":"</block>","usage":{"input_tokens":1,"output_tokens":1}}`
	_, err = anthropicsse.CheckMessage([]byte(text))
	is.NoErr(err)

	r := func(old, new string) string { return strings.Replace(goodMessage, old, new, 1) }
	bad := map[string]string{
		"not json":                  `{`,
		"type not message":          r(`"type":"message"`, `"type":"chat.completion"`),
		"id without msg_":           r(`"msg_01"`, `"abc"`),
		"role":                      r(`"role":"assistant"`, `"role":"user"`),
		"no model":                  r(`"model":"m",`, ``),
		"no content":                r(`"content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"path":"a"}}],`, ``),
		"no usage":                  r(`,"usage":{"input_tokens":10,"output_tokens":4}`, ``),
		"no stop_sequence":          r(`"stop_sequence":null,`, ``),
		"invented stop reason":      r(`"stop_reason":"tool_use"`, `"stop_reason":"error"`),
		"tool_use with end_turn":    r(`"stop_reason":"tool_use"`, `"stop_reason":"end_turn"`),
		"tool input a string":       r(`"input":{"path":"a"}`, `"input":"{\"path\":\"a\"}"`),
		"tool id with a dot":        r(`toolu_1`, `call.1`),
		"text block without text":   r(`{"type":"text","text":"Reading."}`, `{"type":"text"}`),
		"unknown block":             r(`{"type":"text","text":"Reading."}`, `{"type":"image"}`),
		"empty end_turn":            `{"id":"msg_03","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":0}}`,
		"stop_sequence reason null": strings.Replace(text, `"stop_sequence":"</block>"`, `"stop_sequence":null`, 1),
	}
	for name, body := range bad {
		_, err := anthropicsse.CheckMessage([]byte(body))
		if err == nil {
			t.Errorf("%s: accepted %s", name, body)
		}
	}
}

func TestCheckError(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	e, err := anthropicsse.CheckError(400, []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required","code":"bad_request"},"request_id":"req_1"}`))
	is.NoErr(err)
	is.Equal(e.Type, "invalid_request_error")
	_, err = anthropicsse.CheckError(529, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":null}`))
	is.NoErr(err)

	bad := map[string]struct {
		status int
		body   string
	}{
		"wrong pair":    {429, `{"type":"error","error":{"type":"api_error","message":"x"},"request_id":"r"}`},
		"openai shape":  {400, `{"error":{"message":"x","type":"invalid_request_error"}}`},
		"unknown type":  {500, `{"type":"error","error":{"type":"server_error","message":"x"},"request_id":"r"}`},
		"no message":    {401, `{"type":"error","error":{"type":"authentication_error"},"request_id":"r"}`},
		"no request_id": {404, `{"type":"error","error":{"type":"not_found_error","message":"x"}}`},
	}
	for name, c := range bad {
		if _, err := anthropicsse.CheckError(c.status, []byte(c.body)); err == nil {
			t.Errorf("%s: accepted %d %s", name, c.status, c.body)
		}
	}
}
