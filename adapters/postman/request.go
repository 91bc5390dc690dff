package postman

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/budget"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/structured"
	"github.com/pmgate/pmgate/ports"
)

// Constant values of the upstream request envelope (docs/UPSTREAM.md).
const (
	chatTypeUserQuery    = "USER_QUERY"
	chatTypeToolResponse = "TOOL_RESPONSE"
	productWorkspace     = "workspace_v12"
	startedFromChatInput = "CHAT_INPUT"
	platformWeb          = "WEB"
	statusSuccess        = "SUCCESS"
)

// Wire shapes. Field order is the order of the body in docs/UPSTREAM.md; every field is
// a constant, a configured value or derived from the normalized request.
type wireBody struct {
	Input             any               `json:"input"`
	Platform          string            `json:"platform"`
	ClientTools       wireClientTools   `json:"clientTools"`
	ClientKBTerms     wireKBTerms       `json:"clientKBTerms"`
	MandatoryContext  wireMandatory     `json:"mandatoryContext"`
	SelectedContext   []struct{}        `json:"selectedContext"`
	BackgroundContext []struct{}        `json:"backgroundContext"`
	DevModeOptions    wireDevModeOption `json:"devModeOptions"`
}

type wireQueryInput struct {
	ChatType       string  `json:"chatType"`
	Query          string  `json:"query"`
	ConversationID *string `json:"conversationId"`
	Product        string  `json:"product"`
	UseCase        *string `json:"useCase"`
	Agent          *string `json:"agent"`
	StartedFrom    string  `json:"startedFrom"`
	ToolResponse   string  `json:"toolResponse"`
}

// wireContinuation is the head every TOOL_RESPONSE input starts with; the
// forms below embed it, so its members come first, in this order.
type wireContinuation struct {
	ChatType        string  `json:"chatType"`
	Query           string  `json:"query"`
	ConversationID  string  `json:"conversationId"`
	Product         string  `json:"product"`
	UseCase         *string `json:"useCase"`
	Agent           *string `json:"agent"`
	StartedFrom     string  `json:"startedFrom"`
	ToolCallGroupID string  `json:"toolCallGroupId,omitempty"`
}

// continuationHead is the head of c's TOOL_RESPONSE, with the group id when the
// upstream sent one.
func continuationHead(c ports.Continuation) wireContinuation {
	return wireContinuation{
		ChatType:        chatTypeToolResponse,
		Query:           "",
		ConversationID:  c.ConversationID,
		Product:         productWorkspace,
		StartedFrom:     startedFromChatInput,
		ToolCallGroupID: c.UpstreamGroupID,
	}
}

// wireGroupedInput is the grouped continuation of the access_token strategy,
// also sent by web_session with parallel calling (docs/CORRELATION.md).
type wireGroupedInput struct {
	wireContinuation
	ToolResponse  string              `json:"toolResponse"`
	ToolResponses []wireGroupedResult `json:"toolResponses"`
}

type wireGroupedResult struct {
	ToolCallID          string `json:"toolCallId"`
	Content             string `json:"content"`
	ToolResponseSummary string `json:"toolResponseSummary"`
	ToolResponseStatus  string `json:"toolResponseStatus"`
}

// wireFlatInput is the access_token singular flat continuation: one call,
// answered on its own (docs/CORRELATION.md).
type wireFlatInput struct {
	wireContinuation
	ToolCallID          string `json:"toolCallId"`
	ToolResponse        string `json:"toolResponse"`
	ToolResponseSummary string `json:"toolResponseSummary"`
}

// wireWebInput is the web_session flat continuation: the flat form with a
// status (docs/UPSTREAM.md).
type wireWebInput struct {
	wireFlatInput
	ToolResponseStatus string `json:"toolResponseStatus"`
}

type wirePackedResult struct {
	ToolCallID string `json:"toolCallId"`
	Status     string `json:"status"`
	Content    string `json:"content"`
}

type wireClientTools struct {
	Native     []struct{}               `json:"native"`
	ThirdParty map[string]wireToolGroup `json:"thirdParty,omitempty"`
}

type wireToolGroup struct {
	Tools []wireTool `json:"tools"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

type wireKBTerms struct {
	Native []struct{} `json:"native"`
}

type wireMandatory struct {
	WorkspaceID string `json:"workspaceId"`
}

type wireDevModeOption struct {
	SelectedModel                  string `json:"selectedModel"`
	IsParallelToolCallingSupported bool   `json:"isParallelToolCallingSupported"`
	AutoRun                        bool   `json:"autoRun"`
	SupportsAskUser                bool   `json:"supportsAskUser"`
	SupportsActionRecommendations  bool   `json:"supportsActionRecommendations"`
	UseThinkingModeIfAvailable     bool   `json:"useThinkingModeIfAvailable"`
	// ThinkingLevel is sent only with the thinking mode on: low, medium or
	// high, the service's whole contract (docs/UPSTREAM.md).
	ThinkingLevel string `json:"thinkingLevel,omitempty"`
}

// emptyParameters is sent for a tool without a parameter schema.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// BuildBody builds the upstream JSON body of one request: a fresh USER_QUERY
// when req.Continuation is nil, else the strategy's TOOL_RESPONSE. It reads only
// the configuration and the normalized, validated request; it serializes once
// and refuses, before anything is sent, a body over MaxBodyBytes or a tool
// result over MaxToolResultBytes (upstream_request_too_large). Every error is
// marked ports.ErrNotSent.
//
// Each tool is sent with its lowered schema (chat.Tool.UpstreamParameters);
// a tool with parameters but no lowered schema is an internal_error.
//
// Errors: model_not_found, invalid_request (more tools than MAX_TOOLS, an
// invalid parameter schema, a continuation without a conversation id or with an
// ungrouped multi-call group), unsupported_tool_result_continuation (a call the
// upstream sent without an id), upstream_request_too_large.
func BuildBody(cfg pmconfig.Config, req ports.UpstreamRequest) ([]byte, error) {
	m, ok := cfg.Model(req.Chat.Model)
	if !ok {
		return nil, notSent(errs.New(errs.ModelNotFound))
	}
	if len(req.Chat.Tools) > cfg.MaxTools {
		return nil, notSent(errs.Newf(errs.InvalidRequest, "%d tools exceed MAX_TOOLS", safeInt(len(req.Chat.Tools))))
	}
	var q string // the query of a fresh USER_QUERY, built once
	if req.Continuation == nil {
		// A structured output's fixed instruction ends the query (domain/structured)
		// and counts against the budget; a TOOL_RESPONSE has no query: the
		// conversation already holds it.
		q = Transcript(req.Chat.Messages) + structured.Instruction(req.Chat.Output)
	}
	if err := checkBudgets(cfg, req, q); err != nil {
		return nil, notSent(err)
	}
	tools := len(req.Chat.Tools) > 0
	parallel := tools && cfg.Parallel(req.Chat.ParallelToolCalls)
	body := wireBody{
		Platform:          platformWeb,
		ClientTools:       wireClientTools{Native: []struct{}{}},
		ClientKBTerms:     wireKBTerms{Native: []struct{}{}},
		MandatoryContext:  wireMandatory{WorkspaceID: cfg.WorkspaceID},
		SelectedContext:   []struct{}{},
		BackgroundContext: []struct{}{},
		DevModeOptions: wireDevModeOption{
			SelectedModel:                  m.Upstream,
			IsParallelToolCallingSupported: parallel,
			AutoRun:                        tools && req.Chat.ToolChoice.Mode != chat.ToolChoiceNone,
			UseThinkingModeIfAvailable:     req.Chat.Thinking != chat.ThinkingOff,
			ThinkingLevel:                  string(req.Chat.Thinking),
		},
	}
	if tools {
		group := wireToolGroup{Tools: make([]wireTool, 0, len(req.Chat.Tools))}
		for _, t := range req.Chat.Tools {
			// Only the lowered schema goes upstream; a tool whose schema the
			// ingress did not lower is never sent (fail closed).
			lowered, ok := t.Lowered()
			if !ok {
				return nil, notSent(errs.Newf(errs.InternalError, "tool %d has no lowered parameter schema", safeInt(len(group.Tools))))
			}
			params := json.RawMessage(lowered)
			if params == nil {
				params = emptyParameters
			}
			desc := t.Description
			if desc == "" {
				desc = t.Name
			}
			group.Tools = append(group.Tools, wireTool{Name: t.Name, Description: desc, Parameters: params})
		}
		body.ClientTools.ThirdParty = map[string]wireToolGroup{toolGroupKey: group}
	}

	if req.Continuation == nil {
		in := wireQueryInput{
			ChatType:     chatTypeUserQuery,
			Query:        q,
			Product:      productWorkspace,
			StartedFrom:  startedFromChatInput,
			ToolResponse: "",
		}
		if req.ConversationID != "" { // a continued conversation: Messages holds only the new user messages
			in.ConversationID = &req.ConversationID
		}
		body.Input = in
	} else {
		in, err := continuationInput(cfg, *req.Continuation, parallel)
		if err != nil {
			return nil, notSent(err)
		}
		body.Input = in
	}

	raw, err := marshal(body)
	if err != nil {
		// Only an invalid parameter schema can fail here.
		return nil, notSent(errs.Newf(errs.InvalidRequest, "a tool parameter schema is not valid JSON"))
	}
	if len(raw) > cfg.MaxBodyBytes {
		return nil, notSent(errs.Newf(errs.UpstreamRequestTooLarge, "the body has %d bytes, MAX_BODY_BYTES is %d",
			safeInt(len(raw)), safeInt(cfg.MaxBodyBytes)))
	}
	return raw, nil
}

// checkBudgets refuses, before anything is sent, a request over either of the
// service's budgets: more tools than POSTMAN_MAX_TOOLS_UPSTREAM
// (unsupported_parameter) or, on a fresh USER_QUERY, a query longer than
// POSTMAN_MAX_QUERY_CHARS (upstream_query_too_long). A request over both is
// refused once, with both in its message (budget.Request.Detail), under the
// tool count's code. q is the query of a fresh USER_QUERY ("" for a
// continuation, which carries none).
func checkBudgets(cfg pmconfig.Config, req ports.UpstreamRequest, q string) error {
	b := budget.Request{Tools: len(req.Chat.Tools), ToolsLimit: cfg.ToolsLimit(), Query: cfg.QueryLimit(),
		Client: req.Chat.Client, Continued: req.ConversationID != "", Lost: req.ConversationLost}
	if req.Continuation == nil {
		b.QueryChars = QueryChars(q)
		if b.OverQuery() {
			b.Largest = largestMessage(req.Chat.Messages, req.Instructions, req.HistoryMessages)
			instructions, _ := conversation.Instructions(req.Chat.Messages)
			for _, m := range instructions {
				b.Instructions += QueryChars(deref(m.Content))
			}
		}
	}
	param := b.Param("messages")
	switch {
	case b.OverTools():
		return refusal(errs.Newf(errs.UnsupportedParameter, "%d tools exceed POSTMAN_MAX_TOOLS_UPSTREAM %d (query over: %t)",
			safeInt(b.Tools), safeInt(b.ToolsLimit.Value), b.OverQuery()), param, b.Detail())
	case b.OverQuery():
		return refusal(errs.Newf(errs.UpstreamQueryTooLong, "the query has %d UTF-16 code units, POSTMAN_MAX_QUERY_CHARS is %d",
			safeInt(b.QueryChars), safeInt(b.Query.Value)), param, b.Detail())
	}
	return nil
}

// checkToolResult refuses, before anything is sent, the result at index i
// (of n) when it is longer than POSTMAN_MAX_TOOL_RESULT_CHARS (0: no limit),
// naming it by the tool_call_id the client knows and its position, with its
// size and the limit.
func checkToolResult(cfg pmconfig.Config, r ports.ContinuationResult, i, n int) error {
	if cfg.MaxToolResultChars == 0 || len(r.Content) <= cfg.MaxToolResultChars { // bytes ≥ UTF-16 units
		return nil
	}
	chars := QueryChars(r.Content)
	if chars <= cfg.MaxToolResultChars {
		return nil
	}
	return refusal(errs.Newf(errs.UpstreamToolResultTooLong, "result %d of %d has %d UTF-16 code units, POSTMAN_MAX_TOOL_RESULT_CHARS is %d",
		safeInt(i+1), safeInt(n), safeInt(chars), safeInt(cfg.MaxToolResultChars)),
		"", fmt.Sprintf("The tool result answering %s (result %d of %d) is %d characters (UTF-16 code units); the upstream accepts at most %d (set by %s). Shorten that result and send the continuation again.",
			r.PublicCallID, i+1, n, chars, cfg.MaxToolResultChars, pmconfig.EnvMaxToolResult))
}

// largestMessage is the message with the most text among msgs (content and
// tool-call arguments, in UTF-16 code units), indexed as in the client's
// request: the first lead messages keep their index, and offset messages of
// history come before the rest.
func largestMessage(msgs []chat.Message, lead, offset int) budget.Part {
	var p budget.Part
	for i, m := range msgs {
		at := i
		if i >= lead {
			at = offset + i - lead
		}
		n := QueryChars(deref(m.Content))
		for _, c := range m.ToolCalls {
			n += QueryChars(c.Arguments)
		}
		if n > p.Chars {
			p = budget.Part{Index: at, Role: string(m.Role), Chars: n}
		}
	}
	return p
}

// QueryChars is the length of an input.query as the service counts it: UTF-16
// code units, like JavaScript's String.length (a character outside the Basic
// Multilingual Plane counts twice).
func QueryChars(q string) int {
	n := 0
	for _, r := range q {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// continuationInput builds the TOOL_RESPONSE input of a strategy. parallel is
// the request's isParallelToolCallingSupported: the continuation form follows
// it (docs/UPSTREAM.md).
func continuationInput(cfg pmconfig.Config, c ports.Continuation, parallel bool) (any, error) {
	if c.ConversationID == "" {
		return nil, errs.Newf(errs.InvalidRequest, "a continuation needs the stored conversation id")
	}
	if len(c.Results) == 0 {
		return nil, errs.Newf(errs.InvalidRequest, "a continuation needs at least one result")
	}
	for i, r := range c.Results {
		if r.UpstreamCallID == "" || strings.HasPrefix(r.UpstreamCallID, InternalIDPrefix) {
			return nil, errs.Newf(errs.UnsupportedToolResultContinuation,
				"result %d answers a call the upstream sent without an id", safeInt(i+1))
		}
		if len(r.Content) > cfg.MaxToolResultBytes {
			return nil, errs.Newf(errs.UpstreamRequestTooLarge, "result %d has %d bytes, MAX_TOOL_RESULT_BYTES is %d",
				safeInt(i+1), safeInt(len(r.Content)), safeInt(cfg.MaxToolResultBytes))
		}
		if err := checkToolResult(cfg, r, i, len(c.Results)); err != nil {
			return nil, err
		}
	}
	switch {
	case cfg.Strategy == pmconfig.StrategyWebSession && parallel:
		return groupedContinuation(c), nil
	case cfg.Strategy == pmconfig.StrategyWebSession:
		return webContinuation(c)
	case !parallel && len(c.Results) == 1:
		return flatContinuation(c), nil
	}
	return tokenContinuation(c)
}

// flatContinuation is the singular flat form of one result, with the group id
// when the upstream sent one.
func flatContinuation(c ports.Continuation) wireFlatInput {
	r := c.Results[0]
	return wireFlatInput{
		wireContinuation:    continuationHead(c),
		ToolCallID:          r.UpstreamCallID,
		ToolResponse:        r.Content,
		ToolResponseSummary: summaryFor(r.OriginalName),
	}
}

// groupedContinuation is the array form toolResponses[{toolCallId, content,
// toolResponseSummary, toolResponseStatus}], with the group id when the
// upstream sent one.
func groupedContinuation(c ports.Continuation) wireGroupedInput {
	in := wireGroupedInput{
		wireContinuation: continuationHead(c),
		ToolResponses:    make([]wireGroupedResult, 0, len(c.Results)),
	}
	for _, r := range c.Results {
		in.ToolResponses = append(in.ToolResponses, wireGroupedResult{
			ToolCallID:          r.UpstreamCallID,
			Content:             r.Content,
			ToolResponseSummary: summaryFor(r.OriginalName),
			ToolResponseStatus:  statusSuccess,
		})
	}
	return in
}

// tokenContinuation is the access_token form (docs/CORRELATION.md): grouped
// when the upstream sent a group id, the singular flat form for one ungrouped
// call.
func tokenContinuation(c ports.Continuation) (any, error) {
	if c.UpstreamGroupID == "" {
		if len(c.Results) != 1 {
			return nil, errs.Newf(errs.InvalidRequest, "%d ungrouped results; only one ungrouped call can be answered", safeInt(len(c.Results)))
		}
		return flatContinuation(c), nil
	}
	return groupedContinuation(c), nil
}

// webContinuation is the web_session flat form: one result as plain content,
// several packed as a JSON string [{"toolCallId","status","content"}].
func webContinuation(c ports.Continuation) (any, error) {
	in := wireWebInput{
		wireFlatInput:      wireFlatInput{wireContinuation: continuationHead(c), ToolCallID: c.Results[0].UpstreamCallID},
		ToolResponseStatus: statusSuccess,
	}
	if len(c.Results) == 1 {
		in.ToolResponse = c.Results[0].Content
		in.ToolResponseSummary = summaryFor(c.Results[0].OriginalName)
		return in, nil
	}
	packed := make([]wirePackedResult, 0, len(c.Results))
	for _, r := range c.Results {
		packed = append(packed, wirePackedResult{ToolCallID: r.UpstreamCallID, Status: statusSuccess, Content: r.Content})
	}
	raw, err := marshal(packed)
	if err != nil {
		return nil, errs.Wrap(err, errs.InternalError)
	}
	in.ToolResponse = string(raw)
	in.ToolResponseSummary = strconv.Itoa(len(c.Results)) + " tool calls completed"
	return in, nil
}

func summaryFor(name string) string { return "Result for " + name }

// marshal encodes v without HTML escaping and without a trailing newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// toolNameMap returns the way back from upstream names to client names, or nil
// when no tools are advertised. Tools are advertised under the client's own
// names: they are already [A-Za-z0-9_-]{1,64} (validated by the ingress),
// which the upstream accepts as they are, and the adapter sends exactly one
// tool group, so two different client names can never meet one upstream name.
// The way back accepts exactly the advertised names, and also
// "pmgate.<name>" (an MCP-style server prefix, which cannot collide because
// client names never contain '.'); every other name is refused with
// upstream_unverified_event_shape.
func toolNameMap(tools []chat.Tool) map[string]string {
	if len(tools) == 0 {
		return nil
	}
	m := make(map[string]string, len(tools))
	for _, t := range tools {
		m[t.Name] = t.Name
	}
	return m
}

// Transcript serializes normalized messages into the USER_QUERY query text; the
// format is documented in the package doc. It is deterministic: the same
// messages always give the same bytes.
func Transcript(msgs []chat.Message) string {
	if len(msgs) == 1 && msgs[0].Role == chat.RoleUser && len(msgs[0].ToolCalls) == 0 {
		return deref(msgs[0].Content)
	}
	var b strings.Builder
	block := func(header, body string) {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(header)
		b.WriteByte('\n')
		b.WriteString(body)
	}
	for _, m := range msgs {
		switch m.Role {
		case chat.RoleSystem:
			block(withName("[System", m.Name), deref(m.Content))
		case chat.RoleDeveloper:
			block(withName("[Developer", m.Name), deref(m.Content))
		case chat.RoleUser:
			block(withName("[User", m.Name), deref(m.Content))
		case chat.RoleAssistant:
			if m.Content != nil || len(m.ToolCalls) == 0 {
				block("[Assistant]", deref(m.Content))
			}
			if len(m.ToolCalls) > 0 {
				block("[Assistant Tool Calls]", toolCallsJSON(m.ToolCalls))
			}
		case chat.RoleTool:
			block("[Tool Result id="+m.ToolCallID+"]", deref(m.Content))
		default:
			block("["+string(m.Role)+"]", deref(m.Content))
		}
	}
	return b.String()
}

func withName(head, name string) string {
	if name == "" {
		return head + "]"
	}
	return head + " name=" + name + "]"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

type transcriptCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func toolCallsJSON(calls []chat.ToolCall) string {
	out := make([]transcriptCall, len(calls))
	for i, c := range calls {
		out[i] = transcriptCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
	}
	raw, _ := marshal(out) // strings only: cannot fail
	return string(raw)
}
