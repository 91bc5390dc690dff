package httpapi

// This file is the request policy of the top-level fields the APIs accept
// but ignore, or refuse unless they have their default value.

import (
	"encoding/json"
	"strconv"
	"strings"

	wchat "github.com/pmgate/pmgate/adapters/httpapi/wire/chat"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
)

// fieldRule is the policy of one top-level OpenAI field that the gateway
// accepts but ignores, or refuses unless it has its default value.
type fieldRule struct {
	name  string
	check func(param string, raw json.RawMessage) error
}

// checkFields applies each rule to its field of top, when present, in the
// rules' order; the first refusal wins.
func checkFields(top map[string]json.RawMessage, rules []fieldRule) error {
	for _, rule := range rules {
		if raw, ok := top[rule.name]; ok {
			if err := rule.check(rule.name, raw); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldRules holds the rule of every top-level field an API accepts but
// ignores, or refuses unless it has its default value. A field both APIs know
// (temperature, user, store, top_logprobs, …) has one rule for both.
var fieldRules = map[string]func(param string, raw json.RawMessage) error{
	// Accepted and ignored: the upstream has no such setting; the answer is
	// still a true answer to the conversation.
	"temperature":            ignored(kindNumber),
	"top_p":                  ignored(kindNumber),
	"max_tokens":             ignoredInteger,
	"max_completion_tokens":  ignoredInteger,
	"max_output_tokens":      ignoredInteger,
	"max_tool_calls":         ignoredInteger,
	"presence_penalty":       ignored(kindNumber),
	"frequency_penalty":      ignored(kindNumber),
	"stop":                   ignored(kindString, kindArray),
	"seed":                   ignoredInteger,
	"user":                   ignored(kindString),
	"metadata":               ignored(kindObject),
	"client_metadata":        ignored(kindObject),
	"store":                  ignored(kindBool),
	"service_tier":           ignored(kindString),
	"reasoning_effort":       ignored(kindString),
	"reasoning":              ignored(kindObject),
	"verbosity":              ignored(kindString),
	"include":                ignored(kindArray),
	"prompt_cache_key":       ignored(kindString),
	"prompt_cache_retention": ignored(kindString),
	"safety_identifier":      ignored(kindString),
	"stream_options":         ignored(kindObject), // Responses only: chat reads it itself
	"truncation":             checkTruncation,
	"text":                   checkResponsesText,
	// Refused unless default: honouring them is impossible and ignoring them
	// would return something other than what was asked for.
	"n":                    defaultInteger(1, "must be a positive integer.", "only one choice (n=1) is supported."),
	"logprobs":             refusedWhenTrue("log probabilities are not available."),
	"top_logprobs":         defaultInteger(0, "must be a non-negative integer.", "log probabilities are not available."),
	"logit_bias":           checkLogitBias,
	"response_format":      nil, // chat reads it typed (checkChatFields)
	"modalities":           checkModalities,
	"audio":                refusedUnlessNull("audio output is not supported."),
	"prediction":           refusedUnlessNull("predicted outputs are not supported."),
	"functions":            refusedUnlessNull("legacy function calling is not supported; use tools."),
	"function_call":        refusedUnlessNull("legacy function calling is not supported; use tool_choice."),
	"web_search_options":   refusedUnlessNull("web search is not supported."),
	"previous_response_id": refusedUnlessNull("server-side conversation state is not kept: send the full input with store: false."),
	"conversation":         refusedUnlessNull("server-side conversations are not kept: send the full input with store: false."),
	"prompt":               refusedUnlessNull("stored prompts are not available."),
	"background":           refusedWhenTrue("background responses are not kept."),
	// An OpenAI route's refusal of the Messages API's system prompt: the chat
	// and Responses APIs have none at the top level, and dropping it would
	// answer a different conversation (messages_decode.go reads it on
	// /v1/messages and never consults this rule).
	"system": refusedAnthropicSystem,
	// The Messages API's own fields that it passes on as sent
	// (messages_decode.go reads thinking, output_config and mcp_servers).
	"top_k":              ignoredInteger,
	"context_management": ignored(kindObject),
	"cache_control":      ignored(kindObject),
	"speed":              ignored(kindString),
	"inference_geo":      ignored(kindString),
	"container":          refusedUnlessNull("code execution containers are not available."),
}

// policy returns the rules of the named fields, in that order (the order in
// which a request's refusals are found). A name without a rule is a
// programming error found at start-up.
func policy(names ...string) []fieldRule {
	rules := make([]fieldRule, len(names))
	for i, n := range names {
		check, ok := fieldRules[n]
		if !ok {
			panic("httpapi: no field rule for " + n)
		}
		rules[i] = fieldRule{n, check}
	}
	return rules
}

// fieldPolicy lists the ignored and refused top-level chat fields, in the
// order of the package documentation's table. Honoured fields (model,
// messages, stream, stream_options, tools, tool_choice, parallel_tool_calls)
// are read by decodeRequest.
var fieldPolicy = policy(
	// refused: the body is the Messages API's
	"system",
	// accepted and ignored
	"temperature", "top_p", "max_tokens", "max_completion_tokens", "presence_penalty", "frequency_penalty",
	"stop", "seed", "user", "metadata", "store", "service_tier", "reasoning_effort", "verbosity",
	"prompt_cache_key", "safety_identifier",
	// refused unless default
	"n", "logprobs", "top_logprobs", "logit_bias", "response_format", "modalities", "audio", "prediction",
	"functions", "function_call", "web_search_options")

var kindNames = map[kind]string{
	kindBool: "a boolean", kindNumber: "a number", kindString: "a string", kindArray: "an array", kindObject: "an object",
}

// ignored accepts null or one of the given kinds, and nothing else.
func ignored(kinds ...kind) func(string, json.RawMessage) error {
	return func(param string, raw json.RawMessage) error {
		k := kindOf(raw)
		if k == kindNull {
			return nil
		}
		names := make([]string, 0, len(kinds))
		for _, want := range kinds {
			if k == want {
				return nil
			}
			names = append(names, kindNames[want])
		}
		return invalid(param, "must be "+strings.Join(names, " or ")+".")
	}
}

func ignoredInteger(param string, raw json.RawMessage) error {
	if absent(raw) {
		return nil
	}
	if _, ok := integer(raw); !ok {
		return invalid(param, "must be an integer.")
	}
	return nil
}

func refusedUnlessNull(detail string) func(string, json.RawMessage) error {
	return func(param string, raw json.RawMessage) error {
		if absent(raw) {
			return nil
		}
		return unsupported(param, detail)
	}
}

// defaultInteger accepts only an integer that is at least def, and refuses
// anything above def: the gateway can only honour the default.
func defaultInteger(def int64, invalidDetail, unsupportedDetail string) func(string, json.RawMessage) error {
	return func(param string, raw json.RawMessage) error {
		if absent(raw) {
			return nil
		}
		n, ok := integer(raw)
		switch {
		case !ok || n < def:
			return invalid(param, invalidDetail)
		case n > def:
			return unsupported(param, unsupportedDetail)
		}
		return nil
	}
}

// refusedWhenTrue accepts an optional boolean and refuses true.
func refusedWhenTrue(detail string) func(string, json.RawMessage) error {
	return func(param string, raw json.RawMessage) error {
		on, err := optBool(raw, param, false)
		if err != nil {
			return err
		}
		if on {
			return unsupported(param, detail)
		}
		return nil
	}
}

// nullOrObject reads a present field that must be null or an object: ok is
// false when there is nothing more to check (null, or the refusal in err).
func nullOrObject(param string, raw json.RawMessage) (f map[string]json.RawMessage, ok bool, err error) {
	switch kindOf(raw) {
	case kindNull:
		return nil, false, nil
	case kindObject:
		return fields(raw), true, nil
	}
	return nil, false, invalid(param, "must be an object.")
}

func checkLogitBias(param string, raw json.RawMessage) error {
	f, ok, err := nullOrObject(param, raw)
	if !ok || len(f) == 0 {
		return err
	}
	return unsupported(param, "token biases cannot be applied.")
}

// checkResponseFormat checks chat's response_format: null, or an object with
// a known type; the structured formats are read by responseFormat.
func checkResponseFormat(param string, rf wirejson.Object[wchat.ResponseFormat]) error {
	switch rf.Kind {
	case 0, 'n':
		return nil
	case '{':
		return outputFormatType(param+".type", rf.V.Type, "response format")
	}
	return invalid(param, "must be an object.")
}

// checkOutputFormatType reads the type of an output format (chat
// response_format, Responses text.format): "text", or a structured output the
// answer is verified against, which the API's decoder must then read into
// chat.Request.Output (decode_format.go); noun names the format in the
// refusal of an unknown type. (It replaces checkFormatType, which refused the
// structured types, so that a caller written against that one stops
// compiling instead of accepting a format it would ignore.)
func checkOutputFormatType(p string, t json.RawMessage, noun string) error {
	typ := wirejson.String{Kind: wirejson.Raw(t).Kind()}
	if typ.IsString() {
		typ.V = str(t)
	}
	return outputFormatType(p, typ, noun)
}

// outputFormatType is checkOutputFormatType of a type read typed.
func outputFormatType(p string, t wirejson.String, noun string) error {
	if !t.IsString() {
		return invalid(p, "is required and must be a string.")
	}
	switch t.V {
	case "text", "json_object", "json_schema":
		return nil
	}
	return invalid(p, "is not a known "+noun+".")
}

func checkModalities(param string, raw json.RawMessage) error {
	switch kindOf(raw) {
	case kindNull:
		return nil
	case kindArray:
	default:
		return invalid(param, "must be an array.")
	}
	for i, m := range elems(raw) {
		p := param + "[" + strconv.Itoa(i) + "]"
		if kindOf(m) != kindString {
			return invalid(p, "must be a string.")
		}
		if str(m) != "text" {
			return unsupported(p, "only the text modality is supported.")
		}
	}
	return nil
}

// refusedAnthropicSystem refuses a top-level system prompt on an OpenAI
// route: it is how an Anthropic Messages body looks, and the OpenAI APIs carry
// the system prompt in a message.
func refusedAnthropicSystem(param string, raw json.RawMessage) error {
	if absent(raw) {
		return nil
	}
	return invalid(param, "is a field of the Anthropic Messages API, which this route does not read: send an Anthropic body to "+
		pathMessages+", or put the system prompt in a message with role \"system\".")
}
