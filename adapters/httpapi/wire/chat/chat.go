// Package chat is the wire form of an OpenAI chat completions request
// (POST /v1/chat/completions): its types and its one strict decode
// (wirejson.Decode: exact member names, no repeated member name, valid UTF-8
// text; members of the wrong kind recorded, not refused). It knows the JSON
// shape only; what the gateway honours, ignores or refuses, and the
// translation into the domain's chat.Request, are the ingress's
// (adapters/httpapi).
package chat

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
)

// Request is a chat completions request. Fields lists every other member as
// sent, by name: the fields the ingress's shared field policy accepts and
// ignores or refuses unless default (temperature, n, reasoning_effort, …), and
// members no one reads.
type Request struct {
	Model             wirejson.String                          `json:"model"`
	Messages          wirejson.Array[wirejson.Object[Message]] `json:"messages"`
	Stream            wirejson.Bool                            `json:"stream"`
	StreamOptions     wirejson.Object[StreamOptions]           `json:"stream_options"`
	ParallelToolCalls wirejson.Bool                            `json:"parallel_tool_calls"`
	Tools             Tools                                    `json:"tools"`
	ToolChoice        ToolChoice                               `json:"tool_choice"`
	ResponseFormat    wirejson.Object[ResponseFormat]          `json:"response_format"`
	Fields            wirejson.Fields                          `json:",unknown"`
}

// Every struct type here reads itself (wirejson.Struct): by its tags, as
// json would, through a table made once per type; wirejson's tests check
// that the two read every body alike.

func (r *Request) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, r) }

// StreamOptions is stream_options.
type StreamOptions struct {
	IncludeUsage wirejson.Bool `json:"include_usage"`
}

func (o *StreamOptions) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, o) }

// Message is one entry of messages. Which members a role uses: content and
// name (system, developer, user), content, tool_calls, refusal, annotations,
// audio and function_call (assistant), content and tool_call_id (tool).
type Message struct {
	Role         wirejson.String                           `json:"role"`
	Content      Content                                   `json:"content"`
	Name         wirejson.String                           `json:"name"`
	ToolCalls    wirejson.Array[wirejson.Object[ToolCall]] `json:"tool_calls"`
	ToolCallID   wirejson.String                           `json:"tool_call_id"`
	Refusal      wirejson.String                           `json:"refusal"`
	Annotations  Shape                                     `json:"annotations"`
	Audio        Shape                                     `json:"audio"`
	FunctionCall Shape                                     `json:"function_call"`
}

func (m *Message) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, m) }

// Content is a message's content: a string, or an array of content parts.
type Content = wirejson.TextOr[wirejson.Object[Part]]

// Part is one content part: text parts carry text.
type Part = wirejson.TextPart

// Shape is a member only the kind of which is read.
type Shape struct {
	Kind wirejson.Kind
}

func (s *Shape) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	s.Kind = d.PeekKind()
	return d.SkipValue()
}

// ToolCall is one entry of an assistant message's tool_calls.
type ToolCall struct {
	ID       wirejson.String               `json:"id"`
	Type     wirejson.String               `json:"type"`
	Function wirejson.Object[FunctionCall] `json:"function"`
}

func (c *ToolCall) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, c) }

// FunctionCall is a tool call's function.
type FunctionCall struct {
	Name      wirejson.String `json:"name"`
	Arguments wirejson.String `json:"arguments"`
}

func (f *FunctionCall) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, f) }

// Tools is the tools member, read into entries only when asked.
type Tools = wirejson.List[wirejson.Object[Tool]]

// Tool is one entry of tools.
type Tool struct {
	Type     wirejson.String              `json:"type"`
	Function wirejson.Object[FunctionDef] `json:"function"`
}

func (t *Tool) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, t) }

// FunctionDef is a function tool's definition.
type FunctionDef struct {
	Name        wirejson.String `json:"name"`
	Description wirejson.String `json:"description"`
	Parameters  wirejson.Raw    `json:"parameters"`
	Strict      wirejson.Bool   `json:"strict"`
}

func (f *FunctionDef) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, f) }

// ToolChoice is tool_choice: a mode ("auto", "none", "required") or an
// object naming a function.
type ToolChoice struct {
	Kind wirejson.Kind
	Mode string             // when Kind is '"'
	V    ToolChoiceFunction // when Kind is '{'
}

// ToolChoiceFunction is the object form of tool_choice.
type ToolChoiceFunction struct {
	Type     wirejson.String        `json:"type"`
	Function wirejson.Object[Named] `json:"function"`
}

func (f *ToolChoiceFunction) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	return wirejson.Struct(d, f)
}

// Named is an object read for its name.
type Named struct {
	Name wirejson.String `json:"name"`
}

func (n *Named) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, n) }

func (c *ToolChoice) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	*c = ToolChoice{Kind: d.PeekKind()}
	switch c.Kind {
	case '"':
		var s wirejson.String
		err := s.UnmarshalJSONFrom(d)
		c.Mode = s.V
		return err
	case '{':
		var o wirejson.Object[ToolChoiceFunction]
		err := o.UnmarshalJSONFrom(d)
		c.V = o.V
		return err
	}
	return d.SkipValue()
}

// DecodeToolChoice reads raw, a tool_choice kept as sent (absent when empty).
func DecodeToolChoice(raw []byte) ToolChoice {
	var c ToolChoice
	if len(raw) > 0 {
		_ = wirejson.DecodePart(raw, &c) // the body was read before
	}
	return c
}

// ResponseFormat is response_format.
type ResponseFormat struct {
	Type       wirejson.String             `json:"type"`
	JSONSchema wirejson.Object[JSONSchema] `json:"json_schema"`
}

func (f *ResponseFormat) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, f) }

// JSONSchema is a json_schema output format: response_format.json_schema
// here, the format object itself in the Responses API's text.format.
type JSONSchema struct {
	Name        wirejson.String `json:"name"`
	Description wirejson.String `json:"description"`
	Schema      wirejson.Raw    `json:"schema"`
	Strict      wirejson.Bool   `json:"strict"`
}

func (s *JSONSchema) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, s) }

// Decode reads body, which must be one JSON object, into a Request
// (wirejson.Decode).
func Decode(body []byte) (Request, error) { return wirejson.DecodeAs[Request](body) }
