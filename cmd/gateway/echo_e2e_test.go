package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// editToolJSON is an editor tool as coding agents declare it: replace_all is
// optional with a schema default, which clients fill in when they echo.
const editToolJSON = `[{"type":"function","function":{"name":"edit_file","description":"Replace text in a file",` +
	`"parameters":{"type":"object","required":["file_path","content","line"],"properties":{` +
	`"file_path":{"type":"string"},"content":{"type":"string"},"line":{"type":"integer"},` +
	`"replace_all":{"type":"boolean","default":false}}}}}]`

// echoWith returns the continuation of c (one edit_file call) whose assistant
// turn echoes the call with the given argument string.
func echoWith(history []msg, c completion, args string) []msg {
	tc := c.Choices[0].Message.ToolCalls[0]
	return append(append([]msg(nil), history...),
		msg{"role": "assistant", "content": nil, "tool_calls": []msg{{"id": tc.ID, "type": "function",
			"function": msg{"name": tc.Function.Name, "arguments": args}}}},
		msg{"role": "tool", "tool_call_id": tc.ID, "content": "edited"})
}

func TestReserializedArgumentEchoesAreAnsweredAndChangedOnesRefused(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			s := serve(t, st, nil)
			issue := func(t *testing.T, text string) ([]msg, completion) {
				t.Helper()
				is := is.New(t)
				history := []msg{{"role": "user", "content": text}}
				status, c, e := turnResult(t, s, chatBody(t, testModel, history, editToolJSON, ""))
				is.Equal(status, 200)
				is.Equal(e.Error.Code, "")
				is.Equal(len(c.Choices[0].Message.ToolCalls), 1)
				// What the emulator issues for this schema, keys sorted:
				is.Equal(c.Choices[0].Message.ToolCalls[0].Function.Arguments, `{"content":"value-content","file_path":"value-file_path","line":1}`)
				return history, c
			}

			t.Run("another key order, whitespace, 1.0 and the schema default are the same call", func(t *testing.T) {
				is := is.New(t)
				before := s.emu.Count(emulator.KindToolResponse)
				history, c := issue(t, "edit the file")
				echo := "{\n  \"file_path\": \"value-file_path\",\n  \"content\": \"value-\\u0063ontent\",\n  \"line\": 1.0,\n  \"replace_all\": false\n}"
				status, ans, e := turnResult(t, s, chatBody(t, testModel, echoWith(history, c, echo), editToolJSON, ""))
				is.Equal(e.Error.Code, "")
				is.Equal(status, 200)                                                          // answered
				is.Equal(ans.Choices[0].FinishReason, "stop")                                  // with the final answer
				is.Equal(s.emu.Count(emulator.KindToolResponse), before+1)                     // one dispatch
				last := lastToolResponse(t, s.emu)                                             // and the upstream got its own call back:
				is.True(!bytes.Contains(last, []byte("value-file_path")))                      // no echoed arguments are forwarded
				is.True(bytes.Contains(last, []byte(`edited`)))                                // only the result
				is.True(!strings.Contains(string(last), c.Choices[0].Message.ToolCalls[0].ID)) // under the upstream's id, not the public one
			})

			t.Run("a changed value is a history mismatch and nothing is dispatched", func(t *testing.T) {
				is := is.New(t)
				before := s.emu.Count(emulator.KindToolResponse)
				history, c := issue(t, "edit it again")
				for _, echo := range []string{
					`{"file_path":"value-file_path","content":"value-content","line":2}`,                    // a changed value
					`{"file_path":"value-file_path","content":"value-content","line":1,"replace_all":true}`, // a default-valued property with another value
					`{"file_path":"value-file_path","content":"value-content","line":1,"dry_run":false}`,    // a property the schema gives no default
					`{"file_path":"value-file_path","line":1}`,                                              // a missing property
					`"{\"content\":\"value-content\",\"file_path\":\"value-file_path\",\"line\":1}"`,        // the object wrapped in a JSON string
					`{"content":"value-content",`,                                                           // not JSON: a mismatch, not a 400
				} {
					status, _, e := turnResult(t, s, chatBody(t, testModel, echoWith(history, c, echo), editToolJSON, ""))
					is.Equal(status, 409)
					is.Equal(e.Error.Code, "continuation_history_mismatch")
				}
				is.Equal(s.emu.Count(emulator.KindToolResponse), before) // nothing was dispatched
				status, _, e := turnResult(t, s, chatBody(t, testModel, echoWith(history, c, c.Choices[0].Message.ToolCalls[0].Function.Arguments), editToolJSON, ""))
				is.Equal(e.Error.Code, "")
				is.Equal(status, 200) // the group stayed pending: the faithful echo is answered
				is.Equal(s.emu.Count(emulator.KindToolResponse), before+1)
			})
		})
	}
}

func TestAToolLoopWhoseClientReserializesEveryTurnRunsToItsAnswer(t *testing.T) {
	// A client that keeps parsed arguments and re-serializes its whole history
	// on every request, filling in schema defaults, as coding agents do.
	reserialized := "{\"line\":1.0,\"file_path\":\"value-file_path\",\"replace_all\":false,\"content\":\"value-content\"}"
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			history := []msg{{"role": "user", "content": "edit twice #loop=2"}}
			status, c, e := turnResult(t, s, chatBody(t, testModel, history, editToolJSON, ""))
			is.Equal(status, 200)
			for round := 1; ; round++ {
				is.Equal(c.Choices[0].FinishReason, "tool_calls")
				history = echoWith(history, c, reserialized)
				status, c, e = turnResult(t, s, chatBody(t, testModel, history, editToolJSON, ""))
				is.Equal(e.Error.Code, "")
				is.Equal(status, 200) // every round's re-serialized history is accepted
				if c.Choices[0].FinishReason == "stop" {
					is.Equal(round, 2)
					break
				}
			}
			is.Equal(s.emu.Count(emulator.KindToolResponse), 2) // one dispatch per round
		})
	}
}

// lastToolResponse is the body of the emulator's last TOOL_RESPONSE request.
func lastToolResponse(t *testing.T, emu *emulator.Server) []byte {
	t.Helper()
	reqs := emu.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].ChatType == emulator.KindToolResponse {
			return reqs[i].Body
		}
	}
	t.Fatal(fmt.Sprint("no TOOL_RESPONSE among ", len(reqs), " requests"))
	return nil
}
