package chatapi

// This file translates a POST /v1/chat/completions body (docs/API.md), read
// once by wire/chat, into the chat.Request the core takes; its rendering is
// render.go.

import (
	"encoding/json"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	wchat "github.com/pmgate/pmgate/adapters/httpapi/wire/chat"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/chat"
)

// Decode validates a whole chat request and translates it, in the
// order of docs/API.md's refusals: the body, model, stream, stream_options,
// parallel_tool_calls, the field policy, reasoning_effort's word,
// response_format's schema, tools, tool_choice, messages. Nothing reaches the
// service unless this returns no error.
//
// in is the gateway's settings (models, tool limits). allowed is the
// caller's model allowlist; a configured model outside it is
// refused exactly like an unknown model, so a slot cannot tell the two apart.
func Decode(in *rules.Settings, body []byte, allowed func(string) bool) (chat.Request, error) {
	wr, err := rules.ReadWire(body, wchat.Decode, rules.IndexedPath)
	if err != nil {
		return chat.Request{}, err
	}
	model, err := in.Model(wr.Model, allowed)
	if err != nil {
		return chat.Request{}, err
	}
	req := chat.Request{Model: model, ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto}}
	if req.Stream, err = rules.OptionalBool(wr.Stream, "stream", false); err != nil {
		return chat.Request{}, err
	}
	if so := wr.StreamOptions; !wirejson.Absent(so.Kind) {
		if !so.IsObject() {
			return chat.Request{}, rules.Invalid("stream_options", "must be an object.")
		}
		if req.IncludeUsage, err = rules.OptionalBool(so.V.IncludeUsage, "stream_options.include_usage", false); err != nil {
			return chat.Request{}, err
		}
	}
	if req.ParallelToolCalls, err = rules.OptionalBool(wr.ParallelToolCalls, "parallel_tool_calls", true); err != nil {
		return chat.Request{}, err
	}
	if err := checkChatFields(&wr); err != nil {
		return chat.Request{}, err
	}
	if req.Thinking, _, err = rules.Effort(wr.Fields["reasoning_effort"].AsString(), "reasoning_effort"); err != nil {
		return chat.Request{}, err
	}
	if req.Output, err = rules.ResponseFormat(wr.ResponseFormat); err != nil {
		return chat.Request{}, err
	}
	if req.Tools, err = decodeTools(in, json.RawMessage(wr.Tools.Raw)); err != nil {
		return chat.Request{}, err
	}
	if req.ToolChoice, err = rules.ToolChoice(wr.ToolChoice, req.Tools); err != nil {
		return chat.Request{}, err
	}
	if req.Messages, err = chatMessages(in, wr.Messages); err != nil {
		return chat.Request{}, err
	}
	return req, nil
}

// checkChatFields is chat's field policy (fieldPolicy), in its order; the
// first refusal wins. response_format is read typed (checkResponseFormat),
// the rest as sent.
func checkChatFields(wr *wchat.Request) error {
	return rules.CheckFields(fieldPolicy, func(name string) wirejson.Value { return wr.Fields[name] }, func(name string) error {
		return rules.CheckResponseFormat(name, wr.ResponseFormat) // response_format: the one rule without a check here
	})
}

// fieldPolicy lists the ignored and refused top-level chat fields, in the
// order of the package documentation's table. Honoured fields (model,
// messages, stream, stream_options, tools, tool_choice, parallel_tool_calls)
// are read by Decode.
var fieldPolicy = rules.Policy(
	// refused: the body is the Messages API's
	"system",
	// accepted and ignored
	"temperature", "top_p", "max_tokens", "max_completion_tokens", "presence_penalty", "frequency_penalty",
	"stop", "seed", "user", "metadata", "store", "service_tier", "reasoning_effort", "verbosity",
	"prompt_cache_key", "safety_identifier",
	// refused unless default
	"n", "logprobs", "top_logprobs", "logit_bias", "response_format", "modalities", "audio", "prediction",
	"functions", "function_call", "web_search_options")
