package anthropicsse

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/cockroachdb/errors"
)

// CheckMessage validates a non-streamed Messages response body (a 200 with
// type "message") by the same rules as a successful stream, and returns it in
// the same form.
func CheckMessage(body []byte) (Result, error) {
	var m struct {
		ID         string            `json:"id"`
		Type       string            `json:"type"`
		Role       string            `json:"role"`
		Model      string            `json:"model"`
		Content    []json.RawMessage `json:"content"`
		StopReason *string           `json:"stop_reason"`
		Usage      *Usage            `json:"usage"`
	}
	res := Result{}
	if err := json.Unmarshal(body, &m); err != nil {
		return res, errors.Wrap(err, "response is not a JSON object")
	}
	switch {
	case m.Type != "message":
		return res, errors.Newf("type %q, want message", m.Type)
	case !strings.HasPrefix(m.ID, "msg_") || len(m.ID) <= len("msg_"):
		return res, errors.Newf("id %q does not start with msg_", m.ID)
	case m.Role != "assistant":
		return res, errors.Newf("role %q, want assistant", m.Role)
	case m.Model == "":
		return res, errors.New("no model")
	case m.Content == nil:
		return res, errors.New("no content array")
	case m.Usage == nil || m.Usage.InputTokens == nil || m.Usage.OutputTokens == nil:
		return res, errors.New("no usage object holding input_tokens and output_tokens")
	case *m.Usage.InputTokens < 0 || *m.Usage.OutputTokens < 0:
		return res, errors.New("negative usage")
	case m.StopReason == nil || !stopReasons[*m.StopReason]:
		return res, errors.Newf("stop_reason %s is not a stop reason", fmtPtr(m.StopReason))
	}
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(body, &keys)
	if _, ok := keys["stop_sequence"]; !ok {
		return res, errors.New("no stop_sequence field (null or the sequence)")
	}
	var seq *string
	if err := json.Unmarshal(keys["stop_sequence"], &seq); err != nil {
		return res, errors.New("stop_sequence is neither null nor a string")
	}
	res = Result{Outcome: Success, MessageID: m.ID, Model: m.Model, StopReason: *m.StopReason, StopSequence: seq,
		InputTokens: *m.Usage.InputTokens, OutputTokens: *m.Usage.OutputTokens}
	for i, raw := range m.Content {
		var c struct {
			Type      string          `json:"type"`
			Text      *string         `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			Thinking  *string         `json:"thinking"`
			Signature string          `json:"signature"`
			Data      string          `json:"data"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return res, errors.Newf("content[%d] is not an object", i)
		}
		b := Block{Type: c.Type}
		switch c.Type {
		case "text":
			if c.Text == nil {
				return res, errors.Newf("content[%d]: text block without text", i)
			}
			b.Text = *c.Text
		case "tool_use":
			var obj map[string]any
			switch {
			case !toolIDPattern.MatchString(c.ID):
				return res, errors.Newf("content[%d]: tool_use id %q does not match ^[a-zA-Z0-9_-]+$", i, c.ID)
			case c.Name == "":
				return res, errors.Newf("content[%d]: tool_use without a name", i)
			case json.Unmarshal(c.Input, &obj) != nil || obj == nil:
				return res, errors.Newf("content[%d]: tool_use input is not a JSON object", i)
			}
			b.ID, b.Name, b.Input = c.ID, c.Name, c.Input
		case "thinking":
			if c.Thinking == nil || c.Signature == "" {
				return res, errors.Newf("content[%d]: thinking block without thinking or signature", i)
			}
			b.Text, b.Signature = *c.Thinking, c.Signature
		case "redacted_thinking":
			if c.Data == "" {
				return res, errors.Newf("content[%d]: redacted_thinking without data", i)
			}
		default:
			return res, errors.Newf("content[%d]: unknown block type %q", i, c.Type)
		}
		res.Blocks = append(res.Blocks, b)
	}
	if err := stopRules(res.StopReason, seq, res.Blocks); err != nil {
		return res, err
	}
	return res, nil
}

// CheckError validates an Anthropic error response: the body
// {"type":"error","error":{"type":…,"message":…},"request_id":…} with an
// error type that Anthropic pairs with this HTTP status.
func CheckError(status int, body []byte) (ErrorBody, error) {
	e, err := errorBody(body)
	if err != nil {
		return e, errors.Wrapf(err, "status %d body %.200q", status, body)
	}
	if !slices.Contains(errorTypes[e.Type], status) {
		return e, errors.Newf("status %d with error.type %q (Anthropic pairs it with %v)", status, e.Type, errorTypes[e.Type])
	}
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(body, &keys)
	if _, ok := keys["request_id"]; !ok {
		return e, errors.New("no request_id field")
	}
	return e, nil
}
