package anthropicsse_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/internal/anthropicsse"
)

// frame renders one well-formed SSE frame whose event name is data's type.
func frame(data string) string {
	typ := data[strings.Index(data, `"type":"`)+8:]
	typ = typ[:strings.IndexByte(typ, '"')]
	return "event: " + typ + "\ndata: " + data + "\n\n"
}

const (
	start      = `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}`
	ping       = `{"type":"ping"}`
	textStart0 = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	textDelta0 = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`
	stop0      = `{"type":"content_block_stop","index":0}`
	endTurn    = `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`
	msgStop    = `{"type":"message_stop"}`
	toolStart1 = `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}}`
	toolJSON1a = `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}`
	toolJSON1b = `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"a.txt\"}"}}`
	stop1      = `{"type":"content_block_stop","index":1}`
	toolUse    = `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}`
	errFrame   = `{"type":"error","error":{"type":"api_error","message":"upstream stream ended before completion"}}`
)

func stream(datas ...string) []byte {
	var b strings.Builder
	for _, d := range datas {
		b.WriteString(frame(d))
	}
	return []byte(b.String())
}

var textStream = []string{start, ping, textStart0, textDelta0, stop0, endTurn, msgStop}

func TestGoodStreams(t *testing.T) {
	t.Parallel()
	thinking := []string{start,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`,
		stop0,
		`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok"}}`,
		stop1, endTurn, msgStop}
	stopSeq := []string{start, textStart0, textDelta0, stop0,
		`{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"</block>"},"usage":{"output_tokens":5}}`, msgStop}
	emptyTool := []string{start,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_0","name":"Now","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`,
		stop0, toolUse, msgStop}
	cases := map[string]struct {
		body    []byte
		outcome anthropicsse.Outcome
	}{
		"text":                    {stream(textStream...), anthropicsse.Success},
		"text then tool":          {stream(start, textStart0, textDelta0, stop0, toolStart1, toolJSON1a, toolJSON1b, stop1, toolUse, msgStop), anthropicsse.Success},
		"tool without arguments":  {stream(emptyTool...), anthropicsse.Success},
		"thinking then text":      {stream(thinking...), anthropicsse.Success},
		"stop sequence":           {stream(stopSeq...), anthropicsse.Success},
		"pings everywhere":        {stream(start, ping, textStart0, ping, textDelta0, ping, stop0, ping, endTurn, ping, msgStop), anthropicsse.Success},
		"comment lines":           {[]byte(": keep-alive\n\n" + string(stream(textStream...))), anthropicsse.Success},
		"crlf line ends":          {[]byte(strings.ReplaceAll(string(stream(textStream...)), "\n", "\r\n")), anthropicsse.Success},
		"error instead of start":  {stream(errFrame), anthropicsse.Failed},
		"error after start":       {stream(start, ping, errFrame), anthropicsse.Failed},
		"error inside a block":    {stream(start, textStart0, textDelta0, errFrame), anthropicsse.Failed},
		"error after a block":     {stream(start, textStart0, textDelta0, stop0, errFrame), anthropicsse.Failed},
		"usage grows in messages": {stream(start, textStart0, textDelta0, stop0, endTurn, `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}`, msgStop), anthropicsse.Success},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			res, err := anthropicsse.Check(c.body)
			is.NoErr(err)
			is.Equal(res.Outcome, c.outcome)
		})
	}
}

func TestResultAccumulates(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	res, err := anthropicsse.CheckSuccess(stream(start, textStart0, textDelta0, stop0, toolStart1, toolJSON1a, toolJSON1b, stop1, toolUse, msgStop))
	is.NoErr(err)
	is.Equal(res.MessageID, "msg_01")
	is.Equal(res.Text(), "Hello")
	is.Equal(len(res.ToolUses()), 1)
	is.Equal(string(res.ToolUses()[0].Input), `{"path":"a.txt"}`)
	is.Equal(res.StopReason, "tool_use")
	is.Equal(res.InputTokens, int64(12))
	is.Equal(res.OutputTokens, int64(9))

	res, err = anthropicsse.CheckFailed(stream(start, textStart0, errFrame))
	is.NoErr(err)
	is.Equal(res.Error.Type, "api_error")

	_, err = anthropicsse.CheckFailed(stream(textStream...))
	is.True(err != nil) // a success is not a failure
	_, err = anthropicsse.CheckSuccess(stream(errFrame))
	is.True(err != nil) // and the other way round
}

// TestBadStreams has one failing example per rule.
func TestBadStreams(t *testing.T) {
	t.Parallel()
	replace := func(old, new string) []byte {
		return []byte(strings.Replace(string(stream(textStream...)), old, new, 1))
	}
	cases := map[string][]byte{
		"data without event line":        []byte("data: " + start + "\n\n" + string(stream(textStream[1:]...))),
		"event name differs from type":   []byte("event: message_begin\ndata: " + start + "\n\n" + string(stream(textStream[1:]...))),
		"event without data":             []byte("event: ping\n\n"),
		"data not json":                  []byte("event: ping\ndata: {oops\n\n"),
		"DONE marker":                    append(stream(textStream...), []byte("data: [DONE]\n\n")...),
		"unknown field":                  append([]byte("id: 1\n"), stream(textStream...)...),
		"unknown event":                  stream(start, `{"type":"mystery"}`, textStart0, textDelta0, stop0, endTurn, msgStop),
		"last frame unterminated":        []byte(strings.TrimSuffix(string(stream(textStream...)), "\n")),
		"empty body":                     nil,
		"ping before message_start":      stream(ping, start, textStart0, textDelta0, stop0, endTurn, msgStop),
		"block before message_start":     stream(textStart0, textDelta0, stop0, endTurn, msgStop),
		"second message_start":           stream(start, start, textStart0, textDelta0, stop0, endTurn, msgStop),
		"id without msg_":                replace(`"msg_01"`, `"chatcmpl-1"`),
		"message_start without usage":    replace(`,"usage":{"input_tokens":12,"output_tokens":1}`, ``),
		"usage without input_tokens":     replace(`"input_tokens":12,`, ``),
		"message_start content not []":   replace(`"content":[]`, `"content":[{"type":"text","text":"x"}]`),
		"message_start with stop_reason": replace(`"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12`, `"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12`),
		"role not assistant":             replace(`"role":"assistant"`, `"role":"user"`),
		"first block index 1":            stream(start, strings.Replace(textStart0, `"index":0`, `"index":1`, 1), strings.Replace(textDelta0, `"index":0`, `"index":1`, 1), stop1, endTurn, msgStop),
		"index gap":                      stream(start, textStart0, textDelta0, stop0, strings.Replace(toolStart1, `"index":1`, `"index":2`, 1), toolUse, msgStop),
		"two blocks open":                stream(start, textStart0, toolStart1, toolJSON1a, toolJSON1b, stop1, stop0, toolUse, msgStop),
		"delta for another index":        stream(start, textStart0, strings.Replace(textDelta0, `"index":0`, `"index":1`, 1), stop0, endTurn, msgStop),
		"delta after stop":               stream(start, textStart0, stop0, textDelta0, endTurn, msgStop),
		"stop without start":             stream(start, stop0, endTurn, msgStop),
		"text block with non-empty text": stream(start, strings.Replace(textStart0, `"text":""`, `"text":"Hi"`, 1), stop0, endTurn, msgStop),
		"input_json_delta in text":       stream(start, textStart0, strings.Replace(toolJSON1a, `"index":1`, `"index":0`, 1), stop0, endTurn, msgStop),
		"text_delta in tool block":       stream(start, textStart0, textDelta0, stop0, toolStart1, strings.Replace(textDelta0, `"index":0`, `"index":1`, 1), stop1, toolUse, msgStop),
		"tool start with input":          stream(start, textStart0, textDelta0, stop0, strings.Replace(toolStart1, `"input":{}`, `"input":{"path":"a"}`, 1), stop1, toolUse, msgStop),
		"tool start without input":       stream(start, textStart0, textDelta0, stop0, strings.Replace(toolStart1, `,"input":{}`, ``, 1), stop1, toolUse, msgStop),
		"tool id with a dot":             stream(start, textStart0, textDelta0, stop0, strings.Replace(toolStart1, `toolu_1`, `call.1`, 1), stop1, toolUse, msgStop),
		"tool arguments not json":        stream(start, textStart0, textDelta0, stop0, toolStart1, toolJSON1a, stop1, toolUse, msgStop),
		"tool arguments an array":        stream(start, toolStart1[:0]+strings.Replace(toolStart1, `"index":1`, `"index":0`, 1), `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"[1]"}}`, stop0, toolUse, msgStop),
		"text_delta in thinking":         stream(start, `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`, textDelta0, stop0, endTurn, msgStop),
		"thinking without signature":     stream(start, `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`, `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"}}`, stop0, endTurn, msgStop),
		"unknown block type":             stream(start, `{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`, stop0, endTurn, msgStop),
		"message_delta without usage":    stream(start, textStart0, textDelta0, stop0, `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null}}`, msgStop),
		"message_delta no stop_reason":   stream(start, textStart0, textDelta0, stop0, `{"type":"message_delta","delta":{"stop_reason":null,"stop_sequence":null},"usage":{"output_tokens":5}}`, msgStop),
		"invented stop reason":           stream(start, textStart0, textDelta0, stop0, strings.Replace(endTurn, "end_turn", "error", 1), msgStop),
		"message_delta block open":       stream(start, textStart0, textDelta0, endTurn, stop0, msgStop),
		"usage decreases":                stream(start, textStart0, textDelta0, stop0, strings.Replace(endTurn, `"output_tokens":5`, `"output_tokens":0`, 1), msgStop),
		"input usage decreases":          stream(start, textStart0, textDelta0, stop0, strings.Replace(endTurn, `"output_tokens":5`, `"input_tokens":3,"output_tokens":5`, 1), msgStop),
		"block after message_delta":      stream(start, textStart0, textDelta0, stop0, endTurn, toolStart1, stop1, msgStop),
		"stop_reason changes":            stream(start, textStart0, textDelta0, stop0, endTurn, strings.Replace(endTurn, "end_turn", "max_tokens", 1), msgStop),
		"tool_use with end_turn":         stream(start, textStart0, textDelta0, stop0, toolStart1, toolJSON1a, toolJSON1b, stop1, endTurn, msgStop),
		"tool_use reason without tool":   stream(start, textStart0, textDelta0, stop0, toolUse, msgStop),
		"stop_sequence null":             stream(start, textStart0, textDelta0, stop0, strings.Replace(endTurn, "end_turn", "stop_sequence", 1), msgStop),
		"stop_sequence with end_turn":    stream(start, textStart0, textDelta0, stop0, strings.Replace(endTurn, `"stop_sequence":null`, `"stop_sequence":"x"`, 1), msgStop),
		"empty end_turn no blocks":       stream(start, endTurn, msgStop),
		"empty end_turn empty text":      stream(start, textStart0, stop0, endTurn, msgStop),
		"message_stop without delta":     stream(start, textStart0, textDelta0, stop0, msgStop),
		"no message_stop":                stream(start, textStart0, textDelta0, stop0, endTurn),
		"truncated mid-block":            stream(start, textStart0, textDelta0),
		"second message_stop":            stream(append(textStream[:len(textStream):len(textStream)], msgStop)...),
		"frame after message_stop":       stream(append(textStream[:len(textStream):len(textStream)], ping)...),
		"message_stop after error":       stream(start, textStart0, errFrame, msgStop),
		"message_delta after error":      stream(start, errFrame, endTurn, msgStop),
		"two error frames":               stream(start, errFrame, errFrame),
		"error after message_delta":      stream(start, textStart0, textDelta0, stop0, endTurn, errFrame),
		"error without error object":     stream(start, `{"type":"error","message":"boom"}`),
		"error with OpenAI shape":        stream(start, `{"type":"error","error":{"message":"boom","type":"server_error","code":"x"}}`),
		"error with empty message":       stream(start, `{"type":"error","error":{"type":"api_error","message":""}}`),
		"error data-only frame":          append(stream(start), []byte("data: "+errFrame+"\n\n")...),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := anthropicsse.Check(body)
			t.Log(err)
			if err == nil {
				t.Fatalf("accepted:\n%s", body)
			}
		})
	}
}

// TestValidatorPieces feeds a stream one byte at a time: the verdict must not
// depend on how the body was chunked.
func TestValidatorPieces(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	body := stream(start, textStart0, textDelta0, stop0, toolStart1, toolJSON1a, toolJSON1b, stop1, toolUse, msgStop)
	var v anthropicsse.Validator
	for i := range body {
		_, err := v.Write(body[i : i+1])
		is.NoErr(err)
	}
	res, err := v.End()
	is.NoErr(err)
	is.Equal(res.Outcome, anthropicsse.Success)

	var bad anthropicsse.Validator
	_, err = bad.Write(stream(start, start))
	is.True(err != nil) // the violation is reported as soon as it arrives
}
