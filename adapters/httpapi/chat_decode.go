package httpapi

// This file decodes a POST /v1/chat/completions body (docs/API.md) on the
// shared readers of decode.go; its handler and rendering are chat_render.go.

import "github.com/pmgate/pmgate/domain/chat"

// decodeRequest validates a whole chat request and normalizes it. Nothing
// reaches the service unless this returns no error.
//
// allowed is the caller's model allowlist; a configured model outside it is
// refused exactly like an unknown model, so a slot cannot tell the two apart.
func (s *server) decodeRequest(body []byte, allowed func(string) bool) (chat.Request, error) {
	top, model, err := s.decodeTop(body, allowed)
	if err != nil {
		return chat.Request{}, err
	}
	req := chat.Request{Model: model, ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto}}
	if req.Stream, err = optBool(top["stream"], "stream", false); err != nil {
		return chat.Request{}, err
	}
	if so := top["stream_options"]; !absent(so) {
		if kindOf(so) != kindObject {
			return chat.Request{}, invalid("stream_options", "must be an object.")
		}
		if req.IncludeUsage, err = optBool(fields(so)["include_usage"], "stream_options.include_usage", false); err != nil {
			return chat.Request{}, err
		}
	}
	if req.ParallelToolCalls, err = optBool(top["parallel_tool_calls"], "parallel_tool_calls", true); err != nil {
		return chat.Request{}, err
	}
	if err := checkFields(top, fieldPolicy); err != nil {
		return chat.Request{}, err
	}
	if req.Thinking, err = decodeReasoningEffort(top); err != nil {
		return chat.Request{}, err
	}
	if req.Output, err = decodeResponseFormat(top["response_format"]); err != nil {
		return chat.Request{}, err
	}
	if req.Tools, err = s.decodeTools(top["tools"]); err != nil {
		return chat.Request{}, err
	}
	if req.ToolChoice, err = decodeToolChoice(top["tool_choice"], req.Tools); err != nil {
		return chat.Request{}, err
	}
	if req.Messages, err = s.decodeMessages(top["messages"]); err != nil {
		return chat.Request{}, err
	}
	return req, nil
}
