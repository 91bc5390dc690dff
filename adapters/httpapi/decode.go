package httpapi

import (
	"encoding/json"

	"github.com/cockroachdb/errors"
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
