package anthropicsse

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/cockroachdb/errors"
)

// Outcome is how a grammatical stream ended.
type Outcome int

const (
	// Success: message_start … message_delta … message_stop.
	Success Outcome = iota + 1
	// Failed: one error frame, after message_start or instead of it.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failed:
		return "failed"
	}
	return "invalid"
}

// Usage is the usage object of message_start or message_delta.
type Usage struct {
	InputTokens  *int64 `json:"input_tokens"`
	OutputTokens *int64 `json:"output_tokens"`
}

// Block is one accumulated content block.
type Block struct {
	Type      string          // text, tool_use, thinking, redacted_thinking
	Text      string          // text: the concatenated text_delta; thinking: thinking_delta
	ID, Name  string          // tool_use
	Input     json.RawMessage // tool_use: the concatenated input_json_delta ("{}" when none)
	Signature string          // thinking
}

// ErrorBody is the inner object of an Anthropic error.
type ErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Result is what a valid stream said.
type Result struct {
	Outcome      Outcome
	Events       []string // every frame's event name, in order (pings included)
	MessageID    string
	Model        string
	Blocks       []Block
	StopReason   string
	StopSequence *string
	InputTokens  int64 // the last reported value
	OutputTokens int64 // the last reported value
	Error        ErrorBody
	Raw          json.RawMessage // the error frame's data when Failed
}

// Text is the concatenation of every text block.
func (r Result) Text() string {
	var b strings.Builder
	for _, bl := range r.Blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// ToolUses are the tool_use blocks, in order.
func (r Result) ToolUses() []Block {
	var out []Block
	for _, bl := range r.Blocks {
		if bl.Type == "tool_use" {
			out = append(out, bl)
		}
	}
	return out
}

// Check validates a complete stream and reports how it ended.
func Check(stream []byte) (Result, error) {
	var v Validator
	if _, err := v.Write(stream); err != nil {
		return v.res, err
	}
	return v.End()
}

// CheckSuccess is Check that also requires the Success outcome.
func CheckSuccess(stream []byte) (Result, error) {
	res, err := Check(stream)
	if err == nil && res.Outcome != Success {
		err = errors.Newf("stream failed (%s: %s), want success", res.Error.Type, res.Error.Message)
	}
	return res, err
}

// CheckFailed is Check that also requires the Failed outcome.
func CheckFailed(stream []byte) (Result, error) {
	res, err := Check(stream)
	if err == nil && res.Outcome != Failed {
		err = errors.Newf("stream succeeded (stop_reason %q), want an error frame", res.StopReason)
	}
	return res, err
}

type state int

const (
	stBegin   state = iota // nothing yet
	stMessage              // after message_start, no block open
	stBlock                // a block is open
	stDelta                // after message_delta
	stStopped              // after message_stop
	stErrored              // after error
)

// Validator checks a stream as it arrives: Write the body's bytes in any
// pieces, then End. The first violation is sticky.
type Validator struct {
	buf     []byte
	event   string
	hasEv   bool
	data    []string
	inFrame bool

	st        state
	open      *Block
	jsonBuf   strings.Builder
	sigSeen   bool
	lastOut   int64
	lastIn    int64
	deltaSeen int
	res       Result
	err       error
}

// Write feeds body bytes. It returns the first violation found so far.
func (v *Validator) Write(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	v.buf = append(v.buf, p...)
	for v.err == nil {
		i := bytes.IndexByte(v.buf, '\n')
		if i < 0 {
			break
		}
		line := string(bytes.TrimSuffix(v.buf[:i], []byte{'\r'}))
		v.buf = v.buf[i+1:]
		v.line(line)
	}
	return len(p), v.err
}

// End reports the result once the body has ended.
func (v *Validator) End() (Result, error) {
	if v.err != nil {
		return v.res, v.err
	}
	switch {
	case len(v.buf) > 0 || v.inFrame:
		v.fail("the last frame is not terminated by a blank line")
	case v.st == stStopped:
		v.res.Outcome = Success
	case v.st == stErrored:
		v.res.Outcome = Failed
	case v.st == stBegin:
		v.fail("empty stream: no message_start and no error")
	default:
		v.fail("stream ended without message_stop or an error frame (after %s)", lastOr(v.res.Events, "nothing"))
	}
	return v.res, v.err
}

func lastOr(s []string, def string) string {
	if len(s) == 0 {
		return def
	}
	return s[len(s)-1]
}

func (v *Validator) fail(format string, args ...any) {
	if v.err == nil {
		v.err = errors.Newf("frame %d: "+format, append([]any{len(v.res.Events)}, args...)...)
	}
}

func (v *Validator) line(line string) {
	if line == "" {
		if v.inFrame {
			v.frame()
		}
		v.inFrame, v.hasEv, v.event, v.data = false, false, "", nil
		return
	}
	if strings.HasPrefix(line, ":") {
		return // an SSE comment; no SDK sees it
	}
	v.inFrame = true
	name, value, ok := strings.Cut(line, ":")
	if !ok {
		v.fail("line %q is not a field", line)
		return
	}
	value = strings.TrimPrefix(value, " ")
	switch name {
	case "event":
		if v.hasEv {
			v.fail("two event lines in one frame")
			return
		}
		v.hasEv, v.event = true, value
	case "data":
		v.data = append(v.data, value)
	default:
		v.fail("unexpected SSE field %q", name)
	}
}

var toolIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

var stopReasons = map[string]bool{
	"end_turn": true, "max_tokens": true, "stop_sequence": true, "tool_use": true,
	"pause_turn": true, "refusal": true, "model_context_window_exceeded": true,
}

func (v *Validator) frame() {
	data := strings.Join(v.data, "\n")
	if strings.TrimSpace(data) == "[DONE]" {
		v.fail("[DONE] is not part of the Anthropic stream")
		return
	}
	if !v.hasEv {
		v.fail("frame without an event line (data %.80q): the SDKs drop it", data)
		return
	}
	if len(v.data) == 0 {
		v.fail("event %q without data", v.event)
		return
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(data), &head); err != nil {
		v.fail("event %q: data is not a JSON object: %v", v.event, err)
		return
	}
	if head.Type != v.event {
		v.fail("event line %q but data type %q", v.event, head.Type)
		return
	}
	v.res.Events = append(v.res.Events, v.event)
	if v.st == stStopped || v.st == stErrored {
		v.fail("%s after the stream's end (%s)", v.event, map[state]string{stStopped: "message_stop", stErrored: "error"}[v.st])
		return
	}
	raw := []byte(data)
	switch v.event {
	case "ping":
		if v.st == stBegin {
			v.fail("ping before message_start")
		}
	case "message_start":
		v.messageStart(raw)
	case "content_block_start":
		v.blockStart(raw)
	case "content_block_delta":
		v.blockDelta(raw)
	case "content_block_stop":
		v.blockStop(raw)
	case "message_delta":
		v.messageDelta(raw)
	case "message_stop":
		v.messageStop()
	case "error":
		v.errorFrame(raw)
	default:
		v.fail("unknown event %q (the SDKs drop it)", v.event)
	}
}

func (v *Validator) messageStart(raw []byte) {
	if v.st != stBegin {
		v.fail("a second message_start")
		return
	}
	var f struct {
		Message *struct {
			ID           string            `json:"id"`
			Type         string            `json:"type"`
			Role         string            `json:"role"`
			Model        string            `json:"model"`
			Content      []json.RawMessage `json:"content"`
			StopReason   *string           `json:"stop_reason"`
			StopSequence *string           `json:"stop_sequence"`
			Usage        *Usage            `json:"usage"`
		} `json:"message"`
	}
	if err := json.Unmarshal(raw, &f); err != nil || f.Message == nil {
		v.fail("message_start without a message object (%v)", err)
		return
	}
	m := f.Message
	switch {
	case !strings.HasPrefix(m.ID, "msg_") || len(m.ID) <= len("msg_"):
		v.fail("message id %q does not start with msg_", m.ID)
	case m.Type != "message":
		v.fail("message type %q, want message", m.Type)
	case m.Role != "assistant":
		v.fail("message role %q, want assistant", m.Role)
	case m.Model == "":
		v.fail("message_start without a model")
	case m.Content == nil || len(m.Content) != 0:
		v.fail("message_start content must be []")
	case m.StopReason != nil || m.StopSequence != nil:
		v.fail("message_start must carry stop_reason and stop_sequence null")
	case m.Usage == nil || m.Usage.InputTokens == nil || m.Usage.OutputTokens == nil:
		v.fail("message_start without a usage object holding input_tokens and output_tokens")
	case *m.Usage.InputTokens < 0 || *m.Usage.OutputTokens < 0:
		v.fail("negative usage in message_start")
	}
	if v.err != nil {
		return
	}
	v.st = stMessage
	v.res.MessageID, v.res.Model = m.ID, m.Model
	v.lastIn, v.lastOut = *m.Usage.InputTokens, *m.Usage.OutputTokens
	v.res.InputTokens, v.res.OutputTokens = v.lastIn, v.lastOut
}

func (v *Validator) index(raw []byte) (int, bool) {
	var f struct {
		Index *int `json:"index"`
	}
	if err := json.Unmarshal(raw, &f); err != nil || f.Index == nil {
		v.fail("%s without an index", v.event)
		return 0, false
	}
	return *f.Index, true
}

func (v *Validator) blockStart(raw []byte) {
	switch v.st {
	case stBegin:
		v.fail("content_block_start before message_start")
		return
	case stBlock:
		v.fail("content_block_start while block %d is open", len(v.res.Blocks)-1)
		return
	case stDelta:
		v.fail("content_block_start after message_delta")
		return
	}
	i, ok := v.index(raw)
	if !ok {
		return
	}
	if i != len(v.res.Blocks) {
		v.fail("content_block_start index %d, want %d", i, len(v.res.Blocks))
		return
	}
	var f struct {
		Block map[string]json.RawMessage `json:"content_block"`
	}
	if err := json.Unmarshal(raw, &f); err != nil || f.Block == nil {
		v.fail("content_block_start without a content_block")
		return
	}
	str := func(key string) (string, bool) {
		var s string
		r, ok := f.Block[key]
		if !ok || json.Unmarshal(r, &s) != nil {
			return "", false
		}
		return s, true
	}
	typ, _ := str("type")
	b := Block{Type: typ}
	switch typ {
	case "text":
		if t, ok := str("text"); !ok || t != "" {
			v.fail("text block must start with text \"\"")
		}
	case "tool_use":
		b.ID, _ = str("id")
		b.Name, _ = str("name")
		if !toolIDPattern.MatchString(b.ID) {
			v.fail("tool_use id %q does not match ^[a-zA-Z0-9_-]+$", b.ID)
		} else if b.Name == "" {
			v.fail("tool_use block without a name")
		} else if in, ok := f.Block["input"]; !ok || compact(in) != "{}" {
			v.fail("tool_use block must start with input {} (got %s); arguments go in input_json_delta", string(in))
		}
	case "thinking":
		if t, ok := str("thinking"); !ok || t != "" {
			v.fail("thinking block must start with thinking \"\"")
		}
	case "redacted_thinking":
		if d, ok := str("data"); !ok || d == "" {
			v.fail("redacted_thinking block without data")
		}
	default:
		v.fail("unknown content block type %q", typ)
	}
	if v.err != nil {
		return
	}
	v.res.Blocks = append(v.res.Blocks, b)
	v.open = &v.res.Blocks[len(v.res.Blocks)-1]
	v.jsonBuf.Reset()
	v.sigSeen = false
	v.st = stBlock
}

func compact(r json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, r) != nil {
		return string(r)
	}
	return b.String()
}

func (v *Validator) openIndex(raw []byte) bool {
	if v.st != stBlock {
		v.fail("%s with no open block", v.event)
		return false
	}
	i, ok := v.index(raw)
	if !ok {
		return false
	}
	if i != len(v.res.Blocks)-1 {
		v.fail("%s index %d, but the open block is %d", v.event, i, len(v.res.Blocks)-1)
		return false
	}
	return true
}

func (v *Validator) blockDelta(raw []byte) {
	if !v.openIndex(raw) {
		return
	}
	var f struct {
		Delta *struct {
			Type        string  `json:"type"`
			Text        *string `json:"text"`
			PartialJSON *string `json:"partial_json"`
			Thinking    *string `json:"thinking"`
			Signature   *string `json:"signature"`
		} `json:"delta"`
	}
	if err := json.Unmarshal(raw, &f); err != nil || f.Delta == nil {
		v.fail("content_block_delta without a delta")
		return
	}
	d, b := f.Delta, v.open
	want := map[string][]string{
		"text":              {"text_delta"},
		"tool_use":          {"input_json_delta"},
		"thinking":          {"thinking_delta", "signature_delta"},
		"redacted_thinking": nil,
	}[b.Type]
	ok := false
	for _, w := range want {
		ok = ok || w == d.Type
	}
	if !ok {
		v.fail("%s in a %s block", d.Type, b.Type)
		return
	}
	switch d.Type {
	case "text_delta":
		if d.Text == nil {
			v.fail("text_delta without text")
			return
		}
		b.Text += *d.Text
	case "input_json_delta":
		if d.PartialJSON == nil {
			v.fail("input_json_delta without partial_json")
			return
		}
		v.jsonBuf.WriteString(*d.PartialJSON)
	case "thinking_delta":
		if d.Thinking == nil || v.sigSeen {
			v.fail("thinking_delta without thinking, or after signature_delta")
			return
		}
		b.Text += *d.Thinking
	case "signature_delta":
		if d.Signature == nil || *d.Signature == "" || v.sigSeen {
			v.fail("signature_delta empty or repeated")
			return
		}
		v.sigSeen = true
		b.Signature = *d.Signature
	}
}

func (v *Validator) blockStop(raw []byte) {
	if !v.openIndex(raw) {
		return
	}
	b := v.open
	switch b.Type {
	case "tool_use":
		in := v.jsonBuf.String()
		if strings.TrimSpace(in) == "" {
			in = "{}"
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(in), &obj); err != nil || obj == nil {
			v.fail("tool_use %s: input_json_delta fragments do not make a JSON object: %.120q", b.ID, in)
			return
		}
		b.Input = json.RawMessage(in)
	case "thinking":
		if !v.sigSeen {
			v.fail("thinking block closed without a signature_delta")
			return
		}
	}
	v.open = nil
	v.st = stMessage
}

func (v *Validator) messageDelta(raw []byte) {
	switch v.st {
	case stBegin:
		v.fail("message_delta before message_start")
		return
	case stBlock:
		v.fail("message_delta while block %d is open", len(v.res.Blocks)-1)
		return
	}
	var f struct {
		Delta *struct {
			StopReason *string `json:"stop_reason"`
		} `json:"delta"`
		Usage *Usage `json:"usage"`
	}
	if err := json.Unmarshal(raw, &f); err != nil || f.Delta == nil {
		v.fail("message_delta without a delta object")
		return
	}
	if f.Usage == nil || f.Usage.OutputTokens == nil {
		v.fail("message_delta without usage.output_tokens (the TypeScript SDK throws)")
		return
	}
	if *f.Usage.OutputTokens < v.lastOut {
		v.fail("output_tokens went down from %d to %d; usage is cumulative", v.lastOut, *f.Usage.OutputTokens)
		return
	}
	if f.Usage.InputTokens != nil && *f.Usage.InputTokens < v.lastIn {
		v.fail("input_tokens went down from %d to %d; usage is cumulative", v.lastIn, *f.Usage.InputTokens)
		return
	}
	v.lastOut = *f.Usage.OutputTokens
	if f.Usage.InputTokens != nil {
		v.lastIn = *f.Usage.InputTokens
	}
	v.res.InputTokens, v.res.OutputTokens = v.lastIn, v.lastOut
	d := f.Delta
	if d.StopReason == nil || !stopReasons[*d.StopReason] {
		v.fail("message_delta stop_reason %s is not a stop reason", fmtPtr(d.StopReason))
		return
	}
	var probe struct {
		Delta map[string]json.RawMessage `json:"delta"`
	}
	_ = json.Unmarshal(raw, &probe)
	if _, ok := probe.Delta["stop_sequence"]; !ok {
		v.fail("message_delta without a stop_sequence field (null or the sequence)")
		return
	}
	var seq *string
	if err := json.Unmarshal(probe.Delta["stop_sequence"], &seq); err != nil {
		v.fail("stop_sequence is neither null nor a string")
		return
	}
	if v.st == stDelta && v.res.StopReason != *d.StopReason {
		v.fail("a second message_delta changes stop_reason from %q to %q", v.res.StopReason, *d.StopReason)
		return
	}
	v.res.StopReason, v.res.StopSequence = *d.StopReason, seq
	v.deltaSeen++
	v.st = stDelta
	if err := stopRules(v.res.StopReason, seq, v.res.Blocks); err != nil {
		v.fail("%v", err)
	}
}

func fmtPtr(s *string) string {
	if s == nil {
		return "null"
	}
	return `"` + *s + `"`
}

// stopRules are the stop-reason rules shared by streams and JSON responses.
func stopRules(reason string, seq *string, blocks []Block) error {
	tools, text := 0, 0
	for _, b := range blocks {
		switch b.Type {
		case "tool_use":
			tools++
		case "text":
			text += len(b.Text)
		}
	}
	switch {
	case tools > 0 && reason != "tool_use":
		return errors.Newf("%d tool_use block(s) but stop_reason %q (Claude Code would not run them)", tools, reason)
	case tools == 0 && reason == "tool_use":
		return errors.New("stop_reason tool_use without a tool_use block")
	case reason == "stop_sequence" && (seq == nil || *seq == ""):
		return errors.New("stop_reason stop_sequence with stop_sequence null")
	case reason != "stop_sequence" && seq != nil:
		return errors.Newf("stop_sequence %q with stop_reason %q", *seq, reason)
	case reason == "end_turn" && tools == 0 && text == 0:
		return errors.New("an empty end_turn success: no text and no tool_use proves nothing")
	}
	return nil
}

func (v *Validator) messageStop() {
	if v.st != stDelta {
		v.fail("message_stop without a message_delta before it")
		return
	}
	v.st = stStopped
}

func (v *Validator) errorFrame(raw []byte) {
	if v.st == stDelta {
		v.fail("error after message_delta: a stream that has reported its stop must end with message_stop")
		return
	}
	body, err := errorBody(raw)
	if err != nil {
		v.fail("error frame: %v", err)
		return
	}
	v.res.Error = body
	v.res.Raw = append(json.RawMessage(nil), raw...)
	v.st = stErrored
}

// errorTypes maps each Anthropic error type to the HTTP statuses that carry it.
var errorTypes = map[string][]int{
	"invalid_request_error": {400},
	"authentication_error":  {401},
	"billing_error":         {402},
	"permission_error":      {403},
	"not_found_error":       {404},
	"request_too_large":     {413},
	"rate_limit_error":      {429},
	"api_error":             {500},
	"timeout_error":         {504},
	"overloaded_error":      {529},
}

func errorBody(raw []byte) (ErrorBody, error) {
	var f struct {
		Type  string     `json:"type"`
		Error *ErrorBody `json:"error"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return ErrorBody{}, errors.Wrap(err, "not JSON")
	}
	switch {
	case f.Type != "error":
		return ErrorBody{}, errors.Newf("type %q, want error", f.Type)
	case f.Error == nil:
		return ErrorBody{}, errors.New(`no "error" object`)
	case errorTypes[f.Error.Type] == nil:
		return *f.Error, errors.Newf("error.type %q is not an Anthropic error type", f.Error.Type)
	case strings.TrimSpace(f.Error.Message) == "":
		return *f.Error, errors.New("error.message is empty")
	}
	return *f.Error, nil
}
