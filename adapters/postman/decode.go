package postman

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/sse"
)

// evType is a known upstream event type (protocol notes E). Event types print
// unredacted: only names of this closed list are ever logged.
type evType uint8

const (
	evNone evType = iota
	evUnknown
	evDone
	evConversation
	evTextChunk
	evThinkingChunk
	evThinkingComplete
	evPing
	evInfo
	evPlanningChunk
	evProgressUpdate
	evTodoChunk
	evStreamingFormat
	evNotification
	evUsageUpdate
	evUsage
	evFailure
	evError
	evResultFailure
	evToolCallChunk
	evLoopApprovalChunk
	evDoneEvent
)

var evNames = [...]string{
	evNone:              "",
	evUnknown:           "unknown",
	evDone:              "[DONE]",
	evConversation:      "conversation",
	evTextChunk:         "textChunk",
	evThinkingChunk:     "thinkingChunk",
	evThinkingComplete:  "thinkingComplete",
	evPing:              "ping",
	evInfo:              "info",
	evPlanningChunk:     "planningChunk",
	evProgressUpdate:    "progressUpdate",
	evTodoChunk:         "todoChunk",
	evStreamingFormat:   "streamingFormat",
	evNotification:      "notification",
	evUsageUpdate:       "usageUpdate",
	evUsage:             "usage",
	evFailure:           "failure",
	evError:             "error",
	evResultFailure:     "result:failure",
	evToolCallChunk:     "toolCallChunk",
	evLoopApprovalChunk: "loopApprovalChunk",
	evDoneEvent:         "done",
}

func (t evType) String() string { return evNames[t] }

// SafeValue marks event types as safe for logs.
func (evType) SafeValue() {}

func lookupEvType(name []byte) evType {
	switch string(name) {
	case "conversation":
		return evConversation
	case "textChunk":
		return evTextChunk
	case "thinkingChunk":
		return evThinkingChunk
	case "thinkingComplete":
		return evThinkingComplete
	case "ping":
		return evPing
	case "info":
		return evInfo
	case "planningChunk":
		return evPlanningChunk
	case "progressUpdate":
		return evProgressUpdate
	case "todoChunk":
		return evTodoChunk
	case "streamingFormat":
		return evStreamingFormat
	case "notification":
		return evNotification
	case "usageUpdate":
		return evUsageUpdate
	case "usage":
		return evUsage
	case "failure":
		return evFailure
	case "error":
		return evError
	case "toolCallChunk":
		return evToolCallChunk
	case "loopApprovalChunk":
		return evLoopApprovalChunk
	case "done":
		return evDoneEvent
	}
	return evUnknown
}

// Bounds of upstream identifiers and of the decoder's bookkeeping.
const (
	maxIDBytes     = 256  // conversation, call and group ids
	maxLabelBytes  = 128  // model labels (pmconfig.MaxLabelBytes)
	maxCalls       = 256  // distinct tool calls in one response
	maxUpstreamIdx = 4096 // largest accepted upstream tool-call index
	// InternalIDPrefix starts the stable internal id of a tool call the upstream
	// sent without an id: InternalIDPrefix + the gateway's index of the call. The
	// deltas of such a call say so in their Synthetic field; the prefix only keeps
	// the id readable and unique. An upstream id with this prefix is refused, so
	// the two can never collide.
	InternalIDPrefix = "pmgate_internal_"
	// toolGroupKey is the one clientTools.thirdParty group the adapter sends.
	toolGroupKey = "pmgate"
	// defaultReadChunk is the size of one body read.
	defaultReadChunk = 16 << 10
	// maxEmptyReads bounds reads that return neither data nor an error.
	maxEmptyReads = 100
)

// errStop ends a Splitter feed once the decoder has an outcome.
var errStop = errors.New("postman: decoder stopped")

// errDup reports a repeated member that the decoder reads.
var errDup = errors.New("postman: duplicate member")

// decoderConfig is everything the decoder needs to know about one request.
type decoderConfig struct {
	rule         completion.Rule
	maxEvent     int
	maxOutput    int
	maxToolArgs  int
	tools        map[string]string // upstream name → client name; nil when no tools were advertised
	observed     []string          // accepted model labels
	readChunk    int
	classifyRead func(error) completion.Event // a read error (io.EOF included) → EOF, Abort, Timeout or ReadError
	onFinal      func()                       // called once when the outcome is known
	// convID is the conversation a continuation was sent to: the stream may
	// repeat it but never name another one. "" for a fresh query.
	convID string
	// evidence asks for the record a StreamSummary needs.
	evidence bool
}

// callAcc accumulates one upstream tool call.
type callAcc struct {
	index     int   // the gateway's index
	upIdx     int64 // the upstream index, when hasUpIdx
	hasUpIdx  bool
	id        string // upstream id, or the internal id
	synthetic bool
	group     string
	upName    string // the name as the upstream sent it
	name      string // the client's name; "" until the upstream named the call
	args      []byte
	announced bool // the first delta (with the name) was emitted
}

// decoder turns an upstream SSE body into chat events and a completion outcome.
// It is not safe for concurrent use.
type decoder struct {
	cfg   decoderConfig
	r     io.Reader
	buf   []byte
	split *sse.Splitter
	emit  func([]byte) error
	tr    *completion.Tracker

	q     []chat.Event
	qh    int
	final error // io.EOF after a proven completion, else the outcome's error
	// errType is the error type a failure event named (errorType or code, an
	// upper-case identifier such as INPUT_VALIDATION_ERROR), "" when none. It is
	// the only thing of a failure's text that may be logged.
	errType string

	// Scratch space, reused across events.
	top, data, meta, entry, fn []member
	cmeta                      []member
	kbuf, tbuf, lbuf, sbuf     []byte
	cbuf                       []byte // the conversation id of the current event
	convSeen                   bool   // cbuf holds an id of the current event
	metaSpan                   []byte // the metadata object the label check parsed into meta, for this event
	deltas                     []chat.Event

	convID     string
	ev         *evidence // nil unless a summary was asked for
	label      string    // the first observed model label
	labelSeen  bool
	labelMatch bool // every observed label matched so far
	outBytes   int
	argBytes   int
	calls      []*callAcc
	byID       map[string]int
	byUp       map[int64]int

	bytesIn    int64
	lines      int // data lines seen
	lastType   evType
	emptyReads int
}

func newDecoder(r io.Reader, cfg decoderConfig) *decoder {
	if cfg.readChunk <= 0 {
		cfg.readChunk = defaultReadChunk
	}
	if cfg.classifyRead == nil {
		cfg.classifyRead = classifyPlainRead
	}
	d := &decoder{
		cfg:        cfg,
		r:          r,
		buf:        make([]byte, cfg.readChunk),
		split:      sse.NewSplitter(cfg.maxEvent),
		tr:         completion.NewTracker(cfg.rule),
		labelMatch: true,
		convID:     cfg.convID,
	}
	if cfg.evidence {
		d.ev = newEvidence(cfg.rule)
	}
	d.emit = d.line
	return d
}

// classifyPlainRead maps a read error without request context: io.EOF is the
// end of the body, context errors keep their meaning, everything else is a
// lost connection.
func classifyPlainRead(err error) completion.Event {
	switch {
	case err == io.EOF:
		return completion.EOF
	case errors.Is(err, context.Canceled):
		return completion.Abort
	case errors.Is(err, context.DeadlineExceeded):
		return completion.Timeout
	}
	return completion.ReadError
}

// next returns the next event, io.EOF after a proven completion, or the error of
// the outcome.
func (d *decoder) next() (chat.Event, error) {
	for {
		if d.qh < len(d.q) {
			ev := d.q[d.qh]
			d.q[d.qh] = chat.Event{}
			d.qh++
			return ev, nil
		}
		d.q, d.qh = d.q[:0], 0
		if d.final != nil {
			return chat.Event{}, d.final
		}
		n, err := d.r.Read(d.buf)
		if n > 0 {
			d.emptyReads = 0
			d.bytesIn += int64(n)
			if ferr := d.split.Feed(d.buf[:n], d.emit); ferr != nil && d.final == nil {
				if errs.Has(ferr, errs.UpstreamEventTooLarge) {
					_ = d.fail(errs.UpstreamEventTooLarge)
				} else {
					d.internal(ferr)
				}
			}
		}
		switch {
		case d.final != nil:
		case err != nil:
			// Even io.EOF is classified: after a cancellation the transport may
			// report a clean EOF (the server ended the response when it saw the
			// client close), which must never count as the upstream's end.
			if e := d.cfg.classifyRead(err); e == completion.EOF {
				d.endOfBody()
			} else {
				d.end(e)
			}
		case n == 0:
			d.emptyReads++
			if d.emptyReads > maxEmptyReads {
				d.end(completion.ReadError)
			}
		}
	}
}

// abort records an outcome decided outside the body (client gone, timeout) if
// none is known yet, and returns the final error.
func (d *decoder) abort(e completion.Event) error {
	if d.final == nil {
		d.end(e)
	}
	d.q, d.qh = d.q[:0], 0
	return d.final
}

func (d *decoder) end(e completion.Event) {
	switch e {
	case completion.Abort:
		d.apply(d.fire(completion.Abort, ""))
	case completion.Timeout:
		d.apply(d.fire(completion.Timeout, ""))
	default:
		d.apply(d.fire(completion.ReadError, ""))
	}
}

// endOfBody handles a clean read of the body's end: the tool calls must be
// whole (every call named, empty arguments become {}) before EOF may complete.
func (d *decoder) endOfBody() {
	partial := d.split.Partial()
	if !partial && d.finishCalls() != nil {
		return
	}
	if partial {
		d.apply(d.fire(completion.EOFPartial, ""))
		return
	}
	d.apply(d.fire(completion.EOF, ""))
}

// apply takes a tracker result and settles the outcome when it is terminal.
func (d *decoder) apply(_ string, err error) {
	if err != nil {
		d.internal(err)
		return
	}
	d.settle()
}

// settle sets final once the tracker reached an outcome and reports whether it did.
func (d *decoder) settle() bool {
	if d.final != nil {
		return true
	}
	if !d.tr.State().Terminal() {
		return false
	}
	o := d.tr.Outcome()
	if o.Complete {
		d.final = io.EOF
	} else {
		d.final = errs.Newf(o.Code, "outcome %s after %d data lines", o.State, safeInt(d.lines))
	}
	if d.cfg.onFinal != nil {
		d.cfg.onFinal()
	}
	return true
}

func (d *decoder) internal(err error) {
	if d.final != nil {
		return
	}
	d.final = errs.Wrap(err, errs.InternalError)
	if d.cfg.onFinal != nil {
		d.cfg.onFinal()
	}
}

// fail records a failure with code and returns errStop.
func (d *decoder) fail(code errs.Code) error {
	d.apply(d.fire(completion.Failure, code))
	return errStop
}

// step applies a tracker result for an event and reports whether decoding may go
// on (false once an outcome is known).
func (d *decoder) step(_ string, err error) bool {
	if err != nil {
		d.internal(err)
		return false
	}
	return !d.settle()
}

func (d *decoder) push(ev chat.Event) { d.q = append(d.q, ev) }

// line handles one SSE line.
func (d *decoder) line(l []byte) error {
	if d.final != nil {
		return errStop
	}
	payload, ok := sse.ParseData(l)
	if !ok {
		return nil
	}
	d.lines++
	if string(payload) == "[DONE]" {
		d.lastType = evDone
		d.countType(evDone)
		if err := d.finishCalls(); err != nil {
			return err
		}
		if !d.step(d.fire(completion.Done, "")) {
			return errStop
		}
		return nil
	}
	return d.event(payload)
}

// finishCalls runs when the upstream ends its stream ([DONE], a done event or
// EOF): a call that was never named is an unverified shape, and a call whose
// arguments are empty (a tool without parameters; both public projects'
// fixtures show "") gets the arguments {} as one last fragment.
func (d *decoder) finishCalls() error {
	for _, c := range d.calls {
		if c.name == "" {
			return d.fail(errs.UpstreamUnverifiedEventShape)
		}
	}
	for _, c := range d.calls {
		if len(c.args) == 0 {
			if d.outBytes+2 > d.cfg.maxOutput {
				return d.fail(errs.UpstreamOutputTooLarge)
			}
			c.args = append(c.args, "{}"...)
			d.outBytes += 2
			d.argBytes += 2
			d.push(chat.Event{Kind: chat.EventToolCall, ToolCall: &chat.ToolCallDelta{
				Index: c.index, UpstreamID: c.id, Synthetic: c.synthetic, UpstreamGroupID: c.group, ArgumentsFragment: "{}",
			}})
		}
	}
	return nil
}

// get returns the one member named key, nil when absent, errDup when repeated.
func (d *decoder) get(ms []member, key string) (*member, error) {
	var found *member
	for i := range ms {
		m := &ms[i]
		k := m.key
		if m.keyEsc {
			d.kbuf = unquote(m.key, true, d.kbuf)
			k = d.kbuf
		}
		if string(k) == key {
			if found != nil {
				return nil, errDup
			}
			found = m
		}
	}
	return found, nil
}

// first returns the first of keys present with a non-null value.
func (d *decoder) first(ms []member, keys ...string) (*member, error) {
	for _, k := range keys {
		m, err := d.get(ms, k)
		if err != nil {
			return nil, err
		}
		if m != nil && m.kind != kNull {
			return m, nil
		}
	}
	return nil, nil
}

// envelope holds the top-level members the decoder reads.
type envelope struct {
	eventType, typ, data, result *member
	meta, model, modelID, sel    *member
}

var errShape = errors.New("postman: unverified event shape")

func (d *decoder) envelope() (e envelope, err error) {
	if e.eventType, err = d.get(d.top, "eventType"); err != nil {
		return e, err
	}
	if e.typ, err = d.get(d.top, "type"); err != nil {
		return e, err
	}
	if e.data, err = d.get(d.top, "data"); err != nil {
		return e, err
	}
	if e.result, err = d.get(d.top, "result"); err != nil {
		return e, err
	}
	if e.meta, err = d.get(d.top, "metadata"); err != nil {
		return e, err
	}
	if e.model, err = d.get(d.top, "model"); err != nil {
		return e, err
	}
	if e.modelID, err = d.get(d.top, "modelId"); err != nil {
		return e, err
	}
	e.sel, err = d.get(d.top, "selectedModel")
	return e, err
}

// eventType reads the envelope's type: eventType, or type when eventType is
// absent; both present must agree.
func (d *decoder) eventType(e *envelope) (evType, error) {
	name := func(m *member) ([]byte, error) {
		if m.kind != kString {
			return nil, errShape
		}
		c := strContent(m.val)
		if bytes.IndexByte(c, '\\') >= 0 {
			return nil, errShape // event names are plain identifiers
		}
		return c, nil
	}
	var n1, n2 []byte
	var err error
	if e.eventType != nil && e.eventType.kind != kNull {
		if n1, err = name(e.eventType); err != nil {
			return evUnknown, err
		}
	}
	if e.typ != nil && e.typ.kind != kNull {
		if n2, err = name(e.typ); err != nil {
			return evUnknown, err
		}
	}
	switch {
	case n1 != nil && n2 != nil && !bytes.Equal(n1, n2):
		return evUnknown, errShape
	case n1 == nil:
		n1 = n2
	}
	if n1 == nil {
		if e.result != nil && e.result.kind == kString && bytes.EqualFold(strContent(e.result.val), []byte("failure")) {
			return evResultFailure, nil
		}
		return evUnknown, errShape
	}
	return lookupEvType(n1), nil
}

// event handles one JSON payload.
func (d *decoder) event(p []byte) error {
	var err error
	d.top, err = parseTopObject(p, d.top)
	switch {
	case errors.Is(err, errNotObject):
		d.countType(evUnknown)
		return d.fail(errs.UpstreamUnverifiedEventShape)
	case err != nil:
		d.countType(evUnknown)
		return d.fail(errs.UpstreamMalformedEvent)
	}
	env, err := d.envelope()
	if err != nil {
		d.countType(evUnknown)
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	typ, err := d.eventType(&env)
	d.lastType = typ
	d.countType(typ)
	if err != nil || typ == evUnknown {
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}

	// The data object, parsed once for the label and the handler.
	dataKind := kNull
	d.data = d.data[:0]
	if env.data != nil {
		dataKind = env.data.kind
		if dataKind == kObject {
			if d.data, err = parseObjectSpan(env.data.val, d.data); err != nil {
				return d.fail(errs.UpstreamMalformedEvent)
			}
		}
	}

	if code := d.checkModel(&env, dataKind == kObject); code != "" {
		return d.fail(code)
	}
	found, code := d.conversationIn(dataKind == kObject)
	if code != "" {
		return d.fail(code)
	}

	switch typ {
	case evTextChunk:
		return d.textChunk(dataKind)
	case evConversation:
		if dataKind != kObject || !found {
			return d.fail(errs.UpstreamUnverifiedEventShape) // a conversation event names its conversation
		}
	case evDoneEvent:
		if dataKind != kNull && dataKind != kObject {
			return d.fail(errs.UpstreamUnverifiedEventShape)
		}
		if err := d.finishCalls(); err != nil {
			return err
		}
		if !d.step(d.fire(completion.DoneEvent, "")) {
			return errStop
		}
		return nil
	case evUsage:
		return d.usage(dataKind)
	case evFailure, evError, evResultFailure:
		return d.fail(d.failureCode(&env, dataKind))
	case evToolCallChunk:
		if d.cfg.tools == nil {
			return d.fail(errs.UpstreamUnsupportedEvent)
		}
		return d.toolCallChunk(env.data, dataKind)
	case evLoopApprovalChunk:
		return d.fail(errs.UpstreamUnsupportedEvent)
	}
	// conversation, thinkingChunk, thinkingComplete, ping, info, planningChunk,
	// progressUpdate, todoChunk, streamingFormat, notification, usageUpdate:
	// valid and ignored.
	if !d.step(d.fire(completion.Metadata, "")) {
		return errStop
	}
	return nil
}

// checkModel finds the observed model label (design §7) and compares it; it
// returns the failure code, or "".
func (d *decoder) checkModel(env *envelope, dataObject bool) errs.Code {
	label, code := d.labelIn(env.meta, env.model, env.modelID, env.sel)
	if code != "" {
		return code
	}
	if label == nil && dataObject {
		var ms [4]*member
		for i, k := range [...]string{"metadata", "model", "modelId", "selectedModel"} {
			m, err := d.get(d.data, k)
			if err != nil {
				return errs.UpstreamUnverifiedEventShape
			}
			ms[i] = m
		}
		if label, code = d.labelIn(ms[0], ms[1], ms[2], ms[3]); code != "" {
			return code
		}
	}
	if label == nil {
		return ""
	}
	match := len(label) <= maxLabelBytes && d.knownLabel(label)
	if !d.labelSeen {
		d.labelSeen = true
		d.label = string(label[:min(len(label), maxLabelBytes)])
	}
	if !match {
		d.labelMatch = false
		return errs.UpstreamModelMismatch
	}
	return ""
}

func (d *decoder) knownLabel(label []byte) bool {
	for _, o := range d.cfg.observed {
		if string(label) == o {
			return true
		}
	}
	return false
}

// labelIn returns the first non-empty of metadata.model, metadata.modelId,
// metadata.selectedModel, model, modelId, selectedModel of one object.
func (d *decoder) labelIn(meta, model, modelID, sel *member) ([]byte, errs.Code) {
	if meta != nil && meta.kind != kNull {
		if meta.kind != kObject {
			return nil, errs.UpstreamUnverifiedEventShape
		}
		var err error
		d.metaSpan = meta.val
		if d.meta, err = parseObjectSpan(meta.val, d.meta); err != nil {
			return nil, errs.UpstreamMalformedEvent
		}
		for _, k := range [...]string{"model", "modelId", "selectedModel"} {
			m, err := d.get(d.meta, k)
			if err != nil {
				return nil, errs.UpstreamUnverifiedEventShape
			}
			l, code := d.labelValue(m)
			if code != "" || l != nil {
				return l, code
			}
		}
	}
	for _, m := range [...]*member{model, modelID, sel} {
		l, code := d.labelValue(m)
		if code != "" || l != nil {
			return l, code
		}
	}
	return nil, ""
}

func (d *decoder) labelValue(m *member) ([]byte, errs.Code) {
	if m == nil || m.kind == kNull {
		return nil, ""
	}
	l, ok := str(m, &d.lbuf)
	if !ok {
		return nil, errs.UpstreamUnverifiedEventShape
	}
	if len(l) == 0 {
		return nil, ""
	}
	return l, ""
}

// str decodes a string member; scratch is the buffer to decode escapes into.
func str(m *member, scratch *[]byte) ([]byte, bool) {
	if m == nil || m.kind != kString {
		return nil, false
	}
	raw := strContent(m.val)
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw, true
	}
	*scratch = unquote(raw, true, (*scratch)[:0])
	return *scratch, true
}

func (d *decoder) textChunk(dataKind jkind) error {
	if dataKind != kObject {
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	m, err := d.get(d.data, "textContent")
	if err != nil || m == nil {
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	text, ok := str(m, &d.tbuf)
	if !ok {
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	if len(text) == 0 {
		if !d.step(d.fire(completion.Metadata, "")) {
			return errStop
		}
		return nil
	}
	if d.outBytes+len(text) > d.cfg.maxOutput {
		return d.fail(errs.UpstreamOutputTooLarge)
	}
	if !d.step(d.fire(completion.Output, "")) {
		return errStop
	}
	d.outBytes += len(text)
	d.push(chat.Event{Kind: chat.EventText, Text: string(text)})
	return nil
}

// validID reports whether b is a bounded upstream identifier: 1-256 bytes of
// visible ASCII.
func validID(b []byte) bool {
	if len(b) == 0 || len(b) > maxIDBytes {
		return false
	}
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// conversationIn reads the conversation id from every place the public
// projects look for it, on any event: conversationId, conversation_id and
// metadata.conversationId of the event; conversationId, conversation_id,
// metadata.conversationId, conversation.id and conversation.conversationId of
// its data; and, on a conversation event, data.id. Every id present must be a
// bounded identifier, and all must agree with each other and with the id the
// stream already has (a continuation starts with the stored one): two
// different ids in one stream are an unverified shape. A new id is emitted as
// an EventConversation, before the event's own output. found reports whether
// the event named a conversation.
func (d *decoder) conversationIn(dataObject bool) (found bool, code errs.Code) {
	d.convSeen = false
	defer func() { d.metaSpan = nil }()
	if code = d.convKeys(d.top, convIDKeys[:]); code != "" {
		return false, code
	}
	if code = d.convNested(d.top, "metadata", convMetaKeys[:]); code != "" {
		return false, code
	}
	if dataObject {
		if code = d.convKeys(d.data, convIDKeys[:]); code != "" {
			return false, code
		}
		if d.lastType == evConversation {
			if code = d.convKeys(d.data, convObjectKeys[:1]); code != "" {
				return false, code
			}
		}
		if code = d.convNested(d.data, "metadata", convMetaKeys[:]); code != "" {
			return false, code
		}
		if code = d.convNested(d.data, "conversation", convObjectKeys[:]); code != "" {
			return false, code
		}
	}
	if !d.convSeen {
		return false, ""
	}
	if d.convID != "" {
		if string(d.cbuf) != d.convID {
			return true, errs.UpstreamUnverifiedEventShape // a second, different conversation
		}
		return true, ""
	}
	d.convID = string(d.cbuf)
	d.push(chat.Event{Kind: chat.EventConversation, ConversationID: d.convID})
	return true, ""
}

// Where conversation ids are read (see conversationIn).
var (
	convIDKeys     = [...]string{"conversationId", "conversation_id"}
	convMetaKeys   = [...]string{"conversationId"}
	convObjectKeys = [...]string{"id", "conversationId"}
)

// convKeys takes the conversation id of each key of ms that is present.
func (d *decoder) convKeys(ms []member, keys []string) errs.Code {
	for _, k := range keys {
		m, err := d.get(ms, k)
		if err != nil {
			return errs.UpstreamUnverifiedEventShape
		}
		if c := d.convTake(m); c != "" {
			return c
		}
	}
	return ""
}

// convNested takes the conversation ids of keys inside the object member name
// of ms; a member that is not an object is left to the other checks.
func (d *decoder) convNested(ms []member, name string, keys []string) errs.Code {
	m, err := d.get(ms, name)
	if err != nil {
		return errs.UpstreamUnverifiedEventShape
	}
	if m == nil || m.kind != kObject {
		return ""
	}
	if sameSpan(m.val, d.metaSpan) {
		return d.convKeys(d.meta, keys) // the label check parsed this object already
	}
	if d.cmeta, err = parseObjectSpan(m.val, d.cmeta); err != nil {
		return errs.UpstreamMalformedEvent
	}
	return d.convKeys(d.cmeta, keys)
}

// sameSpan reports whether a and b are the same bytes of the same line.
func sameSpan(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
}

// convTake records one conversation id of the current event: it must be a
// bounded identifier and equal every other id of the event.
func (d *decoder) convTake(m *member) errs.Code {
	if m == nil || m.kind == kNull {
		return ""
	}
	id, ok := str(m, &d.sbuf)
	if !ok || !validID(id) {
		return errs.UpstreamUnverifiedEventShape
	}
	if !d.convSeen {
		d.cbuf = append(d.cbuf[:0], id...)
		d.convSeen = true
		return ""
	}
	if !bytes.Equal(d.cbuf, id) {
		return errs.UpstreamUnverifiedEventShape // two different ids in one event
	}
	return ""
}

// tokenField reads one explicit token count: the first present of keys, which
// must be a non-negative integer.
func (d *decoder) tokenField(keys ...string) (*int64, bool) {
	m, err := d.first(d.data, keys...)
	if err != nil {
		return nil, false
	}
	if m == nil {
		return nil, true
	}
	if m.kind != kNumber {
		return nil, false
	}
	v, ok := parseUint(m.val)
	if !ok {
		return nil, false
	}
	return &v, true
}

func (d *decoder) usage(dataKind jkind) error {
	switch dataKind {
	case kNull:
		if !d.step(d.fire(completion.Usage, "")) {
			return errStop
		}
		return nil
	case kObject:
	default:
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	st, err := d.get(d.data, "usageState")
	if err != nil {
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	if st != nil && st.kind != kNull {
		s, ok := str(st, &d.sbuf)
		switch {
		case !ok:
			return d.fail(errs.UpstreamUnverifiedEventShape)
		case string(s) == "EXCEEDED" || string(s) == "UNAVAILABLE":
			return d.fail(errs.UpstreamQuotaExhausted)
		case string(s) != "AVAILABLE":
			return d.fail(errs.UpstreamUnverifiedEventShape) // unknown credit states fail closed
		}
	}
	var u chat.Usage
	var ok1, ok2, ok3 bool
	u.PromptTokens, ok1 = d.tokenField("promptTokens", "prompt_tokens", "inputTokens", "input_tokens")
	u.CompletionTokens, ok2 = d.tokenField("completionTokens", "completion_tokens", "outputTokens", "output_tokens")
	u.TotalTokens, ok3 = d.tokenField("totalTokens", "total_tokens")
	if !ok1 || !ok2 || !ok3 {
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	if !d.step(d.fire(completion.Usage, "")) {
		return errStop
	}
	if u.Reported() {
		d.push(chat.Event{Kind: chat.EventUsage, Usage: &u})
	}
	return nil
}

// Quota phrases and request-rejection texts (protocol notes F), lowercase.
var (
	quotaPhrases = []string{
		"usage_limit_exceeded", "quota_exceeded", "monthly ai credit limit", "ai credit limit",
		"regain agent mode access", "enable pay-as-you-go", "enable pay as you go",
	}
	rejectionPhrases = []string{
		"input_validation_error", "agent mode accepts upto", "agent mode accepts up to",
		"that was unexpected :(", "remove any configured mcp servers", "invalid tool schema",
		"mcp tool", "invalid input query",
	}
)

// classifyText maps the lowercase text of an upstream error to a code: a quota
// phrase gives upstream_quota_exhausted, a known rejection text
// upstream_request_rejected, anything else "".
func classifyText(lower []byte) errs.Code {
	for _, p := range quotaPhrases {
		if bytes.Contains(lower, []byte(p)) {
			return errs.UpstreamQuotaExhausted
		}
	}
	for _, p := range rejectionPhrases {
		if bytes.Contains(lower, []byte(p)) {
			return errs.UpstreamRequestRejected
		}
	}
	return ""
}

// failureCode classifies a failure, error or {"result":"failure"} event. The
// texts are read only to choose the code; they never leave this function.
func (d *decoder) failureCode(env *envelope, dataKind jkind) errs.Code {
	var text []byte
	add := func(ms []member, keys ...string) {
		for _, k := range keys {
			m, err := d.get(ms, k)
			if err != nil || m == nil {
				continue
			}
			switch m.kind {
			case kString:
				s, _ := str(m, &d.sbuf)
				text = append(append(text, s...), '\n')
			case kObject:
				if k != "error" {
					continue
				}
				var inner []member
				inner, err = parseObjectSpan(m.val, inner)
				if err != nil {
					continue
				}
				for _, ik := range [...]string{"message", "code", "type", "errorType"} {
					im, err := d.get(inner, ik)
					if err == nil && im != nil && im.kind == kString {
						s, _ := str(im, &d.sbuf)
						text = append(append(text, s...), '\n')
					}
				}
			}
		}
	}
	add(d.top, "message", "error", "code", "errorType")
	switch dataKind {
	case kObject:
		add(d.data, "userMessage", "message", "detail", "reason", "errorType", "code", "error")
	case kString:
		s, _ := str(env.data, &d.sbuf)
		text = append(text, s...)
	}
	d.errType = d.failureType(dataKind)
	lower := bytes.ToLower(text)
	if code := classifyText(lower); code != "" {
		return code
	}
	return errs.UpstreamFailure
}

// failureType is the error type of a failure event: data.errorType or
// data.code, else the top-level errorType or code, when it looks like an
// error type.
func (d *decoder) failureType(dataKind jkind) string {
	pick := func(ms []member) string {
		for _, k := range [...]string{"errorType", "code"} {
			if m, err := d.get(ms, k); err == nil && m != nil && m.kind == kString {
				if s, _ := str(m, &d.sbuf); isErrorType(string(s)) {
					return string(s)
				}
			}
		}
		return ""
	}
	if dataKind == kObject {
		if t := pick(d.data); t != "" {
			return t
		}
	}
	return pick(d.top)
}

// toolCallChunk accumulates tool-call fragments (protocol notes E).
func (d *decoder) toolCallChunk(dm *member, dataKind jkind) error {
	var list *member // an array of entries, or one entry object
	var group []byte
	switch dataKind {
	case kArray:
		list = dm
	case kObject:
		found := 0
		for _, k := range [...]string{"toolCalls", "tool_calls", "calls", "toolCall", "tool_call"} {
			m, err := d.get(d.data, k)
			if err != nil {
				return d.fail(errs.UpstreamUnverifiedEventShape)
			}
			if m != nil && m.kind != kNull {
				list = m
				found++
			}
		}
		if found != 1 {
			return d.fail(errs.UpstreamUnverifiedEventShape)
		}
		g, err := d.get(d.data, "toolCallGroupId")
		if err != nil {
			return d.fail(errs.UpstreamUnverifiedEventShape)
		}
		if g != nil && g.kind != kNull {
			s, ok := str(g, &d.sbuf)
			if !ok || !validID(s) {
				return d.fail(errs.UpstreamUnverifiedEventShape)
			}
			group = []byte(string(s)) // copied: sbuf is reused below
		}
	default:
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}

	d.deltas = d.deltas[:0]
	var code errs.Code
	switch list.kind {
	case kObject:
		code = d.toolEntry(list.val, 0, group)
	case kArray:
		pos := 0
		err := forEachElement(list.val, func(val []byte, kind jkind) error {
			if kind != kObject {
				code = errs.UpstreamUnverifiedEventShape
				return errStop
			}
			if code = d.toolEntry(val, pos, group); code != "" {
				return errStop
			}
			pos++
			return nil
		})
		if err != nil && code == "" {
			code = errs.UpstreamMalformedEvent
		}
	default:
		code = errs.UpstreamUnverifiedEventShape
	}
	if code != "" {
		return d.fail(code)
	}
	if len(d.deltas) == 0 {
		if !d.step(d.fire(completion.Metadata, "")) {
			return errStop
		}
		return nil
	}
	if !d.step(d.fire(completion.Output, "")) {
		return errStop
	}
	d.q = append(d.q, d.deltas...)
	return nil
}

// toolEntry applies one tool-call entry and appends its delta, if any, to
// d.deltas. It returns a failure code or "".
func (d *decoder) toolEntry(span []byte, pos int, dataGroup []byte) errs.Code {
	var err error
	if d.entry, err = parseObjectSpan(span, d.entry); err != nil {
		return errs.UpstreamMalformedEvent
	}
	idM, err := d.first(d.entry, "id", "call_id", "callId", "tool_call_id", "toolCallId")
	if err != nil {
		return errs.UpstreamUnverifiedEventShape
	}
	var id string
	if idM != nil {
		s, ok := str(idM, &d.sbuf)
		if !ok || !validID(s) || bytes.HasPrefix(s, []byte(InternalIDPrefix)) {
			return errs.UpstreamUnverifiedEventShape
		}
		id = string(s)
	}
	idxM, err := d.first(d.entry, "index", "toolCallIndex")
	if err != nil {
		return errs.UpstreamUnverifiedEventShape
	}
	var idx int64
	hasIdx := idxM != nil
	if hasIdx {
		v, ok := parseUint(idxM.val)
		if idxM.kind != kNumber || !ok || v > maxUpstreamIdx {
			return errs.UpstreamUnverifiedEventShape
		}
		idx = v
	}
	gM, err := d.get(d.entry, "toolCallGroupId")
	if err != nil {
		return errs.UpstreamUnverifiedEventShape
	}
	group := dataGroup
	if gM != nil && gM.kind != kNull {
		s, ok := str(gM, &d.sbuf)
		if !ok || !validID(s) {
			return errs.UpstreamUnverifiedEventShape
		}
		group = s
	}
	name, args, code := d.entryCall()
	if code != "" {
		return code
	}

	// Resolve the call: by explicit index, then by id, then by position.
	var c *callAcc
	if hasIdx {
		if gi, ok := d.byUp[idx]; ok {
			c = d.calls[gi]
		}
	}
	if c == nil && id != "" {
		if gi, ok := d.byID[id]; ok {
			c = d.calls[gi]
			if hasIdx && c.hasUpIdx && c.upIdx != idx {
				return errs.UpstreamUnverifiedEventShape
			}
		}
	}
	if c == nil && !hasIdx && id == "" {
		idx, hasIdx = int64(pos), true
		if gi, ok := d.byUp[idx]; ok {
			c = d.calls[gi]
		}
	}
	if c != nil {
		if id != "" && c.id != id {
			return errs.UpstreamUnverifiedEventShape // an id that contradicts the call's
		}
		switch {
		case len(name) == 0:
		case c.upName == "":
			// The name arrives on a later chunk of the call (a fixture of both
			// public projects): the call is announced now.
			client, ok := d.mapName(name)
			if !ok {
				return errs.UpstreamUnverifiedEventShape // a tool that was never advertised
			}
			c.upName, c.name = string(name), client
		case string(name) != c.upName:
			return errs.UpstreamUnverifiedEventShape // the repeated name must not change
		}
		if len(group) > 0 {
			switch {
			case c.group == "":
				c.group = string(group)
			case c.group != string(group):
				return errs.UpstreamUnverifiedEventShape
			}
		}
		if hasIdx && !c.hasUpIdx {
			if _, taken := d.byUp[idx]; taken {
				return errs.UpstreamUnverifiedEventShape
			}
			c.upIdx, c.hasUpIdx = idx, true
			d.byUp[idx] = c.index
		}
	} else {
		if len(d.calls) >= maxCalls {
			return errs.UpstreamOutputTooLarge
		}
		var client string
		if len(name) > 0 {
			var ok bool
			if client, ok = d.mapName(name); !ok {
				return errs.UpstreamUnverifiedEventShape // a tool that was never advertised
			}
		}
		gi := len(d.calls)
		c = &callAcc{index: gi, upIdx: idx, hasUpIdx: hasIdx, id: id, group: string(group), upName: string(name), name: client}
		if id == "" {
			c.id, c.synthetic = InternalIDPrefix+strconv.Itoa(gi), true
		}
		if d.byID == nil {
			d.byID, d.byUp = map[string]int{}, map[int64]int{}
		}
		if !c.synthetic {
			d.byID[c.id] = gi
		}
		if hasIdx {
			d.byUp[idx] = gi
		}
		d.calls = append(d.calls, c)
	}

	if len(c.args)+len(args) > d.cfg.maxToolArgs {
		return errs.UpstreamToolArgumentsTooLarge
	}
	if d.outBytes+len(args) > d.cfg.maxOutput {
		return errs.UpstreamOutputTooLarge
	}
	d.outBytes += len(args)
	d.argBytes += len(args)
	c.args = append(c.args, args...)
	if c.name == "" {
		return "" // held until the upstream names the call
	}
	frag := args
	switch {
	case !c.announced:
		frag = c.args // the first delta carries the name and every fragment held so far
	case len(args) == 0:
		return ""
	}
	delta := &chat.ToolCallDelta{Index: c.index, UpstreamID: c.id, Synthetic: c.synthetic, UpstreamGroupID: c.group, ArgumentsFragment: string(frag)}
	if !c.announced {
		delta.Name, c.announced = c.name, true
	}
	d.deltas = append(d.deltas, chat.Event{Kind: chat.EventToolCall, ToolCall: delta})
	return ""
}

// entryCall reads an entry's name (function.name, name, tool.name) and argument
// fragment (function.arguments, arguments, input, input_json; an object or
// array is taken as its raw JSON text). The returned slices stay valid until the
// next entry.
func (d *decoder) entryCall() (name, args []byte, code errs.Code) {
	var nameM, argsM *member
	fnM, err := d.get(d.entry, "function")
	if err != nil {
		return nil, nil, errs.UpstreamUnverifiedEventShape
	}
	if fnM == nil || fnM.kind == kNull {
		if fnM, err = d.get(d.entry, "tool"); err != nil {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
	}
	d.fn = d.fn[:0]
	if fnM != nil && fnM.kind != kNull {
		if fnM.kind != kObject {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
		if d.fn, err = parseObjectSpan(fnM.val, d.fn); err != nil {
			return nil, nil, errs.UpstreamMalformedEvent
		}
		if nameM, err = d.first(d.fn, "name"); err != nil {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
		if argsM, err = d.first(d.fn, "arguments", "input", "input_json"); err != nil {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
	}
	if nameM == nil {
		if nameM, err = d.first(d.entry, "name"); err != nil {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
	}
	if argsM == nil {
		if argsM, err = d.first(d.entry, "arguments", "input", "input_json"); err != nil {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
	}
	if nameM != nil {
		n, ok := str(nameM, &d.lbuf)
		if !ok {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
		name = n
	}
	if argsM != nil {
		switch argsM.kind {
		case kString:
			args, _ = str(argsM, &d.tbuf)
		case kObject, kArray:
			args = argsM.val
		default:
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
	}
	return name, args, ""
}

// mapName maps an upstream tool name back to the client's name. The adapter
// advertises tools under their own names (identity); "pmgate.<name>" is also
// accepted, because a client name never contains '.'. Any other name was never
// advertised.
func (d *decoder) mapName(up []byte) (string, bool) {
	if n, ok := d.cfg.tools[string(up)]; ok {
		return n, true
	}
	if rest, ok := bytes.CutPrefix(up, []byte(toolGroupKey+".")); ok {
		n, ok := d.cfg.tools[string(rest)]
		return n, ok
	}
	return "", false
}
