package rules

// This file is the request policy of the top-level fields the APIs accept
// but ignore, or refuse unless they have their default value.

import (
	"strconv"
	"strings"

	wchat "github.com/pmgate/pmgate/adapters/httpapi/wire/chat"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
)

// Check is the rule of one field, given the member as its wire package read
// it (wirejson.Value: its kind, a string's text, the bytes as sent). An
// absent member (Kind 0) is never refused: null and absent are the same.
type Check func(param string, v wirejson.Value) error

// FieldRule is the policy of one top-level field that the gateway accepts
// but ignores, or refuses unless it has its default value.
type FieldRule struct {
	Name  string
	check Check
}

// CheckFields applies each rule, in the rules' order, to the member value
// finds by its name; the first refusal wins. typed checks a member its wire
// request reads into a type of its own (a rule without a check) at its
// place in the order.
func CheckFields(rules []FieldRule, value func(name string) wirejson.Value, typed func(name string) error) error {
	for _, rule := range rules {
		var err error
		if rule.check == nil {
			err = typed(rule.Name)
		} else {
			err = rule.check(rule.Name, value(rule.Name))
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
var fieldRules = map[string]Check{
	// Accepted and ignored: the upstream has no such setting; the answer is
	// still a true answer to the conversation.
	"temperature":            Ignored(KindNumber),
	"top_p":                  Ignored(KindNumber),
	"max_tokens":             ignoredInteger,
	"max_completion_tokens":  ignoredInteger,
	"max_output_tokens":      ignoredInteger,
	"max_tool_calls":         ignoredInteger,
	"presence_penalty":       Ignored(KindNumber),
	"frequency_penalty":      Ignored(KindNumber),
	"stop":                   Ignored(KindString, KindArray),
	"seed":                   ignoredInteger,
	"user":                   Ignored(KindString),
	"metadata":               Ignored(KindObject),
	"client_metadata":        Ignored(KindObject),
	"store":                  Ignored(KindBool),
	"service_tier":           Ignored(KindString),
	"reasoning_effort":       Ignored(KindString),
	"reasoning":              Ignored(KindObject),
	"verbosity":              Ignored(KindString),
	"include":                Ignored(KindArray),
	"prompt_cache_key":       Ignored(KindString),
	"prompt_cache_retention": Ignored(KindString),
	"safety_identifier":      Ignored(KindString),
	"stream_options":         Ignored(KindObject), // Responses only: chat reads it itself
	"truncation":             checkTruncation,
	"text":                   nil, // Responses reads it typed (checkResponsesText)
	// Refused unless default: honouring them is impossible and ignoring them
	// would return something other than what was asked for.
	"n":                    DefaultInteger(1, "must be a positive integer.", "only one choice (n=1) is supported."),
	"logprobs":             RefusedWhenTrue("log probabilities are not available."),
	"top_logprobs":         DefaultInteger(0, "must be a non-negative integer.", "log probabilities are not available."),
	"logit_bias":           checkLogitBias,
	"response_format":      nil, // chat reads it typed (chatapi's checkChatFields)
	"modalities":           checkModalities,
	"audio":                RefusedUnlessNull("audio output is not supported."),
	"prediction":           RefusedUnlessNull("predicted outputs are not supported."),
	"functions":            RefusedUnlessNull("legacy function calling is not supported; use tools."),
	"function_call":        RefusedUnlessNull("legacy function calling is not supported; use tool_choice."),
	"web_search_options":   RefusedUnlessNull("web search is not supported."),
	"previous_response_id": RefusedUnlessNull("server-side conversation state is not kept: send the full input with store: false."),
	"conversation":         RefusedUnlessNull("server-side conversations are not kept: send the full input with store: false."),
	"prompt":               RefusedUnlessNull("stored prompts are not available."),
	"background":           RefusedWhenTrue("background responses are not kept."),
	// An OpenAI route's refusal of the Messages API's system prompt: the chat
	// and Responses APIs have none at the top level, and dropping it would
	// answer a different conversation (msgapi/decode.go reads it on
	// /v1/messages and never consults this rule).
	"system": refusedAnthropicSystem,
	// The Messages API's own fields that it passes on as sent
	// (msgapi/decode.go reads thinking, output_config and mcp_servers).
	"top_k":              ignoredInteger,
	"thinking":           nil, // Messages reads it typed (msgapi's checkMessagesFields)
	"output_config":      nil, // Messages reads it typed
	"mcp_servers":        nil, // Messages refuses it typed
	"context_management": Ignored(KindObject),
	"cache_control":      Ignored(KindObject),
	"speed":              Ignored(KindString),
	"inference_geo":      Ignored(KindString),
	"container":          RefusedUnlessNull("code execution containers are not available."),
}

// Policy returns the rules of the named fields, in that order (the order in
// which a request's refusals are found). A name without a rule is a
// programming error found at start-up.
func Policy(names ...string) []FieldRule {
	rules := make([]FieldRule, len(names))
	for i, n := range names {
		c, ok := fieldRules[n]
		if !ok {
			panic("httpapi: no field rule for " + n)
		}
		rules[i] = FieldRule{n, c}
	}
	return rules
}

// Kind is the JSON Kind of a member, by the names the rules use.
type Kind = wirejson.Kind

const (
	KindNull   Kind = 'n'
	KindBool   Kind = 't' // true; false is 'f' (see ignored)
	KindNumber Kind = '0'
	KindString Kind = '"'
	KindArray  Kind = '['
	KindObject Kind = '{'
)

var kindNames = map[Kind]string{
	KindBool: "a boolean", KindNumber: "a number", KindString: "a string", KindArray: "an array", KindObject: "an object",
}

// Ignored accepts null or one of the given kinds, and nothing else.
func Ignored(kinds ...Kind) Check {
	return func(param string, v wirejson.Value) error {
		k := v.Kind()
		if wirejson.Absent(k) {
			return nil
		}
		if k == 'f' {
			k = KindBool
		}
		names := make([]string, 0, len(kinds))
		for _, want := range kinds {
			if k == want {
				return nil
			}
			names = append(names, kindNames[want])
		}
		return Invalid(param, "must be "+strings.Join(names, " or ")+".")
	}
}

func ignoredInteger(param string, v wirejson.Value) error {
	if wirejson.Absent(v.Kind()) {
		return nil
	}
	if _, ok := v.Int(); !ok {
		return Invalid(param, "must be an integer.")
	}
	return nil
}

// RefusedUnlessNull is the rule of a field refused unless absent or null
// (detail says why).
func RefusedUnlessNull(detail string) Check {
	return func(param string, v wirejson.Value) error {
		if wirejson.Absent(v.Kind()) {
			return nil
		}
		return Unsupported(param, detail)
	}
}

// DefaultInteger accepts only an integer that is at least def, and refuses
// anything above def: the gateway can only honour the default.
func DefaultInteger(def int64, invalidDetail, unsupportedDetail string) Check {
	return func(param string, v wirejson.Value) error {
		if wirejson.Absent(v.Kind()) {
			return nil
		}
		n, ok := v.Int()
		switch {
		case !ok || n < def:
			return Invalid(param, invalidDetail)
		case n > def:
			return Unsupported(param, unsupportedDetail)
		}
		return nil
	}
}

// RefusedWhenTrue accepts an optional boolean and refuses true.
func RefusedWhenTrue(detail string) Check {
	return func(param string, v wirejson.Value) error {
		switch k := v.Kind(); {
		case wirejson.Absent(k) || k == 'f':
			return nil
		case k != 't':
			return Invalid(param, "must be a boolean.")
		}
		return Unsupported(param, detail)
	}
}

// NullOrObject refuses a present member that is neither null nor an object:
// ok is false when there is nothing more to check (absent, null, or the
// refusal in err).
func NullOrObject(param string, k Kind) (ok bool, err error) {
	switch k {
	case 0, KindNull:
		return false, nil
	case KindObject:
		return true, nil
	}
	return false, Invalid(param, "must be an object.")
}

func checkLogitBias(param string, v wirejson.Value) error {
	ok, err := NullOrObject(param, v.Kind())
	if !ok || v.Len() == 0 {
		return err
	}
	return Unsupported(param, "token biases cannot be applied.")
}

// CheckResponseFormat checks chat's response_format: null, or an object with
// a known type; the structured formats are read by responseFormat.
func CheckResponseFormat(param string, rf wirejson.Object[wchat.ResponseFormat]) error {
	switch rf.Kind {
	case 0, 'n':
		return nil
	case '{':
		return OutputFormatType(param+".type", rf.V.Type, "response format")
	}
	return Invalid(param, "must be an object.")
}

// OutputFormatType checks the type of an output format (chat
// response_format, Responses text.format): "text", or a structured output the
// answer is verified against, which the API's decoder must then read into
// chat.Request.Output (format.go); noun names the format in the
// refusal of an unknown type.
func OutputFormatType(p string, t wirejson.String, noun string) error {
	if !t.IsString() {
		return Invalid(p, "is required and must be a string.")
	}
	switch t.V {
	case "text", "json_object", "json_schema":
		return nil
	}
	return Invalid(p, "is not a known "+noun+".")
}

func checkModalities(param string, v wirejson.Value) error {
	switch v.Kind() {
	case 0, KindNull:
		return nil
	case KindArray:
	default:
		return Invalid(param, "must be an array.")
	}
	for i, m := range v.Items() {
		p := param + "[" + strconv.Itoa(i) + "]"
		if m.Kind() != KindString {
			return Invalid(p, "must be a string.")
		}
		if m.Text() != "text" {
			return Unsupported(p, "only the text modality is supported.")
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
	return Invalid(param, "is a field of the Anthropic Messages API, which this route does not read: send an Anthropic body to "+
		"/v1/messages, or put the system prompt in a message with role \"system\".")
}

// checkTruncation reads Responses' truncation: "disabled" or "auto", or absent.
func checkTruncation(param string, v wirejson.Value) error {
	switch v.Kind() {
	case 0, KindNull:
		return nil
	case KindString:
		if t := v.Text(); t == "disabled" || t == "auto" {
			return nil
		}
	}
	return Invalid(param, `must be "disabled" or "auto".`)
}
