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
	"github.com/go-json-experiment/json/jsontext"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
)

// Content is a string or an array of content blocks (a message's content,
// system, a tool_result's content).
type Content = wirejson.TextOr[wirejson.Object[Block]]

// Block is one content block. Which members a type uses: text (text),
// tool_use (id, name, input), tool_result (tool_use_id, content, is_error);
// the rest are not read.
type Block struct {
	Type      wirejson.String `json:"type"`
	Text      wirejson.String `json:"text"`
	ID        wirejson.String `json:"id"`
	Name      wirejson.String `json:"name"`
	Input     wirejson.Raw    `json:"input"`
	ToolUseID wirejson.String `json:"tool_use_id"`
	Content   Content         `json:"content"`
	IsError   wirejson.Bool   `json:"is_error"`
}

func (b *Block) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, b) }

// Message is one entry of messages.
type Message struct {
	Role    wirejson.String `json:"role"`
	Content Content         `json:"content"`
}

func (m *Message) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, m) }

// Tool is one entry of tools: a custom tool, or a server tool by its type.
type Tool struct {
	Type        wirejson.String `json:"type"`
	Name        wirejson.String `json:"name"`
	Description wirejson.String `json:"description"`
	InputSchema wirejson.Raw    `json:"input_schema"`
	Strict      wirejson.Bool   `json:"strict"`
}

func (t *Tool) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, t) }

// Tools is the tools member, read into entries only when asked.
type Tools = wirejson.List[wirejson.Object[Tool]]

// ToolChoice is tool_choice.
type ToolChoice struct {
	Type                   wirejson.String `json:"type"`
	DisableParallelToolUse wirejson.Bool   `json:"disable_parallel_tool_use"`
}

func (c *ToolChoice) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, c) }

// Thinking is thinking.
type Thinking struct {
	Type         wirejson.String `json:"type"`
	BudgetTokens wirejson.Number `json:"budget_tokens"`
}

func (t *Thinking) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, t) }

// OutputConfig is output_config.
type OutputConfig struct {
	Effort wirejson.String         `json:"effort"`
	Format wirejson.Object[Format] `json:"format"`
}

func (o *OutputConfig) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, o) }

// Format is output_config.format.
type Format struct {
	Type   wirejson.String `json:"type"`
	Schema wirejson.Raw    `json:"schema"`
}

func (f *Format) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, f) }

// Request is a Messages request (count_tokens: the same without max_tokens).
type Request struct {
	Model         wirejson.String                          `json:"model"`
	MaxTokens     wirejson.Number                          `json:"max_tokens"`
	Stream        wirejson.Bool                            `json:"stream"`
	System        Content                                  `json:"system"`
	Messages      wirejson.Array[wirejson.Object[Message]] `json:"messages"`
	Tools         Tools                                    `json:"tools"`
	ToolChoice    wirejson.Object[ToolChoice]              `json:"tool_choice"`
	StopSequences wirejson.Array[wirejson.String]          `json:"stop_sequences"`
	Thinking      wirejson.Object[Thinking]                `json:"thinking"`
	OutputConfig  wirejson.Object[OutputConfig]            `json:"output_config"`
	MCPServers    wirejson.Array[wirejson.Raw]             `json:"mcp_servers"`

	// Accepted and ignored, or refused unless default: read as values
	// (wirejson.Value) for the ingress's field policy, which the other APIs share.
	Temperature       wirejson.Value `json:"temperature"`
	TopP              wirejson.Value `json:"top_p"`
	TopK              wirejson.Value `json:"top_k"`
	Metadata          wirejson.Value `json:"metadata"`
	ServiceTier       wirejson.Value `json:"service_tier"`
	ContextManagement wirejson.Value `json:"context_management"`
	CacheControl      wirejson.Value `json:"cache_control"`
	Speed             wirejson.Value `json:"speed"`
	InferenceGeo      wirejson.Value `json:"inference_geo"`
	Container         wirejson.Value `json:"container"`
}

// Every struct type here reads itself (wirejson.Struct): by its tags, as
// json would, through a table made once per type; wirejson's tests check
// that the two read every body alike.

func (r *Request) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, r) }

// Decode reads body, which must be one JSON object, into a Request
// (wirejson.Decode).
func Decode(body []byte) (Request, error) { return wirejson.DecodeAs[Request](body) }
