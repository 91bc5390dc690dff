// Package messages is the wire form of an Anthropic Messages API request
// (POST /v1/messages and /v1/messages/count_tokens): its types and its one
// strict decode. It knows the JSON shape only; what the gateway honours,
// ignores or refuses, and the translation into the domain's chat.Request, are
// the ingress's (adapters/httpapi).
//
// The body is read once, by github.com/go-json-experiment/json (the code of
// Go's encoding/json/v2; go1.26's own encoding/json/v2 still needs
// GOEXPERIMENT=jsonv2). Its defaults are the strictness wanted here: member
// names match exactly (never case-folded), a member name repeated in one
// object is an error (ErrDuplicateName, with the JSON pointer of the repeat),
// and text that is not valid UTF-8 (raw bytes or a lone surrogate escape) is an
// error. Members the type does not name are skipped, as the Messages API's
// ingress has always done, so that newer clients' harmless additions keep
// working.
//
// A member of the wrong kind is not a decode error: every field records the
// kind it was sent with (Kind, 0 when absent), and the translation refuses it
// in its fixed order with the API's wording, so that a request with two wrong
// fields is refused for the same one whatever order its members were sent in.
package messages

import (
	"bytes"
	"errors"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Kind is the JSON kind a member was sent with: 'n' (null), 't' and 'f'
// (booleans), '"' (string), '0' (number), '{' (object), '[' (array), or 0 when
// the member is absent.
type Kind = jsontext.Kind

// Absent says whether an optional member is missing or null (null means
// absent everywhere in this API).
func Absent(k Kind) bool { return k == 0 || k == 'n' }

// String is a member that should be a string.
type String struct {
	Kind Kind
	V    string // when Kind is '"'
}

// IsString says whether the member was sent as a string.
func (s String) IsString() bool { return s.Kind == '"' }

func (s *String) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	if s.Kind = d.PeekKind(); s.Kind != '"' {
		return d.SkipValue()
	}
	tok, err := d.ReadToken()
	s.V = tok.String()
	return err
}

// Bool is a member that should be a boolean.
type Bool struct {
	Kind Kind
	V    bool // when Kind is 't' or 'f'
}

// IsBool says whether the member was sent as a boolean.
func (b Bool) IsBool() bool { return b.Kind == 't' || b.Kind == 'f' }

func (b *Bool) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	b.Kind = d.PeekKind()
	b.V = b.Kind == 't'
	return d.SkipValue()
}

// Number is a member that should be a number: its text as sent, which the
// ingress reads as it needs (an integral float is an integer there).
type Number struct {
	Kind Kind
	Text string // when Kind is '0'
}

func (n *Number) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	if n.Kind = d.PeekKind(); n.Kind != '0' {
		return d.SkipValue()
	}
	v, err := d.ReadValue()
	n.Text = string(v)
	return err
}

// Raw is a member kept as the bytes it was sent as (a JSON schema, a tool
// call's input, a field only the ingress's shared field policy reads); nil
// when absent.
type Raw []byte

// Kind is the JSON kind of the value.
func (r Raw) Kind() Kind {
	if len(r) == 0 {
		return 0
	}
	switch c := r[0]; c {
	case 'n', 't', 'f', '"', '{', '[':
		return Kind(c)
	}
	return '0'
}

func (r *Raw) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	v, err := d.ReadValue()
	*r = append((*r)[:0], v...) // v is the decoder's memory
	return err
}

// Object is a member that should be an object of type T.
type Object[T any] struct {
	Kind Kind
	V    T // when Kind is '{'
}

// IsObject says whether the member was sent as an object.
func (o Object[T]) IsObject() bool { return o.Kind == '{' }

func (o *Object[T]) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	if o.Kind = d.PeekKind(); o.Kind != '{' {
		return d.SkipValue()
	}
	return json.UnmarshalDecode(d, &o.V)
}

// Array is a member that should be an array of T.
type Array[T any] struct {
	Kind  Kind
	Items []T // when Kind is '['
}

// IsArray says whether the member was sent as an array.
func (a Array[T]) IsArray() bool { return a.Kind == '[' }

func (a *Array[T]) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	if a.Kind = d.PeekKind(); a.Kind != '[' {
		return d.SkipValue()
	}
	return readItems(d, &a.Items)
}

func readItems[T any](d *jsontext.Decoder, items *[]T) error {
	if _, err := d.ReadToken(); err != nil { // [
		return err
	}
	for d.PeekKind() != ']' {
		var it T
		if err := json.UnmarshalDecode(d, &it); err != nil {
			return err
		}
		*items = append(*items, it)
	}
	_, err := d.ReadToken() // ]
	return err
}

// Content is a string or an array of content blocks (a message's content,
// system, a tool_result's content).
type Content struct {
	Kind   Kind
	Text   string          // when Kind is '"'
	Blocks []Object[Block] // when Kind is '['
}

func (c *Content) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	switch c.Kind = d.PeekKind(); c.Kind {
	case '"':
		tok, err := d.ReadToken()
		c.Text = tok.String()
		return err
	case '[':
		return readItems(d, &c.Blocks)
	}
	return d.SkipValue()
}

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

// Entries reads the entries of an array. The bytes were checked when the
// request was read (text, names), so reading them cannot fail.
func (t Tools) Entries() []Object[Tool] {
	var items []Object[Tool]
	if t.Kind() == '[' {
		_ = readItems(jsontext.NewDecoder(bytes.NewReader(t.Raw)), &items)
	}
	return items
}

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

// Decode reads body, which must be one JSON object, into a Request. Its
// errors are the library's: a *jsontext.SyntacticError for text that is not
// JSON, not UTF-8 or repeats a member name (DuplicateName finds it), and a
// *json.SemanticError for a body that is not an object.
func Decode(body []byte) (Request, error) {
	var r Request
	if i := bytes.IndexFunc(body, func(c rune) bool { return c != ' ' && c != '\t' && c != '\n' && c != '\r' }); i < 0 || body[i] != '{' {
		return r, ErrNotObject // null would otherwise read as an empty request
	}
	err := json.Unmarshal(body, &r)
	return r, err
}

// ErrNotObject is Decode's error for a body that is not a JSON object.
var ErrNotObject = errors.New("the body is not a JSON object")

// DuplicateName returns the path of the member whose name err reports as
// repeated in its object, as the names and indices that lead to it.
func DuplicateName(err error) ([]string, bool) {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) || !errors.Is(se.Err, jsontext.ErrDuplicateName) {
		return nil, false
	}
	var path []string
	for tok := range se.JSONPointer.Tokens() {
		path = append(path, tok)
	}
	return path, true
}

// DecodeOutputConfig reads an output_config value alone.
func DecodeOutputConfig(raw []byte) (Object[OutputConfig], error) {
	var o Object[OutputConfig]
	err := json.Unmarshal(raw, &o)
	return o, err
}
