// Package messages is the wire form of an Anthropic Messages API request
// (POST /v1/messages and /v1/messages/count_tokens): its types and its one
// strict decode. It knows the JSON shape only; what the gateway honours,
// ignores or refuses, and the translation into the domain's chat.Request, are
// the ingress's (adapters/httpapi).
//
// The body is read once, strictly, by wirejson.Decode (the strictness and the
// member types every API's wire package shares are described there).
package messages

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
)

// The member types of wirejson, by the names this package has always used.
type (
	Kind          = wirejson.Kind
	String        = wirejson.String
	Bool          = wirejson.Bool
	Number        = wirejson.Number
	Raw           = wirejson.Raw
	Object[T any] = wirejson.Object[T]
	Array[T any]  = wirejson.Array[T]
)

// Absent says whether an optional member is missing or null.
func Absent(k Kind) bool { return wirejson.Absent(k) }

// Content is a string or an array of content blocks (a message's content,
// system, a tool_result's content).
type Content = wirejson.TextOr[Object[Block]]

// Block is one content block. Which members a type uses: text (text),
// tool_use (id, name, input), tool_result (tool_use_id, content, is_error);
// the rest are not read.
type Block struct {
	Type      String  `json:"type"`
	Text      String  `json:"text"`
	ID        String  `json:"id"`
	Name      String  `json:"name"`
	Input     Raw     `json:"input"`
	ToolUseID String  `json:"tool_use_id"`
	Content   Content `json:"content"`
	IsError   Bool    `json:"is_error"`
}

// Message is one entry of messages.
type Message struct {
	Role    String  `json:"role"`
	Content Content `json:"content"`
}

// Tool is one entry of tools: a custom tool, or a server tool by its type.
type Tool struct {
	Type        String `json:"type"`
	Name        String `json:"name"`
	Description String `json:"description"`
	InputSchema Raw    `json:"input_schema"`
	Strict      Bool   `json:"strict"`
}

// Tools is the tools member as the bytes it was sent as (nil when absent):
// they key the ingress's memory of translated tool sets, so that an agent's
// unchanged tools are read into entries only when they are not remembered.
type Tools struct {
	Raw Raw
}

// Kind is the JSON kind of the member.
func (t Tools) Kind() Kind { return t.Raw.Kind() }

func (t *Tools) UnmarshalJSONFrom(d *jsontext.Decoder) error { return t.Raw.UnmarshalJSONFrom(d) }

// Entries reads the entries of an array (nil when it is not one).
func (t Tools) Entries() []Object[Tool] { return wirejson.Entries[Object[Tool]](t.Raw) }

// ToolChoice is tool_choice.
type ToolChoice struct {
	Type                   String `json:"type"`
	DisableParallelToolUse Bool   `json:"disable_parallel_tool_use"`
}

// Thinking is thinking.
type Thinking struct {
	Type         String `json:"type"`
	BudgetTokens Number `json:"budget_tokens"`
}

// OutputConfig is output_config.
type OutputConfig struct {
	Effort String         `json:"effort"`
	Format Object[Format] `json:"format"`
}

// Format is output_config.format.
type Format struct {
	Type   String `json:"type"`
	Schema Raw    `json:"schema"`
}

// Request is a Messages request (count_tokens: the same without max_tokens).
type Request struct {
	Model         String                 `json:"model"`
	MaxTokens     Number                 `json:"max_tokens"`
	Stream        Bool                   `json:"stream"`
	System        Content                `json:"system"`
	Messages      Array[Object[Message]] `json:"messages"`
	Tools         Tools                  `json:"tools"`
	ToolChoice    Object[ToolChoice]     `json:"tool_choice"`
	StopSequences Array[String]          `json:"stop_sequences"`
	Thinking      Object[Thinking]       `json:"thinking"`
	OutputConfig  Object[OutputConfig]   `json:"output_config"`
	MCPServers    Array[Raw]             `json:"mcp_servers"`

	// Accepted and ignored, or refused unless default: kept as sent for the
	// ingress's field policy, which the other APIs share.
	Temperature       Raw `json:"temperature"`
	TopP              Raw `json:"top_p"`
	TopK              Raw `json:"top_k"`
	Metadata          Raw `json:"metadata"`
	ServiceTier       Raw `json:"service_tier"`
	ContextManagement Raw `json:"context_management"`
	CacheControl      Raw `json:"cache_control"`
	Speed             Raw `json:"speed"`
	InferenceGeo      Raw `json:"inference_geo"`
	Container         Raw `json:"container"`
}

// Decode reads body, which must be one JSON object, into a Request
// (wirejson.Decode).
func Decode(body []byte) (Request, error) {
	var r Request
	err := wirejson.Decode(body, &r)
	return r, err
}

// DecodeOutputConfig reads an output_config value alone.
func DecodeOutputConfig(raw []byte) (Object[OutputConfig], error) {
	var o Object[OutputConfig]
	err := json.Unmarshal(raw, &o)
	return o, err
}
