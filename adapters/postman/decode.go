package postman

import (
	"context"
	"io"
	"sync"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/sse"
	"github.com/pmgate/pmgate/ports"
)

// The decoder turns an upstream SSE body into chat events and one completion
// outcome. This file holds its state and the read loop: reading the body,
// feeding SSE lines, and settling the outcome with the completion tracker.
// One event's JSON envelope is read in decode_envelope.go, its handlers live in
// decode_output.go (text, usage, failures), decode_conversation.go and
// decode_tools.go; the closed list of event names is decode_events.go.

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
	// mask removes the configured credentials from upstream text a client
	// may see (the loop-approval gate's fields); nil keeps the text.
	mask func(string) string
	// onCredits receives the plan report of each usage event that carried
	// one (the Client's holder); nil for a reader stream.
	onCredits func(ports.CreditReport)
}

// decoder turns an upstream SSE body into chat events and a completion outcome.
// It is not safe for concurrent use.
type decoder struct {
	cfg    decoderConfig
	r      io.Reader
	buf    []byte
	pooled *[]byte // buf's slice, from readBuffers; nil once released
	split  *sse.Splitter
	emit   func([]byte) error
	tr     *completion.Tracker

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
	cycleEnd   string             // the usage cycle's end an exhausted usage event named (RFC 3339), or ""
	credit     ports.CreditReport // the plan report of the stream's last usage event (not Known: none)
	ev         *evidence          // nil unless a summary was asked for
	label      string             // the first observed model label
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
	gate       *loopGate // the first loop-approval gate of the stream, nil when none
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
		pooled:     readBuffer(cfg.readChunk),
		split:      sse.NewSplitter(cfg.maxEvent),
		tr:         completion.NewTracker(cfg.rule),
		labelMatch: true,
		convID:     cfg.convID,
	}
	d.buf = *d.pooled
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
// the outcome. It reads from the body only when buffered reports false.
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
			d.releaseBuffer() // the decoder never reads again
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
				d.apply(d.fire(e, ""))
			}
		case n == 0:
			d.emptyReads++
			if d.emptyReads > maxEmptyReads {
				d.apply(d.fire(completion.ReadError, ""))
			}
		}
	}
}

func (d *decoder) push(ev chat.Event) { d.q = append(d.q, ev) }

// buffered reports whether next returns without reading the body: an event
// of an earlier read is queued, or the outcome is known (ports.Buffered).
func (d *decoder) buffered() bool { return d.qh < len(d.q) || d.final != nil }

// readBuffers holds the read buffers of decoders that reached their outcome:
// a buffer is most of what a streamed turn allocates, and the next stream
// takes one from here instead of a new one.
var readBuffers = sync.Pool{New: func() any { b := make([]byte, defaultReadChunk); return &b }}

func readBuffer(size int) *[]byte {
	if size != defaultReadChunk {
		b := make([]byte, size)
		return &b
	}
	return readBuffers.Get().(*[]byte)
}

// releaseBuffer gives the read buffer back, once the outcome is known: no
// read follows, and nothing the decoder keeps refers into the buffer (lines
// are parsed, and their values copied, before the next read overwrites it).
// A stream closed before its outcome keeps its buffer (a Read may still be
// running in it) and leaves it to the collector.
func (d *decoder) releaseBuffer() {
	if d.pooled != nil && len(*d.pooled) == defaultReadChunk {
		readBuffers.Put(d.pooled)
	}
	d.buf, d.pooled = nil, nil
}

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
