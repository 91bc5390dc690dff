package httpapi

import (
	"encoding/json"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/chat"
)

// The request is decoded object by object into maps of raw values and each
// known key is read exactly (encoding/json would match struct fields
// case-insensitively, so "Stream" would silently mean "stream"). Known fields
// are honoured, ignored or refused as listed in the package documentation;
// keys this gateway does not know are ignored, so that newer SDKs and
// proxies that add harmless fields keep working. Refusals name the param path.

// decodeTop is what both APIs check first: the body is one JSON object of
// valid Unicode text, and its model is a configured one the caller's slot may
// use (allowed), refused exactly like an unknown one otherwise.
func (s *server) decodeTop(body []byte, allowed func(string) bool) (map[string]json.RawMessage, string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || !json.Valid(body) {
			return nil, "", invalid("", "The body is not valid JSON.")
		}
		return nil, "", invalid("", "The body must be a JSON object.")
	}
	if err := checkText(body); err != nil {
		return nil, "", err
	}
	if kindOf(top["model"]) != kindString || str(top["model"]) == "" {
		return nil, "", invalid("model", "is required and must be a string.")
	}
	model := str(top["model"])
	if !s.models[model] || !allowed(model) {
		return nil, "", s.modelNotFound(allowed)
	}
	return top, model, nil
}

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
