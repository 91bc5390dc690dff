package httpapi

// This file is the request policy of the top-level fields the APIs accept
// but ignore, or refuse unless they have their default value.

import (
	"strconv"
	"strings"

	wchat "github.com/pmgate/pmgate/adapters/httpapi/wire/chat"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
)

// check is the rule of one field, given the member as its wire package read
// it (wirejson.Value: its kind, a string's text, the bytes as sent). An
// absent member (Kind 0) is never refused: null and absent are the same.
type check func(param string, v wirejson.Value) error

// fieldRule is the policy of one top-level field that the gateway accepts
// but ignores, or refuses unless it has its default value.
type fieldRule struct {
	name  string
	check check
}

// checkFields applies each rule, in the rules' order, to the member value
// finds by its name; the first refusal wins. typed checks a member its wire
// request reads into a type of its own (a rule without a check) at its
// place in the order.
func checkFields(rules []fieldRule, value func(name string) wirejson.Value, typed func(name string) error) error {
	for _, rule := range rules {
		var err error
		if rule.check == nil {
			err = typed(rule.name)
		} else {
			err = rule.check(rule.name, value(rule.name))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fieldRules holds the rule of every top-level field an API accepts but
// ignores, or refuses unless it has its default value. A field both APIs know
// (temperature, user, store, top_logprobs, …) has one rule for both.
var fieldRules = map[string]check{
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
	"text":                   nil, // Responses reads it typed (checkResponsesText)
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
	"thinking":           nil, // Messages reads it typed (checkMessagesFields)
	"output_config":      nil, // Messages reads it typed
	"mcp_servers":        nil, // Messages refuses it typed
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
		c, ok := fieldRules[n]
		if !ok {
			panic("httpapi: no field rule for " + n)
		}
		rules[i] = fieldRule{n, c}
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

// kind is the JSON kind of a member, by the names the rules use.
type kind = wirejson.Kind

const (
	kindNull   kind = 'n'
	kindBool   kind = 't' // true; false is 'f' (see ignored)
	kindNumber kind = '0'
	kindString kind = '"'
	kindArray  kind = '['
	kindObject kind = '{'
)

var kindNames = map[kind]string{
	kindBool: "a boolean", kindNumber: "a number", kindString: "a string", kindArray: "an array", kindObject: "an object",
}

// ignored accepts null or one of the given kinds, and nothing else.
func ignored(kinds ...kind) check {
	return func(param string, v wirejson.Value) error {
		k := v.Kind()
		if wirejson.Absent(k) {
			return nil
		}
		if k == 'f' {
			k = kindBool
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

func ignoredInteger(param string, v wirejson.Value) error {
	if wirejson.Absent(v.Kind()) {
		return nil
	}
	if _, ok := v.Int(); !ok {
		return invalid(param, "must be an integer.")
	}
	return nil
}

func refusedUnlessNull(detail string) check {
	return func(param string, v wirejson.Value) error {
		if wirejson.Absent(v.Kind()) {
			return nil
		}
		return unsupported(param, detail)
	}
}

// defaultInteger accepts only an integer that is at least def, and refuses
// anything above def: the gateway can only honour the default.
func defaultInteger(def int64, invalidDetail, unsupportedDetail string) check {
	return func(param string, v wirejson.Value) error {
		if wirejson.Absent(v.Kind()) {
			return nil
		}
		n, ok := v.Int()
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
func refusedWhenTrue(detail string) check {
	return func(param string, v wirejson.Value) error {
		switch k := v.Kind(); {
		case wirejson.Absent(k) || k == 'f':
			return nil
		case k != 't':
			return invalid(param, "must be a boolean.")
		}
		return unsupported(param, detail)
	}
}

// nullOrObject refuses a present member that is neither null nor an object:
// ok is false when there is nothing more to check (absent, null, or the
// refusal in err).
func nullOrObject(param string, k kind) (ok bool, err error) {
	switch k {
	case 0, kindNull:
		return false, nil
	case kindObject:
		return true, nil
	}
	return false, invalid(param, "must be an object.")
}

func checkLogitBias(param string, v wirejson.Value) error {
	ok, err := nullOrObject(param, v.Kind())
	if !ok || v.Len() == 0 {
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

// outputFormatType checks the type of an output format (chat
// response_format, Responses text.format): "text", or a structured output the
// answer is verified against, which the API's decoder must then read into
// chat.Request.Output (decode_format.go); noun names the format in the
// refusal of an unknown type.
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

func checkModalities(param string, v wirejson.Value) error {
	switch v.Kind() {
	case 0, kindNull:
		return nil
	case kindArray:
	default:
		return invalid(param, "must be an array.")
	}
	for i, m := range v.Items() {
		p := param + "[" + strconv.Itoa(i) + "]"
		if m.Kind() != kindString {
			return invalid(p, "must be a string.")
		}
		if m.Text() != "text" {
			return unsupported(p, "only the text modality is supported.")
		}
	}
	return nil
}

// refusedAnthropicSystem refuses a top-level system prompt on an OpenAI
// route: it is how an Anthropic Messages body looks, and the OpenAI APIs carry
// the system prompt in a message.
func refusedAnthropicSystem(param string, v wirejson.Value) error {
	if wirejson.Absent(v.Kind()) {
		return nil
	}
	return invalid(param, "is a field of the Anthropic Messages API, which this route does not read: send an Anthropic body to "+
		pathMessages+", or put the system prompt in a message with role \"system\".")
}
