package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Error messages. They are constants: a response never reflects request data.
const (
	msgInvalidJSON     = "Invalid JSON body"
	msgInvalidBody     = "Invalid request body"
	msgValidation      = "INPUT_VALIDATION_ERROR"
	msgForbiddenShape  = "INPUT_VALIDATION_ERROR: Forbidden"
	msgTooLarge        = "Request body too large"
	msgUnknownScenario = "Unknown emulator scenario"
	msgBadDirective    = "Invalid emulator directive"
)

// rejection is a request refused before any stream starts.
type rejection struct {
	status int
	msg    string
}

func reject(status int, msg string) *rejection { return &rejection{status: status, msg: msg} }

// Wire shapes. Pointers tell an absent or null field from a zero value.
type wireBody struct {
	Input            *wireInput       `json:"input"`
	Platform         *string          `json:"platform"`
	ClientTools      *wireClientTools `json:"clientTools"`
	MandatoryContext *struct {
		WorkspaceID *string `json:"workspaceId"`
	} `json:"mandatoryContext"`
	DevModeOptions *struct {
		SelectedModel *string `json:"selectedModel"`
		Parallel      *bool   `json:"isParallelToolCallingSupported"`
		AutoRun       *bool   `json:"autoRun"`
		// ThinkingLevel: the 12.29.2 client's contract is
		// enum(["low","medium","high"]) (docs/UPSTREAM.md); anything else is
		// refused here, stricter than the service's reported "ignored".
		ThinkingLevel *string `json:"thinkingLevel"`
	} `json:"devModeOptions"`
}

type wireInput struct {
	ChatType                *string            `json:"chatType"`
	Query                   *string            `json:"query"`
	ConversationID          *string            `json:"conversationId"`
	Product                 *string            `json:"product"`
	ToolCallGroupID         *string            `json:"toolCallGroupId"`
	ToolCallID              *string            `json:"toolCallId"`
	ToolResponse            *string            `json:"toolResponse"`
	ToolResponseSummary     *string            `json:"toolResponseSummary"`
	ToolResponseStatus      *string            `json:"toolResponseStatus"`
	ToolResponseFailureType *string            `json:"toolResponseFailureType"`
	ToolResponses           *[]json.RawMessage `json:"toolResponses"`
	Agent                   json.RawMessage    `json:"agent"`
	StartedFrom             *string            `json:"startedFrom"`
}

type wireClientTools struct {
	ThirdParty map[string]json.RawMessage `json:"thirdParty"`
}

type wireToolGroup struct {
	Tools []struct {
		Name        *string         `json:"name"`
		Description *string         `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"tools"`
}

// wireGroupedResult is one entry of the access_token grouped form.
type wireGroupedResult struct {
	ToolCallID              *string `json:"toolCallId"`
	Content                 *string `json:"content"`
	ToolResponseSummary     *string `json:"toolResponseSummary"`
	ToolResponseStatus      *string `json:"toolResponseStatus"`
	ToolResponseFailureType *string `json:"toolResponseFailureType"`
}

// wirePackedResult is one entry of the web_session packed toolResponse string.
type wirePackedResult struct {
	ToolCallID *string `json:"toolCallId"`
	Status     *string `json:"status"`
	Content    *string `json:"content"`
}

// tool is an offered tool reduced to what the emulator uses.
type tool struct {
	name      string
	args      string // deterministic arguments built from the schema
	forbidden bool   // the schema uses anyOf or $ref anywhere
}

type toolResult struct {
	id      string
	content string
}

// continuation is a parsed TOOL_RESPONSE.
type continuation struct {
	groupID string // "" when the request carried none
	results []toolResult
	grouped bool // the array form toolResponses[] (else a flat form)
}

// chatRequest is a body that passed validation.
type chatRequest struct {
	chatType string
	query    string
	// turnText is the part of query whose directives apply: the newest user
	// turn of a transcript (see newestUserTurn), the whole query otherwise.
	turnText       string
	conversationID string // "" for null
	model          string
	parallel       bool
	autoRun        bool
	tools          []tool
	extraGroups    bool // clientTools.thirdParty had more than one key
	cont           *continuation
	// pending is the "#pending=" directive of a USER_QUERY ("" without it),
	// read with the other directives.
	pending string
}

var statusValues = map[string]bool{"SUCCESS": true, "FAILED": true, "ERROR": true}

// parseChat validates a chat body for a strategy. chatType is returned as soon
// as it is known to be valid, so a later rejection is still recorded with it.
func (s *Server) parseChat(strategy string, raw []byte) (req *chatRequest, chatType string, rej *rejection) {
	var body wireBody
	if err := json.Unmarshal(raw, &body); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || !json.Valid(raw) {
			return nil, "", reject(http.StatusBadRequest, msgInvalidJSON)
		}
		return nil, "", reject(http.StatusBadRequest, msgInvalidBody)
	}
	in := body.Input
	if in == nil || in.ChatType == nil {
		return nil, "", reject(http.StatusBadRequest, msgInvalidBody)
	}
	chatType = *in.ChatType
	if chatType != KindUserQuery && chatType != KindToolResponse {
		return nil, "", reject(http.StatusBadRequest, msgValidation)
	}
	if in.Product == nil || *in.Product != "workspace_v12" ||
		body.Platform == nil || *body.Platform != "WEB" ||
		body.MandatoryContext == nil || body.MandatoryContext.WorkspaceID == nil ||
		*body.MandatoryContext.WorkspaceID != s.cfg.WorkspaceID {
		return nil, chatType, reject(http.StatusBadRequest, msgValidation)
	}
	dm := body.DevModeOptions
	if dm == nil || dm.SelectedModel == nil {
		return nil, chatType, reject(http.StatusBadRequest, msgValidation)
	}
	if _, ok := s.cfg.Models[*dm.SelectedModel]; !ok {
		return nil, chatType, reject(http.StatusBadRequest, msgValidation)
	}
	if l := dm.ThinkingLevel; l != nil && *l != "low" && *l != "medium" && *l != "high" {
		return nil, chatType, reject(http.StatusBadRequest, msgValidation)
	}
	if in.Query == nil {
		return nil, chatType, reject(http.StatusBadRequest, msgValidation)
	}
	// Fields both public projects send on every turn, continuations included.
	if string(bytes.TrimSpace(in.Agent)) != "null" || in.StartedFrom == nil || *in.StartedFrom != "CHAT_INPUT" {
		return nil, chatType, reject(http.StatusBadRequest, msgValidation)
	}
	if chatType == KindToolResponse && !nonEmpty(in.ConversationID) {
		return nil, chatType, reject(http.StatusBadRequest, msgValidation) // a continuation names its conversation
	}
	req = &chatRequest{
		chatType: chatType,
		query:    *in.Query,
		model:    *dm.SelectedModel,
		parallel: dm.Parallel != nil && *dm.Parallel,
		autoRun:  dm.AutoRun != nil && *dm.AutoRun,
	}
	if in.ConversationID != nil {
		req.conversationID = *in.ConversationID
	}
	if body.ClientTools != nil {
		switch tp := body.ClientTools.ThirdParty; len(tp) {
		case 0:
		case 1:
			for _, group := range tp {
				tools, ok := parseTools(group)
				if !ok {
					return nil, chatType, reject(http.StatusBadRequest, msgInvalidBody)
				}
				if s.cfg.PlaceholderCommands {
					for i := range tools {
						tools[i].args = withPlaceholderCommands(tools[i].args)
					}
				}
				req.tools = tools
			}
		default:
			req.extraGroups = true
		}
	}

	if chatType == KindUserQuery {
		if req.query == "" {
			return nil, chatType, reject(http.StatusBadRequest, msgValidation)
		}
		req.turnText = newestUserTurn(req.query)
		req.turnText = s.once.drop(req.turnText)
		if hasContinuationFields(in) {
			return nil, chatType, reject(http.StatusBadRequest, msgForbiddenShape)
		}
		return req, chatType, nil
	}
	if req.query != "" {
		return nil, chatType, reject(http.StatusBadRequest, msgForbiddenShape)
	}
	var ok bool
	switch {
	case strategy == StrategyWebSession && in.ToolResponses != nil && len(*in.ToolResponses) > 0:
		req.cont, ok = parseGrouped(in, false)
	case strategy == StrategyWebSession:
		req.cont, ok = parseWebContinuation(in)
	default:
		req.cont, ok = parseTokenContinuation(in, s.cfg.ContinuationShape)
	}
	if !ok {
		return nil, chatType, reject(http.StatusBadRequest, msgForbiddenShape)
	}
	return req, chatType, nil
}

func nonEmpty(p *string) bool { return p != nil && *p != "" }

// hasContinuationFields reports continuation data on a USER_QUERY. The empty
// values real clients send there (toolResponse "", toolResponses [],
// toolCallGroupId null) are allowed.
func hasContinuationFields(in *wireInput) bool {
	return nonEmpty(in.ToolCallGroupID) || nonEmpty(in.ToolCallID) || nonEmpty(in.ToolResponse) ||
		nonEmpty(in.ToolResponseSummary) || nonEmpty(in.ToolResponseStatus) ||
		nonEmpty(in.ToolResponseFailureType) || in.ToolResponses != nil && len(*in.ToolResponses) > 0
}

// parseTokenContinuation reads the access_token grouped or singular flat form.
func parseTokenContinuation(in *wireInput, shape string) (*continuation, bool) {
	grouped := in.ToolResponses != nil && len(*in.ToolResponses) > 0
	flat := nonEmpty(in.ToolCallID)
	switch {
	case grouped && !flat:
		if shape == ShapeFlat || !nonEmpty(in.ToolCallGroupID) || nonEmpty(in.ToolResponse) ||
			nonEmpty(in.ToolResponseSummary) || nonEmpty(in.ToolResponseStatus) || nonEmpty(in.ToolResponseFailureType) {
			return nil, false
		}
		return parseGrouped(in, true)
	case flat && !grouped:
		if shape == ShapeGrouped || in.ToolResponse == nil || in.ToolResponseSummary == nil ||
			in.ToolResponseStatus != nil && !statusValues[*in.ToolResponseStatus] {
			return nil, false
		}
		c := &continuation{results: []toolResult{{id: *in.ToolCallID, content: *in.ToolResponse}}}
		if in.ToolCallGroupID != nil {
			c.groupID = *in.ToolCallGroupID
		}
		return c, true
	default:
		return nil, false
	}
}

// parseGrouped reads the array form toolResponses[{toolCallId, content,
// toolResponseSummary, toolResponseStatus}]; the group id is required when
// needGroup (access_token), else checked by the turn.
func parseGrouped(in *wireInput, needGroup bool) (*continuation, bool) {
	if needGroup && !nonEmpty(in.ToolCallGroupID) || nonEmpty(in.ToolCallID) || nonEmpty(in.ToolResponse) ||
		nonEmpty(in.ToolResponseSummary) || nonEmpty(in.ToolResponseStatus) || nonEmpty(in.ToolResponseFailureType) {
		return nil, false
	}
	c := &continuation{grouped: true}
	if in.ToolCallGroupID != nil {
		c.groupID = *in.ToolCallGroupID
	}
	for _, raw := range *in.ToolResponses {
		var e wireGroupedResult
		if !decodeStrict(raw, &e) || !nonEmpty(e.ToolCallID) || e.Content == nil ||
			e.ToolResponseSummary == nil || e.ToolResponseStatus == nil || !statusValues[*e.ToolResponseStatus] {
			return nil, false
		}
		c.results = append(c.results, toolResult{id: *e.ToolCallID, content: *e.Content})
	}
	return c, true
}

// parseWebContinuation reads the web_session flat form: toolCallId, toolResponse
// (plain content for one call, or a JSON string of [{toolCallId,status,content}]
// whose first id equals toolCallId), toolResponseSummary, and toolCallGroupId.
// A missing group id parses; the turn then fails with TOOL_CALL_NOT_FOUND.
func parseWebContinuation(in *wireInput) (*continuation, bool) {
	if in.ToolResponses != nil && len(*in.ToolResponses) > 0 || !nonEmpty(in.ToolCallID) ||
		in.ToolResponse == nil || in.ToolResponseSummary == nil ||
		in.ToolResponseStatus != nil && !statusValues[*in.ToolResponseStatus] {
		return nil, false
	}
	c := &continuation{}
	if in.ToolCallGroupID != nil {
		c.groupID = *in.ToolCallGroupID
	}
	packed, isPacked := unpackResults(*in.ToolResponse)
	if !isPacked {
		c.results = []toolResult{{id: *in.ToolCallID, content: *in.ToolResponse}}
		return c, true
	}
	if packed == nil || packed[0].id != *in.ToolCallID {
		return nil, false
	}
	c.results = packed
	return c, true
}

// unpackResults recognises a packed result list: a JSON array whose elements are
// all objects with a "toolCallId" key. Anything else is plain content
// (isPacked false). A recognised list with a bad entry returns (nil, true).
func unpackResults(s string) (results []toolResult, isPacked bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "[") {
		return nil, false
	}
	var probe []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(t), &probe); err != nil || len(probe) == 0 {
		return nil, false
	}
	for _, m := range probe {
		if _, ok := m["toolCallId"]; !ok {
			return nil, false
		}
	}
	var raws []json.RawMessage
	_ = json.Unmarshal([]byte(t), &raws)
	for _, raw := range raws {
		var e wirePackedResult
		if !decodeStrict(raw, &e) || !nonEmpty(e.ToolCallID) || e.Content == nil ||
			e.Status == nil || !statusValues[*e.Status] {
			return nil, true
		}
		results = append(results, toolResult{id: *e.ToolCallID, content: *e.Content})
	}
	return results, true
}

func decodeStrict(raw []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return false
	}
	_, err := dec.Token()
	return errors.Is(err, io.EOF) // nothing follows the value
}

// parseTools reads one third-party group {tools:[{name, description, parameters}]}.
func parseTools(raw json.RawMessage) ([]tool, bool) {
	var g wireToolGroup
	if !decodeStrict(raw, &g) {
		return nil, false
	}
	tools := make([]tool, 0, len(g.Tools))
	for _, t := range g.Tools {
		if !nonEmpty(t.Name) || t.Description == nil {
			return nil, false
		}
		args, ok := argumentsFor(t.Parameters)
		if !ok {
			return nil, false
		}
		tools = append(tools, tool{name: *t.Name, args: args, forbidden: usesForbiddenKeyword(t.Parameters)})
	}
	return tools, true
}

// usesForbiddenKeyword reports whether a schema uses anyOf or $ref at any
// depth: one public project reports the service refuses both.
func usesForbiddenKeyword(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if k == "anyOf" || k == "$ref" || walk(c) {
					return true
				}
			}
		case []any:
			for _, c := range x {
				if walk(c) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// The emulator's patterns are compiled on first use (here and in turn.go,
// arguments.go, emulator.go): the gateway binary carries the emulator for
// `gateway demo`, and a gateway that only serves should not pay for them.
var (
	scenarioRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`#scenario=([A-Za-z0-9_-]*)`) })
	loopRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`#loop=([0-9A-Za-z_-]*)`) })
	approvalRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`#approval_after=([0-9A-Za-z_-]*)`) })
	toolRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`#tool=([A-Za-z0-9_.,-]+)`) })
	chunksRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`#text_chunks=([0-9A-Za-z_-]*)`) })
	usageRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`#usage=([0-9A-Za-z_-]*)`) })
	delayRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`#delay_ms=([0-9A-Za-z_-]*)`) })
	pendingRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`#pending=([0-9A-Za-z_-]*)`) })
)

// pendingDirective reads "#pending=drop|keep" of a USER_QUERY's newest turn:
// "" without it (and for a TOOL_RESPONSE); ok is false for another value.
func pendingDirective(req *chatRequest) (mode string, ok bool) {
	if req.chatType != KindUserQuery {
		return "", true
	}
	m := lastSubmatch(pendingRE(), req.turnText)
	if m == nil {
		return "", true
	}
	switch m[1] {
	case PendingDropped, PendingKept:
		return m[1], true
	}
	return "", false
}

// usageDirective reads "#usage=request|conversation" of a USER_QUERY's newest
// turn: "" without it (and for a TOOL_RESPONSE); ok is false for another value.
func usageDirective(req *chatRequest) (mode string, ok bool) {
	if req.chatType != KindUserQuery {
		return "", true
	}
	m := lastSubmatch(usageRE(), req.turnText)
	if m == nil {
		return "", true
	}
	switch m[1] {
	case UsagePerRequest, UsagePerConversation:
		return m[1], true
	}
	return "", false
}

// approvalDirective reads "#approval_after=N" (1-5) of a USER_QUERY: after N
// tool rounds the conversation's next tool round is a loopApprovalChunk. ok is
// false for a malformed value; n is 0 without the directive.
func approvalDirective(req *chatRequest) (n int, ok bool) {
	return intDirective(req, approvalRE(), 1, 5)
}

// delayDirective reads "#delay_ms=N" (1-60000) of a USER_QUERY: the silence
// before its answer. ok is false for a malformed value; 0 without it.
func delayDirective(req *chatRequest) (time.Duration, bool) {
	n, ok := intDirective(req, delayRE(), 1, 60000)
	return time.Duration(n) * time.Millisecond, ok
}

// maxTextChunks bounds the "#text_chunks=N" directive.
const maxTextChunks = 1000

// textChunksDirective reads "#text_chunks=N" (1-maxTextChunks) of a
// USER_QUERY: its text reply is sent as exactly N textChunk events (see
// fitChunks). ok is false for a malformed value; n is 0 without the directive
// and for a TOOL_RESPONSE.
func textChunksDirective(req *chatRequest) (n int, ok bool) {
	return intDirective(req, chunksRE(), 1, maxTextChunks)
}

// intDirective reads a numeric directive of a USER_QUERY (re captures its
// value): ok is false for a value that is not an integer in [lo, hi]; n is 0
// without the directive and for a TOOL_RESPONSE.
func intDirective(req *chatRequest, re *regexp.Regexp, lo, hi int) (n int, ok bool) {
	if req.chatType != KindUserQuery {
		return 0, true
	}
	m := lastSubmatch(re, req.turnText)
	if m == nil {
		return 0, true
	}
	v, err := strconv.Atoi(m[1])
	if err != nil || v < lo || v > hi {
		return 0, false
	}
	return v, true
}

// directives reads #scenario, #loop and #tool. For a USER_QUERY they come from
// the newest user turn of the query (newestUserTurn), the last of each kind
// winning (lastSubmatch); for a TOOL_RESPONSE the scenario comes from the first result
// content that has one, and #loop and #tool are ignored (the conversation
// keeps them). msg is set (a rejection message) for an unknown scenario name
// or a loop count outside 0-5.
func directives(req *chatRequest) (scenario string, loop int, toolName string, msg string) {
	loop = 1
	texts := []string{req.turnText}
	if req.cont != nil {
		texts = texts[:0]
		for _, r := range req.cont.results {
			texts = append(texts, r.content)
		}
	}
	for _, t := range texts {
		if m := lastSubmatch(scenarioRE(), t); m != nil {
			if _, known := scenarios[m[1]]; !known {
				return "", 0, "", msgUnknownScenario
			}
			scenario = m[1]
			break
		}
	}
	if req.chatType == KindUserQuery {
		if m := lastSubmatch(loopRE(), req.turnText); m != nil {
			n, err := strconv.Atoi(m[1])
			if err != nil || n < 0 || n > 5 { // 0: a text answer although tools are offered
				return "", 0, "", msgBadDirective
			}
			loop = n
		}
		if m := lastSubmatch(toolRE(), req.turnText); m != nil {
			toolName = m[1]
		}
	}
	return scenario, loop, toolName, ""
}

// The gateway renders a transcript into one USER_QUERY as blocks separated by
// a blank line, each opened by a header line: "[User]" (or "[User name=…]"),
// "[Assistant]", "[Assistant Tool Calls]", "[Tool Result id=…]", "[System]",
// "[Developer]" (the upstream adapter's package documentation). A client that
// re-sends a whole conversation as a fresh one thus repeats its earlier user
// turns, and their directives with them.
var (
	assistantHeaderRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?m)^\[(?:Assistant|Assistant Tool Calls|Tool Result id=[^\]\n]*)\]\n`)
	})
	blockHeaderRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\n\n\[(?:User(?: name=[^\]\n]*)?|Assistant|Assistant Tool Calls|Tool Result id=[^\]\n]*|System(?: name=[^\]\n]*)?|Developer(?: name=[^\]\n]*)?)\]\n`)
	})
)

// newestUserTurn returns the newest turn of a rendered transcript: every
// block after its last assistant block (an answer, its tool calls, or a tool
// result), or the whole query when it has none (a first turn, or a single
// message sent as it is). Only that turn's directives apply: the ones of
// earlier turns were applied when those turns were new, and must not apply
// again when a client re-sends the transcript. A turn is all of its user (and
// system) blocks, not only the last: clients send a prompt and their own
// reminders as separate messages of one turn.
func newestUserTurn(query string) string {
	locs := assistantHeaderRE().FindAllStringIndex(query, -1)
	for i := len(locs) - 1; i >= 0; i-- {
		// A header opens a block only at the start or after a blank line.
		if s := locs[i][0]; s == 0 || strings.HasSuffix(query[:s], "\n\n") {
			rest := query[locs[i][1]:]
			if loc := blockHeaderRE().FindStringIndex(rest); loc != nil {
				return rest[loc[0]:]
			}
			return "" // the transcript ends in the assistant's block: no newer turn
		}
	}
	return query
}
