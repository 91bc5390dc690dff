package main

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// startDemo runs `gateway demo --port 0` through run and returns the printed
// base URL and API key.
func startDemo(t *testing.T, strategy string) (base, key string) {
	t.Helper()
	return startDemoWith(t, strategy, nil, nil)
}

// startDemoWith is startDemo with more flags and an environment.
func startDemoWith(t *testing.T, strategy string, flags []string, env map[string]string) (base, key string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, logs := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"demo", "--port", "0", "--strategy", strategy}, flags...), func(k string) string { return env[k] }, out, logs)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo returned %v", err)
		}
	})
	baseRE := regexp.MustCompile(`base URL\s+(\S+)`)
	keyRE := regexp.MustCompile(`API key\s+(\S+)`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, k := baseRE.FindStringSubmatch(out.String()), keyRE.FindStringSubmatch(out.String())
		if b != nil && k != nil {
			return b[1], k[1]
		}
		select {
		case err := <-done:
			t.Fatalf("demo ended: %v\n%s", err, logs.String())
		default:
		}
	}
	t.Fatalf("demo did not print its base URL:\n%s\n%s", out.String(), logs.String())
	return "", ""
}

func TestTheDemoServesTheOfficialGoSDK(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			base, key := startDemo(t, st)
			client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))

			c, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
				Model:    demoModel,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello SDK")},
			})
			is.NoErr(err)                                                                  // a non-streamed turn
			is.True(strings.Contains(c.Choices[0].Message.Content, "You said: Hello SDK")) // with the emulator's reply
			is.Equal(string(c.Choices[0].FinishReason), "stop")

			stream := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
				Model:         demoModel,
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello stream")},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			})
			acc := openai.ChatCompletionAccumulator{}
			for stream.Next() {
				is.True(acc.AddChunk(stream.Current())) // every chunk is accepted by the SDK's accumulator
			}
			is.NoErr(stream.Err())                                                              // the stream ended cleanly
			is.True(strings.Contains(acc.Choices[0].Message.Content, "You said: Hello stream")) // the whole reply
			is.Equal(string(acc.Choices[0].FinishReason), "stop")
			is.True(acc.Usage.TotalTokens > 0) // and the upstream's usage

			bad := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
				Model:    demoModel,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("#scenario=failure_after_text")},
			})
			for bad.Next() {
			}
			is.True(bad.Err() != nil) // a failure mid-stream is an SDK error, never a finished message
			_ = io.EOF
		})
	}
}

func TestTheGoSDKRunsAToolLoopToItsFinalAnswer(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			base, key := startDemo(t, st)
			client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))
			tools := []openai.ChatCompletionToolUnionParam{
				openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_weather", Description: openai.String("Weather for a city"),
					Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}),
				openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "get_time", Description: openai.String("Time in a city"),
					Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}),
			}
			params := openai.ChatCompletionNewParams{Model: demoModel, Tools: tools,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather and time in Oslo #loop=2")}}
			rounds := 0
			for ; rounds < 5; rounds++ {
				stream := client.Chat.Completions.NewStreaming(t.Context(), params)
				acc := openai.ChatCompletionAccumulator{}
				for stream.Next() {
					is.True(acc.AddChunk(stream.Current())) // the SDK accepts every chunk
				}
				is.NoErr(stream.Err())
				msg := acc.Choices[0].Message
				if acc.Choices[0].FinishReason == "stop" {
					is.True(strings.Contains(msg.Content, "Tool results received")) // the final answer quotes the results
					break
				}
				is.Equal(string(acc.Choices[0].FinishReason), "tool_calls")
				is.True(len(msg.ToolCalls) >= 1)
				params.Messages = append(params.Messages, msg.ToParam())
				for _, tc := range msg.ToolCalls {
					is.True(strings.HasPrefix(tc.ID, "call_pmn_"))                                  // public ids
					is.True(!strings.Contains(tc.Function.Name, tc.Function.Name+tc.Function.Name)) // names not duplicated by accumulation
					is.True(strings.Contains(tc.Function.Arguments, `"city"`))                      // whole argument strings
					params.Messages = append(params.Messages, openai.ToolMessage("12 degrees for "+tc.Function.Name, tc.ID))
				}
			}
			is.Equal(rounds, 2) // two tool rounds, then the answer
		})
	}
}

func TestTheDemoHonoursTheProfileAndTheQueryLimit(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			hello := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello observed")}

			base, key := startDemoWith(t, st, []string{"--profile", "observed"}, nil)
			client := openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))
			_, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: demoModel, Messages: hello})
			var apiErr *openai.Error
			is.True(errors.As(err, &apiErr)) // the observed streams cannot be proven complete by the default rules
			want := "upstream_completion_ambiguous"
			if st == "access_token" {
				want = "upstream_incomplete_stream" // no [DONE]
			}
			is.Equal(apiErr.Code, want)

			base, key = startDemoWith(t, st, nil, map[string]string{"POSTMAN_MAX_QUERY_CHARS": "20"})
			client = openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))
			_, err = client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: demoModel,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("q", 21))}})
			is.True(errors.As(err, &apiErr))
			is.Equal(apiErr.StatusCode, 400)
			is.Equal(apiErr.Code, "upstream_query_too_long")                                          // refused before sending
			is.Equal(apiErr.Param, "messages[0]")                                                     // naming the message, alone over the limit
			is.True(strings.Contains(apiErr.Message, "21") && strings.Contains(apiErr.Message, "20")) // the size and the limit
			c, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: demoModel,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("q", 20))}})
			is.NoErr(err) // at the limit: sent
			is.Equal(string(c.Choices[0].FinishReason), "stop")

			base, key = startDemoWith(t, st, nil, map[string]string{"POSTMAN_MAX_QUERY_CHARS": "15000"})
			client = openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))
			_, err = client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: demoModel,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("q", 12000))}})
			is.NoErr(err) // a raised limit is honoured by the emulator too
		})
	}
}

func TestTheDemoRefusesAnUnknownProfile(t *testing.T) {
	is := is.New(t)
	err := run(t.Context(), []string{"demo", "--port", "0", "--profile", "lenient"}, func(string) string { return "" }, io.Discard, io.Discard)
	is.True(errors.Is(err, errUsage)) // a usage error
	err = run(t.Context(), []string{"emulator", "--addr", "127.0.0.1:0", "--profile", "nope"}, func(string) string { return "" }, io.Discard, io.Discard)
	is.True(errors.Is(err, errUsage))
}
