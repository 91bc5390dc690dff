// Package chat holds the gateway's normalized view of an OpenAI chat request and
// of the events an upstream stream produces. Adapters translate wire formats to
// and from these types; the core never sees JSON of either side.
package chat

import (
	"bytes"

	"github.com/pmgate/pmgate/domain/budget"
)

// Role is a message author role after normalization.
type Role string

// SafeValue marks roles as safe for logs.
func (Role) SafeValue() {}

// Roles accepted by the gateway.
const (
	RoleSystem    Role = "system"
	RoleDeveloper Role = "developer"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// ToolCall is one function call of an assistant message, as the client sees it:
// the public id, the original tool name and the exact argument string.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Message is one normalized message. Content is nil when the client sent null or
// no content, and for an assistant message with tool calls an empty string is
// normalized to nil as well. Text parts are joined into one string.
type Message struct {
	Role       Role
	Content    *string
	Name       string // optional participant name; ignored for assistant messages
	ToolCalls  []ToolCall
	ToolCallID string // role=tool only
	// Trailing is set on the last tool result of an Anthropic Messages user
	// turn that had text after its tool_result blocks (Claude Code puts its
	// reminders, and a prompt typed after a failed round, there). That text
	// already ends Content, after a blank line, which is what a pending
	// group's one dispatch sends; when the results are history (their group
	// was dispatched before), the gateway sends Trailing alone as the next
	// user turn instead (domain/correlation, docs/CONVERSATIONS.md).
	Trailing string
}

// Tool is one normalized function tool definition. Parameters is the JSON schema
// exactly as the client sent it (raw JSON text, validated by the ingress); the
// tools hash binds it. UpstreamParameters is its lowered form (domain/toolschema),
// filled by the ingress: the only schema sent upstream and the one the
// arguments the upstream produces are validated against. Both are nil for a
// tool without parameters.
type Tool struct {
	Name               string
	Description        string
	Parameters         []byte
	UpstreamParameters []byte
	Strict             *bool
}

// Lowered returns the schema to send upstream and validate arguments against
// (nil for a tool without parameters). ok is false for a tool whose schema
// was never lowered: it must be neither sent nor trusted.
func (t Tool) Lowered() (schema []byte, ok bool) {
	if len(bytes.TrimSpace(t.UpstreamParameters)) == 0 {
		return nil, len(bytes.TrimSpace(t.Parameters)) == 0
	}
	return t.UpstreamParameters, true
}

// ToolChoiceMode is the effective tool_choice.
type ToolChoiceMode string

// Tool choice modes.
const (
	ToolChoiceAuto     ToolChoiceMode = "auto"
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required"
	ToolChoiceFunction ToolChoiceMode = "function"
)

// ToolChoice is the effective tool choice; Function is set for ToolChoiceFunction.
type ToolChoice struct {
	Mode     ToolChoiceMode
	Function string
}

// Request is a normalized chat completion request.
type Request struct {
	Model             string // public model id
	Messages          []Message
	Tools             []Tool
	ToolChoice        ToolChoice
	ParallelToolCalls bool // false when the client set parallel_tool_calls=false
	Stream            bool
	IncludeUsage      bool
	// Output is the structured output the answer must be (response_format,
	// text.format); the zero value is plain text.
	Output OutputFormat
	// API names the ingress API when it is not chat completions
	// ("responses"); a tool-call group is bound to the API it was issued
	// through.
	API string
	// Client is the client program the ingress told from the User-Agent
	// (budget.ClientOf); it only chooses the recipe a refusal points at.
	Client budget.Client
	// Thinking is the level the API's effort or thinking fields asked for
	// (EffortLevel, BudgetLevel); ThinkingOff when none did.
	Thinking ThinkingLevel
}

// OutputKind is the kind of answer a request asks for.
type OutputKind string

// SafeValue marks output kinds as safe for logs.
func (OutputKind) SafeValue() {}

// Output kinds.
const (
	OutputText       OutputKind = ""            // the default: any text
	OutputJSONObject OutputKind = "json_object" // one JSON object
	OutputJSONSchema OutputKind = "json_schema" // one JSON value valid against a schema
)

// OutputFormat is a request's structured output, prepared by domain/structured
// at the ingress. Schema is the caller's schema byte for byte (json_schema
// only); Checked is its validating lowering, the schema the upstream is told
// about and the answer is validated against.
type OutputFormat struct {
	Kind    OutputKind
	Name    string
	Schema  []byte
	Checked []byte
	Strict  bool
}

// Structured reports whether the answer must be JSON.
func (f OutputFormat) Structured() bool { return f.Kind != OutputText }

// Usage holds token counts reported by the upstream. A nil field was not reported
// and must never be presented as a real count.
type Usage struct {
	PromptTokens     *int64
	CompletionTokens *int64
	TotalTokens      *int64
}

// Reported says whether any token count was reported.
func (u Usage) Reported() bool {
	return u.PromptTokens != nil || u.CompletionTokens != nil || u.TotalTokens != nil
}

// EventKind is the kind of an upstream stream event after decoding.
type EventKind int

// Upstream event kinds.
const (
	EventText EventKind = iota + 1
	EventToolCall
	EventUsage
	EventConversation
)

// ToolCallDelta is one accumulated fragment of an upstream tool call. Index is the
// gateway's stable index of the call within the response (0, 1, …); UpstreamID is
// the upstream's private call id, or a stable internal id when it sent none, in
// which case Synthetic is set on every delta of the call (such a call can never
// be answered: a continuation could not name it); Name is set on the first delta
// of a call only; ArgumentsFragment concatenates, in order, to the exact upstream
// argument string.
type ToolCallDelta struct {
	Index             int
	UpstreamID        string
	Synthetic         bool
	UpstreamGroupID   string
	Name              string
	ArgumentsFragment string
}

// Event is one decoded upstream event.
type Event struct {
	Kind           EventKind
	Text           string         // EventText
	ToolCall       *ToolCallDelta // EventToolCall
	Usage          *Usage         // EventUsage
	ConversationID string         // EventConversation (private; never shown to clients)
}
