package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"
)

const (
	thinkingText     = "Planning a deterministic reply."
	quotaMessage     = "Your team has exceeded its monthly AI credit limit by 16%. You'll regain Agent Mode access in 30 days. To continue using Agent Mode without interruption, enable pay-as-you-go"
	mismatchLabel    = "SOME_OTHER_MODEL"
	truncatedFrame   = `data: {"eventType":"textChunk","data":{"textCo`
	doneFrame        = "data: [DONE]\n\n"
	loopApprovalText = "Continue running tools?"
)

type metadata struct {
	Model          string `json:"model"`
	ConversationID string `json:"conversationId,omitempty"`
}

type textData struct {
	TextContent string   `json:"textContent"`
	Metadata    metadata `json:"metadata"`
}

type thinkingData struct {
	ThinkingContent string   `json:"thinkingContent"`
	Metadata        metadata `json:"metadata"`
}

type toolCallEntry struct {
	ID              string       `json:"id,omitempty"`
	Index           int          `json:"index"`
	ToolCallGroupID string       `json:"toolCallGroupId"`
	Function        functionPart `json:"function"`
}

type functionPart struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type toolCallData struct {
	ConversationID  string          `json:"conversationId,omitempty"`
	ToolCallGroupID string          `json:"toolCallGroupId"`
	ToolCalls       []toolCallEntry `json:"toolCalls"`
	Metadata        metadata        `json:"metadata"`
}

type usageData struct {
	Limit            int    `json:"limit"`
	Usage            int    `json:"usage"`
	Overage          int    `json:"overage"`
	UserType         string `json:"userType"`
	UsageState       string `json:"usageState"`
	PromptTokens     int    `json:"promptTokens"`
	CompletionTokens int    `json:"completionTokens"`
	TotalTokens      int    `json:"totalTokens"`
	// The rest of ps2Api's captured-looking fixture (ossfunc_test.go:37):
	// the plan (credits.go).
	Spillage          *int              `json:"spillage,omitempty"`
	AllowOverage      *bool             `json:"allowOverage,omitempty"`
	WarningThresholds []map[string]any  `json:"warningThresholds,omitempty"`
	UsageCycle        map[string]string `json:"usageCycle,omitempty"`
	IsTeamPooled      *bool             `json:"isTeamPooled,omitempty"`
}

type loopApprovalData struct {
	Message    string         `json:"message"`
	Reasons    []string       `json:"reasons"`
	Counters   map[string]int `json:"counters"`
	Thresholds map[string]int `json:"thresholds"`
}

// streamBuilder collects the frames of one response. Frames are computed up
// front, so a stream is a pure function of the turn, the scenario and the
// configuration.
type streamBuilder struct {
	frames      [][]byte
	strategy    string
	label       string
	promptBytes int
	// contextTokens is added to every usage's prompt tokens: the
	// conversation's tokens before this exchange (UsagePerConversation).
	contextTokens int
	outBytes      int    // bytes of thinking, text and argument content emitted
	sh            shape  // how a normal turn is rendered
	chunkConv     string // a conversation id still to be put on the first output chunk
	// charge charges the plan for this stream and returns what its usage
	// event reports (credits.go); called by the first usage event only, so a
	// stream that reports no usage charges nothing.
	charge  func() Credits
	plan    Credits
	charged bool
}

func (b *streamBuilder) event(eventType string, data any) {
	b.frames = append(b.frames, encodeEvent(eventType, data))
}

func encodeEvent(eventType string, data any) []byte {
	var buf bytes.Buffer
	buf.WriteString("data: ")
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		EventType string `json:"eventType"`
		Data      any    `json:"data"`
	}{eventType, data}) // plain structs and strings: cannot fail
	buf.WriteByte('\n') // Encode ended the line; a blank line ends the event
	return buf.Bytes()
}

func (b *streamBuilder) raw(s string) { b.frames = append(b.frames, []byte(s)) }

func (b *streamBuilder) conversation(id string) {
	b.event("conversation", map[string]string{"id": id})
}

func (b *streamBuilder) thinking() {
	b.outBytes += len(thinkingText)
	b.event("thinkingChunk", thinkingData{ThinkingContent: thinkingText, Metadata: metadata{Model: b.label}})
}

func (b *streamBuilder) texts(pieces []string) {
	for _, p := range pieces {
		b.outBytes += len(p)
		md := metadata{Model: b.label, ConversationID: b.chunkConv}
		b.chunkConv = ""
		b.event("textChunk", textData{TextContent: p, Metadata: md})
	}
}

// toolCalls emits each call over two chunks (arguments split in the middle on a
// character boundary), repeating the full name, index and group id every time.
// With late names the first chunk of a call has no name; with empty arguments
// a call whose arguments are {} sends "" instead.
func (b *streamBuilder) toolCalls(g *toolGroup, withIDs bool) {
	for _, call := range g.calls {
		args := call.args
		if b.sh.emptyArgs && args == "{}" {
			args = ""
		}
		mid := len(truncateUTF8(args, len(args)/2))
		if mid == 0 {
			mid = len(args) / 2
		}
		for i, part := range []string{args[:mid], args[mid:]} {
			entry := toolCallEntry{Index: call.index, ToolCallGroupID: g.id, Function: functionPart{Name: call.name, Arguments: part}}
			if b.sh.lateNames && i == 0 {
				entry.Function.Name = ""
			}
			if withIDs {
				entry.ID = call.id
			}
			b.outBytes += len(part)
			b.event("toolCallChunk", toolCallData{ConversationID: b.chunkConv, ToolCallGroupID: g.id, ToolCalls: []toolCallEntry{entry}, Metadata: metadata{Model: b.label}})
			b.chunkConv = ""
		}
	}
}

func (b *streamBuilder) usage(state string) {
	b.event("usage", b.usageData(state))
}

func (b *streamBuilder) usageData(state string) usageData {
	prompt, completion := b.contextTokens+ceilDiv4(b.promptBytes), ceilDiv4(b.outBytes)
	total := prompt + completion
	if !b.charged {
		b.plan, b.charged = b.charge(), true
	}
	u := planUsage(b.plan, state)
	u.PromptTokens, u.CompletionTokens, u.TotalTokens = prompt, completion, total
	return u
}

// bareUsage is a usage event with only the fields the earlier notes knew
// (limit, usage, overage, userType, usageState and the tokens): no cycle, no
// thresholds.
func (b *streamBuilder) bareUsage(state string) {
	u := b.usageData(state)
	u.UsageState = state
	u.Spillage, u.AllowOverage, u.IsTeamPooled, u.WarningThresholds, u.UsageCycle = nil, nil, nil, nil, nil
	b.event("usage", u)
}

// UsageCycleEnd is the end of the usage cycle the full usage event reports
// (usage_full_fields, quota_usage_cycle).
const UsageCycleEnd = "2026-09-11T23:22:55Z"

// fullUsage is a usage event with every field of ps2Api's fixture
// (ossfunc_test.go:37): spillage, allowOverage, warningThresholds, usageCycle
// and isTeamPooled besides the usual ones.
func (b *streamBuilder) fullUsage(state string) {
	b.event("usage", b.fullUsageData(state))
}

func (b *streamBuilder) fullUsageData(state string) usageData {
	u := b.usageData(state)
	u.UsageState = state // the fixture's own, whatever the plan's state
	spill, overage, pooled := defaultCreditSpillage, false, true
	u.UserType, u.Limit, u.Usage, u.Overage = "FREE_USER", defaultCreditLimit, defaultCreditUsage, 0
	u.Spillage, u.AllowOverage, u.IsTeamPooled = &spill, &overage, &pooled
	u.WarningThresholds = []map[string]any{{"value": 50, "unit": "Percentage"}}
	u.UsageCycle = map[string]string{"start": "2026-08-11T23:22:55Z", "end": UsageCycleEnd}
	return u
}

// end closes a successful stream as the shape says. On access_token: a done
// event when asked for, then [DONE]. On web_session the terminal is one
// literal or the other (ps2Api's traces write [DONE], its mock and TT's
// fixture a done event): the done event when asked for, else [DONE] when the
// shape has one, else nothing (EOF).
func (b *streamBuilder) end() {
	if b.sh.doneEvent {
		b.event("done", struct{}{})
		if b.strategy == StrategyWebSession {
			return
		}
	}
	if b.sh.doneMarker {
		b.raw(doneFrame)
	}
}

func ceilDiv4(n int) int { return (n + 3) / 4 }

// loopApproval is the agent-loop guard: generation stops and only usage and a
// loopApprovalChunk arrive, then the profile's end ([DONE] under strict on
// both strategies, as ps2Api's stream.go streamInternal saw; a done event or
// plain EOF under the profiles that end so). rounds and after are its
// counter and threshold: the consecutive tool rounds, and the N they reached
// (0 and 0 for the loop_approval scenario, which gates a plain query).
func (b *streamBuilder) loopApproval(rounds, after int) {
	b.usage("AVAILABLE")
	b.event("loopApprovalChunk", loopApprovalData{
		Message:    loopApprovalText,
		Reasons:    []string{"CONSECUTIVE_TOOL_ROUNDS"},
		Counters:   map[string]int{"toolRounds": rounds},
		Thresholds: map[string]int{"toolRounds": after},
	})
	b.end()
}

// render turns a turn and a scenario into frames; tokens is what the exchange
// adds to its conversation's context (its prompt and its output, as counted
// by usage).
func (s *Server) render(strategy, label string, promptBytes int, t turn, scenario, chatType string) (frames [][]byte, tokens int) {
	b := &streamBuilder{strategy: strategy, label: label, promptBytes: promptBytes, contextTokens: t.contextTokens,
		charge: s.chargeCredits}
	// Every return below returns nil, 0: the frames and the tokens are b's.
	defer func() { frames, tokens = b.frames, ceilDiv4(b.promptBytes)+ceilDiv4(b.outBytes) }()
	normal := scenarios[scenario] != scenarioText
	if normal {
		b.sh = shapeFor(profiles[s.cfg.Profile].shapeOf(strategy), scenario)
	} else {
		// the text scenarios keep their own documented streams: [DONE] on
		// access_token, EOF on web_session
		b.sh = shape{usage: "last", doneMarker: strategy == StrategyAccessToken}
	}
	if scenario == ScenarioModelMismatch {
		b.label = mismatchLabel
	}
	switch {
	case t.convID == "":
	case chatType == KindToolResponse && b.sh.convAbsentCont && t.failure == nil:
		// the continuation stream names no conversation at all
	case b.sh.convOnChunk && t.failure == nil && !t.approval:
		b.chunkConv = t.convID
	default:
		b.conversation(t.convID)
	}
	if t.failure != nil {
		b.event("failure", t.failure)
		return nil, 0
	}
	if t.approval {
		b.loopApproval(t.gateRounds, t.gateAfter)
		return nil, 0
	}
	pieces := fitChunks(splitUTF8(t.reply, s.cfg.ChunkBytes), t.textChunks)
	switch scenario {
	case ScenarioQuotaExhausted:
		b.event("failure", failureData{ErrorType: "FORBIDDEN", UserMessage: quotaMessage})
	case ScenarioQuotaUsageState:
		b.bareUsage("EXCEEDED")
	case ScenarioQuotaUsageCycle:
		b.fullUsage("EXCEEDED")
		b.end()
	case ScenarioUsageBlocked:
		b.usage("BLOCKED")
		b.end()
	case ScenarioEmptyDone:
		b.usage("AVAILABLE")
		b.raw(doneFrame)
	case ScenarioTruncatedFrame:
		b.thinking()
		b.texts(pieces[:(len(pieces)+1)/2])
		b.raw(truncatedFrame)
	case ScenarioAmbiguousEOF:
		b.thinking()
		b.texts(pieces)
	case ScenarioEmptyStream:
		b.usage("AVAILABLE")
		b.end()
	case ScenarioFailureAfterText:
		b.texts(pieces)
		b.event("failure", failureData{ErrorType: "INTERNAL_SERVER_ERROR", Message: "Something went wrong"})
	case ScenarioUnknownEvent:
		b.thinking()
		b.texts(pieces)
		b.event("mysteryEvent", struct{}{})
		b.usage("AVAILABLE")
		b.end()
	case ScenarioLoopApproval:
		b.loopApproval(0, 0)
	default: // the normal turn and its response-side variants
		// The usage event counts the whole exchange wherever it sits: a
		// usage first is a slot filled once the output is known.
		usageAt := -1
		if b.sh.usage == "first" {
			usageAt = len(b.frames)
			b.frames = append(b.frames, nil)
		}
		b.thinking()
		if t.group != nil {
			b.toolCalls(t.group, scenario != ScenarioToolCallNoID)
		} else {
			b.texts(pieces)
		}
		u := b.usageData("AVAILABLE")
		if scenario == ScenarioUsageFullFields {
			u = b.fullUsageData("AVAILABLE")
		}
		switch {
		case usageAt >= 0:
			b.frames[usageAt] = encodeEvent("usage", u)
		case b.sh.usage == "last" || scenario == ScenarioUsageFullFields:
			b.event("usage", u)
		}
		if scenario == ScenarioDataAfterDone {
			b.raw(doneFrame)
			b.texts([]string{"late"})
			break
		}
		b.end()
	}
	return nil, 0
}

// writeStream sends frames as a 200 event stream, flushing each one, with delay
// between frames. It stops as soon as the client goes away or Close begins.
func (s *Server) writeStream(ctx context.Context, w http.ResponseWriter, frames [][]byte, delay time.Duration) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	var timer *time.Timer
	for i, f := range frames {
		if i > 0 && delay > 0 {
			if timer == nil {
				timer = time.NewTimer(delay)
				defer timer.Stop()
			} else {
				timer.Reset(delay)
			}
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			case <-s.closing:
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		if _, err := w.Write(f); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}
