package main

import (
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// TestAnOpenAIGoSessionContinuesItsConversation runs a multi-turn session the
// way an application on openai-go writes it — the assistant message echoed
// with Message.ToParam(), JSON and streamed turns mixed, a tool loop in the
// middle — and checks at the emulator that every turn after the first
// continued the one upstream conversation with only the new user message.
func TestAnOpenAIGoSessionContinuesItsConversation(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			client := openai.NewClient(option.WithBaseURL(s.base+"/v1"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
			weather := openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_weather", Description: openai.String("Weather for a city"),
				Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}})
			params := openai.ChatCompletionNewParams{Model: testModel, Tools: []openai.ChatCompletionToolUnionParam{weather},
				Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are terse. " + strings.Repeat("Rules. ", 500))}}
			turns := []string{"hello #loop=0", "what can you do? #loop=0", "weather in Oslo please", "thanks #loop=0", "and tomorrow? #loop=0", "bye #loop=0"}
			for i, text := range turns {
				params.Messages = append(params.Messages, openai.UserMessage(text))
				for {
					var m openai.ChatCompletionMessage
					if i%2 == 0 {
						c, err := client.Chat.Completions.New(t.Context(), params)
						is.NoErr(err)
						m = c.Choices[0].Message
					} else {
						acc, _, err := goStream(t, t.Context(), client, params)
						is.NoErr(err)
						m = acc.Choices[0].Message
					}
					params.Messages = append(params.Messages, m.ToParam()) // the SDK's own echo of the answer
					if len(m.ToolCalls) == 0 {
						is.True(m.Content != "") // answered
						if i > 0 && strings.Contains(text, "#loop=0") {
							is.True(strings.HasSuffix(m.Content, "You said: "+text)) // from the new message alone
						}
						break
					}
					for _, call := range m.ToolCalls {
						params.Messages = append(params.Messages, openai.ToolMessage("rain for "+call.Function.Name, call.ID))
					}
				}
			}
			qs := userQueries(t, s.emu)
			is.Equal(len(qs), len(turns))
			for i, q := range qs[1:] {
				is.True(q.conversationID != nil && *q.conversationID == *qs[1].conversationID) // continued, every turn
				is.Equal(q.query, turns[i+1])                                                  // with only the new message
			}
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1) // the tool loop's one continuation
		})
	}
}
