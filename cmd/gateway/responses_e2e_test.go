package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pmgate/pmgate/adapters/emulator"
)

func responsesClient(s *served) openai.Client {
	return openai.NewClient(option.WithBaseURL(s.base+"/v1"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
}

var weatherTool = responses.ToolParamOfFunction("get_weather", map[string]any{
	"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
}, false)

func TestTheResponsesAPIAnswersTextThroughTheGoSDK(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			c := responsesClient(s)
			r, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: testModel,
				Instructions: openai.String("Be brief."),
				Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello there")}})
			is.NoErr(err)
			is.Equal(r.Status, responses.ResponseStatusCompleted) // a proven end
			is.True(r.OutputText() != "")                         // with the upstream's text
			is.True(strings.HasPrefix(r.ID, "resp_"))

			stream := c.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{Model: testModel,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello again")}})
			var types []string
			var text strings.Builder
			var seq int64 = -1
			for stream.Next() {
				ev := stream.Current()
				types = append(types, ev.Type)
				is.Equal(ev.SequenceNumber, seq+1) // sequence numbers count up from 0
				seq = ev.SequenceNumber
				if ev.Type == "response.output_text.delta" {
					text.WriteString(ev.Delta)
				}
			}
			is.NoErr(stream.Err())
			is.Equal(types[0], "response.created")
			is.Equal(types[len(types)-1], "response.completed") // only after the proven end
			is.True(text.Len() > 0)
		})
	}
}

func TestTheResponsesAPIRunsAToolLoopWithOneDispatchPerRound(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			c := responsesClient(s)
			input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("weather please #loop=2", responses.EasyInputMessageRoleUser)}
			for round := 0; ; round++ {
				is.True(round <= 2)
				r, err := c.Responses.New(t.Context(), responses.ResponseNewParams{Model: testModel,
					Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
					Tools: []responses.ToolUnionParam{weatherTool}, Store: openai.Bool(false)})
				is.NoErr(err)
				is.Equal(r.Status, responses.ResponseStatusCompleted)
				var calls []responses.ResponseFunctionToolCall
				for _, item := range r.Output {
					if item.Type == "function_call" {
						calls = append(calls, item.AsFunctionCall())
					}
				}
				if len(calls) == 0 {
					is.Equal(round, 2)                                                 // two rounds of tools, then the answer
					is.True(strings.Contains(r.OutputText(), "sunny for get_weather")) // quoting the results
					break
				}
				for _, call := range calls {
					is.True(strings.HasPrefix(call.CallID, "call_pmn_")) // public ids only
					is.Equal(call.Name, "get_weather")
					input = append(input, responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name))
				}
				for _, call := range calls {
					out := responses.ResponseInputItemParamOfFunctionCallOutput("sunny for get_weather")
					out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
					input = append(input, out)
				}
			}
			is.Equal(s.emu.Count(emulator.KindToolResponse), 2) // exactly one TOOL_RESPONSE per round
		})
	}
}

// rawResponses posts a Responses request body and returns status and body.
func rawResponses(t *testing.T, s *served, body string) (int, string) {
	t.Helper()
	resp := s.do(t, "POST", "/v1/responses", strings.NewReader(body), "Content-Type", "application/json")
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestABrokenUpstreamNeverYieldsResponseCompleted(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			status, body := rawResponses(t, s, `{"model":"`+testModel+`","stream":true,"input":"hi #scenario=failure_after_text"}`)
			is.Equal(status, 200) // headers went out with the first text
			is.True(strings.Contains(body, "event: response.failed\n"))
			is.True(!strings.Contains(body, "response.completed")) // never a completion
			var last map[string]any
			for _, line := range strings.Split(body, "\n") {
				if strings.HasPrefix(line, "data: ") {
					last = nil
					is.NoErr(json.Unmarshal([]byte(line[6:]), &last))
				}
			}
			is.Equal(last["type"], "response.failed") // the failure is the last event
			resp := last["response"].(map[string]any)
			is.Equal(resp["status"], "failed")
			is.True(resp["error"].(map[string]any)["code"] != "")

			// The Go SDK sees the failure as the last event, never a completion.
			client := responsesClient(s)
			stream := client.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{Model: testModel,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi #scenario=failure_after_text")}})
			var lastType string
			for stream.Next() {
				is.True(stream.Current().Type != "response.completed")
				lastType = stream.Current().Type
			}
			is.Equal(lastType, "response.failed")
			is.Equal(stream.Current().Response.Status, responses.ResponseStatusFailed)

			status, body = rawResponses(t, s, `{"model":"`+testModel+`","stream":true,"input":"hi #scenario=ambiguous_eof"}`)
			is.True(!strings.Contains(body, "response.completed")) // an ambiguous end is not a completion
			_ = status

			status, body = rawResponses(t, s, `{"model":"`+testModel+`","input":"hi #scenario=failure_after_text"}`)
			is.True(status >= 500) // JSON: a plain error with its status
			var e errorBody
			is.NoErr(json.Unmarshal([]byte(body), &e))
			is.True(e.Error.Code != "")
		})
	}
}

func TestResponsesRefusesServerSideStateAndUnsupportedInput(t *testing.T) {
	is := is.New(t)
	s := serve(t, "web_session", nil)
	for body, param := range map[string]string{
		`{"model":"` + testModel + `","input":"hi","previous_response_id":"resp_123"}`:                                     "previous_response_id",
		`{"model":"` + testModel + `","input":"hi","background":true}`:                                                     "background",
		`{"model":"` + testModel + `","input":"lone \ud800 surrogate"}`:                                                    "input",
		`{"model":"` + testModel + `","input":[{"type":"item_reference","id":"x"}]}`:                                       "input[0].type",
		`{"model":"` + testModel + `","input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`:       "input[0].content[0].type",
		`{"model":"` + testModel + `","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{"if":1}}}}`: "text.format.schema.if",
		`{"model":"` + testModel + `","input":"hi","tools":[{"type":"function","name":"bad name!","parameters":{}}]}`:      "tools[0].name",
		`{"model":"` + testModel + `","input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"nope"}}]}`: "tools[0].parameters.type",
	} {
		status, raw := rawResponses(t, s, body)
		is.True(status == 400) // refused before anything is sent
		var e errorBody
		is.NoErr(json.Unmarshal([]byte(raw), &e))
		is.True(e.Error.Param != nil)
		is.Equal(*e.Error.Param, param) // at the Responses path
	}
	is.Equal(s.emu.Count(emulator.KindUserQuery), 0)
}

func TestCodexLikeToolsAreOfferedFlattenedAndBuiltInsLeftOut(t *testing.T) {
	is := is.New(t)
	s := serve(t, "web_session", nil)
	body := `{"model":"` + testModel + `","stream":false,"store":false,"tool_choice":"auto","parallel_tool_calls":true,` +
		`"reasoning":{"summary":"auto"},"include":["reasoning.encrypted_content"],"prompt_cache_key":"k","client_metadata":{"a":"b"},` +
		`"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are an agent."}]},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"spawn please"}]}],` +
		`"tools":[{"type":"namespace","name":"multi_agent_v1","description":"agents","tools":[{"type":"function","name":"spawn_agent","description":"spawn","strict":false,"parameters":{"type":"object","properties":{"task":{"type":"string"}},"required":["task"]}}]},` +
		`{"type":"web_search","external_web_access":false}]}`
	status, raw := rawResponses(t, s, body)
	is.Equal(status, 200)
	var r struct {
		Output []map[string]any `json:"output"`
		Tools  []map[string]any `json:"tools"`
	}
	is.NoErr(json.Unmarshal([]byte(raw), &r))
	is.Equal(len(r.Tools), 1) // web_search was not offered upstream, and the response says so
	is.Equal(r.Tools[0]["namespace"], "multi_agent_v1")
	var call map[string]any
	for _, it := range r.Output {
		if it["type"] == "function_call" {
			call = it
		}
	}
	is.True(call != nil)
	is.Equal(call["name"], "spawn_agent")         // the client's own name
	is.Equal(call["namespace"], "multi_agent_v1") // and its namespace

	// The echo with the namespace continues the group.
	echo := fmt.Sprintf(`{"type":"function_call","call_id":%q,"name":"spawn_agent","namespace":"multi_agent_v1","arguments":%q},{"type":"function_call_output","call_id":%q,"output":"spawned"}`,
		call["call_id"], call["arguments"], call["call_id"])
	next := strings.Replace(body, `"text":"spawn please"}]}]`, `"text":"spawn please"}]},`+echo+`]`, 1)
	status, raw = rawResponses(t, s, next)
	is.Equal(status, 200) // continued
	is.Equal(s.emu.Count(emulator.KindToolResponse), 1)
}

func TestAGroupIsContinuedOnlyThroughTheAPIItWasIssuedThrough(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", nil)
	_, cont, _ := pending(t, s, "weather please")
	// The same conversation as Responses input items.
	var items []string
	for _, m := range cont {
		switch m["role"] {
		case "user":
			b, _ := json.Marshal(m["content"])
			items = append(items, `{"role":"user","content":`+string(b)+`}`)
		case "assistant":
			for _, tc := range m["tool_calls"].([]msg) {
				fn := tc["function"].(msg)
				b, _ := json.Marshal(map[string]any{"type": "function_call", "call_id": tc["id"], "name": fn["name"], "arguments": fn["arguments"]})
				items = append(items, string(b))
			}
		case "tool":
			b, _ := json.Marshal(map[string]any{"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]})
			items = append(items, string(b))
		}
	}
	var tools []map[string]any
	var chatTools []map[string]any
	is.NoErr(json.Unmarshal([]byte(toolsJSON), &chatTools))
	for _, ct := range chatTools {
		fn := ct["function"].(map[string]any)
		tools = append(tools, map[string]any{"type": "function", "name": fn["name"], "description": fn["description"], "parameters": fn["parameters"]})
	}
	tb, _ := json.Marshal(tools)
	status, raw := rawResponses(t, s, `{"model":"`+testModel+`","input":[`+strings.Join(items, ",")+`],"tools":`+string(tb)+`}`)
	is.Equal(status, 409) // a chat group is not continued through /v1/responses
	var e errorBody
	is.NoErr(json.Unmarshal([]byte(raw), &e))
	is.Equal(e.Error.Code, "continuation_tools_mismatch")
	is.Equal(s.emu.Count(emulator.KindToolResponse), 0)
}

func TestACustomToolIsOfferedAsAFunctionAndAnsweredAsACustomToolCall(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			tools := `[{"type":"custom","name":"apply_patch","description":"Apply a patch","format":{"type":"grammar","syntax":"lark","definition":"start: \"*** Begin Patch\" /.+/"}}]`
			first := `{"model":"` + testModel + `","input":[{"role":"user","content":"patch it"}],"tools":` + tools + `}`
			status, raw := rawResponses(t, s, first)
			is.Equal(status, 200)
			var r struct{ Output []map[string]any }
			is.NoErr(json.Unmarshal([]byte(raw), &r))
			var call map[string]any
			for _, it := range r.Output {
				if it["type"] == "custom_tool_call" {
					call = it
				}
			}
			is.True(call != nil) // a custom tool call, not a function call
			is.Equal(call["name"], "apply_patch")
			input, ok := call["input"].(string)
			is.True(ok) // its input is the free text, not a JSON object

			// The upstream saw a function with one string parameter, the grammar in its description.
			var sawGrammar bool
			for _, rec := range s.emu.Requests() {
				sawGrammar = sawGrammar || strings.Contains(string(rec.Body), `lark grammar`)
			}
			is.True(sawGrammar)

			echo := fmt.Sprintf(`,{"type":"custom_tool_call","call_id":%q,"name":"apply_patch","input":%q},{"type":"custom_tool_call_output","call_id":%q,"output":"Done!"}`,
				call["call_id"], input, call["call_id"])
			next := strings.Replace(first, `"content":"patch it"}`, `"content":"patch it"}`+echo, 1)
			status, raw = rawResponses(t, s, next)
			is.Equal(status, 200) // the echo continues the group
			is.True(strings.Contains(raw, "Done!"))
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1)
		})
	}
}
