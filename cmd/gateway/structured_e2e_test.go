package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/domain/structured"
)

// Structured output end to end (docs/STRUCTURED-OUTPUT.md): openai-go's
// ResponseFormatJSONSchema and text.format through the real Postman adapter
// and the emulator, in both strategies.

// weatherSchema is strict-mode shaped, with a format and a pattern.
var weatherSchema = map[string]any{
	"type": "object", "additionalProperties": false, "required": []string{"city", "temperature", "observed", "station"},
	"properties": map[string]any{
		"city":        map[string]any{"type": "string", "minLength": 1},
		"temperature": map[string]any{"type": "number", "minimum": -90, "maximum": 60},
		"observed":    map[string]any{"type": "string", "format": "date-time"},
		"station":     map[string]any{"type": "string", "enum": []string{"OSL", "BGO"}},
	},
}

type weather struct {
	City        string  `json:"city"`
	Temperature float64 `json:"temperature"`
	Observed    string  `json:"observed"`
	Station     string  `json:"station"`
}

func schemaFormat() openai.ChatCompletionNewParamsResponseFormatUnion {
	return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Schema: weatherSchema, Strict: openai.Bool(true)}}}
}

func structuredParams(prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: testModel, ResponseFormat: schemaFormat(),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
}

// lastQuery is the input.query of the last USER_QUERY the emulator received.
func lastQuery(t *testing.T, emu *emulator.Server) string {
	t.Helper()
	q := ""
	for _, r := range emu.Requests() {
		if r.ChatType != emulator.KindUserQuery {
			continue
		}
		var b struct {
			Input struct {
				Query string `json:"query"`
			} `json:"input"`
		}
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatal(err)
		}
		q = b.Input.Query
	}
	return q
}

func TestOpenAIGoGetsATypedObjectValidAgainstItsSchema(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			c := responsesClient(s)
			comp, err := c.Chat.Completions.New(t.Context(), structuredParams("What is the weather in Oslo?"))
			is.NoErr(err)
			var w weather
			is.NoErr(json.Unmarshal([]byte(comp.Choices[0].Message.Content), &w)) // the content is exactly the JSON text
			is.Equal(w, weather{City: "value-city", Temperature: 1, Observed: "2026-01-01T00:00:00Z", Station: "OSL"})
			is.Equal(string(comp.Choices[0].FinishReason), "stop")
			q := lastQuery(t, s.emu)
			is.True(strings.HasPrefix(q, "What is the weather in Oslo?"+structured.InstructionSchema)) // the fixed instruction ends the query
			is.True(!strings.Contains(q, "weather\""))                                                 // with the schema, never the name

			// Streamed: the whole JSON in one content delta, after validation.
			stream := c.Chat.Completions.NewStreaming(t.Context(), structuredParams("And in Bergen?"))
			var contents []string
			for stream.Next() {
				ch := stream.Current()
				if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
					contents = append(contents, ch.Choices[0].Delta.Content)
				}
			}
			is.NoErr(stream.Err())
			is.Equal(len(contents), 1)
			is.NoErr(json.Unmarshal([]byte(contents[0]), &w))
		})
	}
}

func TestEveryInvalidAnswerIsRefusedAndNeverShown(t *testing.T) {
	reasons := map[string]string{
		emulator.ScenarioStructuredInvalidJSON: structured.ReasonNotJSON,
		emulator.ScenarioStructuredViolation:   "answer.city: " + structured.ReasonSchema + " (type)",
		emulator.ScenarioStructuredProse:       structured.ReasonProse,
		emulator.ScenarioStructuredRefusal:     structured.ReasonRefusal,
		emulator.ScenarioStructuredCodeFence:   structured.ReasonCodeFence,
	}
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			s := serve(t, st, nil)
			c := responsesClient(s)
			for scenario, reason := range reasons {
				t.Run(scenario, func(t *testing.T) {
					is := is.New(t)
					_, err := c.Chat.Completions.New(t.Context(), structuredParams("weather #scenario="+scenario))
					var apiErr *openai.Error
					is.True(errors.As(err, &apiErr))
					is.Equal(apiErr.StatusCode, 502)
					is.Equal(apiErr.Code, "upstream_output_invalid")
					is.True(strings.Contains(apiErr.Message, reason))        // its own reason
					is.True(!strings.Contains(apiErr.Message, "value-city")) // never a value

					// Streamed: a plain 502 before any event; no prefix was shown.
					resp := s.post(t, `{"model":"`+testModel+`","stream":true,"messages":[{"role":"user","content":"weather #scenario=`+scenario+`"}],`+
						`"response_format":{"type":"json_schema","json_schema":{"name":"weather","strict":true,"schema":`+mustJSON(t, weatherSchema)+`}}}`)
					is.Equal(resp.StatusCode, 502)
					is.True(strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"))
					var e errorBody
					is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
					is.Equal(e.Error.Code, "upstream_output_invalid")
				})
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestJSONObjectModeAnswersAnObject(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			c := responsesClient(s)
			p := openai.ChatCompletionNewParams{Model: testModel, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Reply in JSON")},
				ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}
			comp, err := c.Chat.Completions.New(t.Context(), p)
			is.NoErr(err)
			var obj map[string]any
			is.NoErr(json.Unmarshal([]byte(comp.Choices[0].Message.Content), &obj))
			is.True(strings.HasSuffix(lastQuery(t, s.emu), structured.InstructionObject))

			p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage("JSON please #scenario=structured_schema_violation")}
			_, err = c.Chat.Completions.New(t.Context(), p)
			var apiErr *openai.Error
			is.True(errors.As(err, &apiErr))
			is.Equal(apiErr.Code, "upstream_output_invalid")
			is.True(strings.Contains(apiErr.Message, "answer: "+structured.ReasonNotAnObject))
		})
	}
}

func TestWithToolsTheFinalAnswerIsStructuredAndTheConversationContinues(t *testing.T) {
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	format := `,"response_format":{"type":"json_schema","json_schema":{"name":"weather","strict":true,"schema":` + mustJSON(t, weatherSchema) + `}}`
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			history := []msg{{"role": "user", "content": "weather in Oslo?"}}
			status, c, e := turnResult(t, s, chatBody(t, testModel, history, tools, format))
			is.Equal(e.Error.Code, "")
			is.Equal(status, 200)
			is.Equal(c.Choices[0].FinishReason, "tool_calls") // tool calls work as without a format
			history = append(history, assistantAndResults(c, sunny)...)
			status, c, e = turnResult(t, s, chatBody(t, testModel, history, tools, format))
			is.Equal(e.Error.Code, "")
			is.Equal(status, 200)
			is.Equal(c.Choices[0].FinishReason, "stop")
			answer := *c.Choices[0].Message.Content
			var w weather
			is.NoErr(json.Unmarshal([]byte(answer), &w)) // the final text turn is the structured answer
			is.Equal(w.Station, "OSL")

			// The next turn echoes the validated answer: the anchored transcript
			// includes it, so the upstream conversation is continued.
			history = append(history, msg{"role": "assistant", "content": answer}, msg{"role": "user", "content": "and tomorrow?"})
			status, c, e = turnResult(t, s, chatBody(t, testModel, history, tools, format+`,"tool_choice":"none"`))
			is.Equal(e.Error.Code, "")
			is.Equal(status, 200)
			is.NoErr(json.Unmarshal([]byte(*c.Choices[0].Message.Content), &w))
			is.Equal(s.emu.Count(emulator.KindContinuedQuery), 1)
			is.True(strings.HasPrefix(lastQuery(t, s.emu), "and tomorrow?"+structured.InstructionSchema)) // only the new message, and the instruction again
		})
	}
}

func TestTheResponsesAPIVerifiesTextFormat(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			c := responsesClient(s)
			params := func(prompt string) responses.ResponseNewParams {
				format := responses.ResponseFormatTextConfigParamOfJSONSchema("weather", weatherSchema)
				format.OfJSONSchema.Strict = openai.Bool(true)
				return responses.ResponseNewParams{Model: testModel, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
					Text: responses.ResponseTextConfigParam{Format: format}}
			}
			r, err := c.Responses.New(t.Context(), params("weather?"))
			is.NoErr(err)
			var w weather
			is.NoErr(json.Unmarshal([]byte(r.OutputText()), &w))
			is.Equal(w.Observed, "2026-01-01T00:00:00Z")
			is.Equal(r.Text.Format.Type, "json_schema") // the format is echoed

			_, err = c.Responses.New(t.Context(), params("weather? #scenario=structured_prose"))
			var apiErr *openai.Error
			is.True(errors.As(err, &apiErr))
			is.Equal(apiErr.StatusCode, 502)
			is.Equal(apiErr.Code, "upstream_output_invalid")

			stream := c.Responses.NewStreaming(t.Context(), params("weather? #scenario=structured_schema_violation"))
			events := 0
			for stream.Next() {
				events++
			}
			is.True(stream.Err() != nil)
			is.Equal(events, 0) // nothing was released: not even response.created
		})
	}
}

// TestTheMessagesAPIVerifiesOutputConfigFormat: output_config.format goes
// through the same structured-output option as the other two APIs: a valid
// answer is exactly its JSON text, an invalid one is refused with
// upstream_output_invalid (500 api_error), streamed or not, and nothing of it
// is shown.
func TestTheMessagesAPIVerifiesOutputConfigFormat(t *testing.T) {
	schema, _ := json.Marshal(weatherSchema)
	format := `,"output_config":{"effort":"high","format":{"type":"json_schema","schema":` + string(schema) + `}}`
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			for _, stream := range []bool{false, true} {
				status, res, _ := anthTurn(t, s, messagesBody("weather?", stream, format))
				is.Equal(status, 200)
				var w weather
				is.NoErr(json.Unmarshal([]byte(res.Text()), &w))
				is.Equal(w.Observed, "2026-01-01T00:00:00Z")
				is.Equal(res.StopReason, "end_turn")
				is.True(strings.Contains(lastQuery(t, s.emu), structured.InstructionSchema))

				status, res, raw := anthTurn(t, s, messagesBody("weather? #scenario=structured_schema_violation", stream, format))
				is.True(strings.Contains(raw, "upstream_output_invalid"))
				is.True(!strings.Contains(raw, "OSL") && !strings.Contains(raw, "BGO")) // never a value
				// A structured turn has no delta before its check, so even a
				// stream fails before its headers: a plain Anthropic error.
				is.Equal(status, 500)
				is.Equal(len(res.Blocks), 0)
			}
			// Anthropic's only structured format is json_schema.
			status, _, raw := anthTurn(t, s, messagesBody("weather?", false, `,"output_config":{"format":{"type":"json_object"}}`))
			is.Equal(status, 400)
			is.True(strings.Contains(raw, "output_config.format.type"))
		})
	}
}

// TestALoneSurrogateInTheAnswerIsRefusedOnEveryAPI: an answer whose string is
// the lone surrogate escape "\ud800" would pass an enum naming U+FFFD (the
// validator reads it as U+FFFD), but every client decodes it differently, so
// it fails closed as upstream_output_invalid on chat completions, Responses
// and Messages, streamed or not; U+FFFD itself passes.
func TestALoneSurrogateInTheAnswerIsRefusedOnEveryAPI(t *testing.T) {
	const schema = `{"type":"object","properties":{"mark":{"type":"string","enum":["\ufffd"]}},"required":["mark"],"additionalProperties":false}`
	lone := " #scenario=" + emulator.ScenarioStructuredLoneSurrogate
	chatReq := func(text string, stream bool) string {
		return `{"model":"` + testModel + `","stream":` + mustJSON(t, stream) + `,"messages":[{"role":"user","content":` + mustJSON(t, text) + `}],` +
			`"response_format":{"type":"json_schema","json_schema":{"name":"mark","strict":true,"schema":` + schema + `}}}`
	}
	respReq := func(text string, stream bool) string {
		return `{"model":"` + testModel + `","stream":` + mustJSON(t, stream) + `,"input":` + mustJSON(t, text) + `,` +
			`"text":{"format":{"type":"json_schema","name":"mark","strict":true,"schema":` + schema + `}}}`
	}
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			s := serve(t, st, nil)
			for _, stream := range []bool{false, true} {
				is := is.New(t)
				// Chat completions.
				resp := s.post(t, chatReq("mark?", stream))
				is.Equal(resp.StatusCode, 200) // U+FFFD itself is the enum's value
				resp = s.post(t, chatReq("mark?"+lone, stream))
				is.Equal(resp.StatusCode, 502)
				var e errorBody
				is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
				is.Equal(e.Error.Code, "upstream_output_invalid")
				is.True(strings.Contains(e.Error.Message, structured.ReasonLoneSurrogate)) // its own reason

				// Responses.
				resp = s.do(t, "POST", "/v1/responses", strings.NewReader(respReq("mark?", stream)), "Content-Type", "application/json")
				is.Equal(resp.StatusCode, 200)
				resp = s.do(t, "POST", "/v1/responses", strings.NewReader(respReq("mark?"+lone, stream)), "Content-Type", "application/json")
				is.Equal(resp.StatusCode, 502)
				e = errorBody{}
				is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
				is.Equal(e.Error.Code, "upstream_output_invalid")
				is.True(strings.Contains(e.Error.Message, structured.ReasonLoneSurrogate))

				// Anthropic Messages.
				format := `,"output_config":{"format":{"type":"json_schema","schema":` + schema + `}}`
				status, res, _ := anthTurn(t, s, messagesBody("mark?", stream, format))
				is.Equal(status, 200)
				var m struct{ Mark string }
				is.NoErr(json.Unmarshal([]byte(res.Text()), &m))
				is.Equal(m.Mark, "\uFFFD")
				status, res, raw := anthTurn(t, s, messagesBody("mark?"+lone, stream, format))
				is.Equal(status, 500)
				is.True(strings.Contains(raw, "upstream_output_invalid"))
				is.True(strings.Contains(raw, "lone surrogate"))
				is.Equal(len(res.Blocks), 0) // nothing of the answer shown
			}
		})
	}
}

// TestAFailingStructuredAnswerAfterAToolLoopIsRefused: the structured_*
// scenario of the query that starts the tool loop changes the answer at its
// end, so the failure path of tools plus a format is the same as without
// tools: the tool round is shown as usual, the continuation's answer is
// refused with its reason and never shown, and it is not anchored.
func TestAFailingStructuredAnswerAfterAToolLoopIsRefused(t *testing.T) {
	tools := `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	format := `,"response_format":{"type":"json_schema","json_schema":{"name":"weather","strict":true,"schema":` + mustJSON(t, weatherSchema) + `}}`
	reasons := map[string]string{
		emulator.ScenarioStructuredViolation:     "answer.city: " + structured.ReasonSchema + " (type)",
		emulator.ScenarioStructuredProse:         structured.ReasonProse,
		emulator.ScenarioStructuredCodeFence:     structured.ReasonCodeFence,
		emulator.ScenarioStructuredLoneSurrogate: structured.ReasonLoneSurrogate,
	}
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			s := serve(t, st, nil)
			for scenario, reason := range reasons {
				is := is.New(t)
				history := []msg{{"role": "user", "content": "weather in Oslo? #scenario=" + scenario}}
				status, c, e := turnResult(t, s, chatBody(t, testModel, history, tools, format))
				is.Equal(e.Error.Code, "")
				is.Equal(status, 200)
				is.Equal(c.Choices[0].FinishReason, "tool_calls") // the tool round is shown as without a format
				history = append(history, assistantAndResults(c, sunny)...)
				status, _, e = turnResult(t, s, chatBody(t, testModel, history, tools, format))
				is.Equal(status, 502)
				is.Equal(e.Error.Code, "upstream_output_invalid")
				is.True(strings.Contains(e.Error.Message, reason))        // the loop's final answer, refused with its reason
				is.True(!strings.Contains(e.Error.Message, "value-city")) // never a value
			}
		})
	}
}
