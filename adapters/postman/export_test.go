package postman

import (
	"io"
	"time"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/completion"
)

// ReaderConfig configures NewReaderStream.
type ReaderConfig struct {
	Rule                 completion.Rule
	MaxEventBytes        int
	MaxOutputBytes       int
	MaxToolArgumentBytes int
	Tools                []string // nil: no tools were advertised
	Observed             []string // accepted model labels
	ReadChunk            int      // bytes per Read of the decoder; 0 for the default
}

// NewReaderStream decodes an upstream body from r without HTTP, through the same
// decoder as a Client's streams.
func NewReaderStream(r io.Reader, c ReaderConfig) *Stream {
	var tools map[string]string
	if c.Tools != nil {
		tools = make(map[string]string, len(c.Tools))
		for _, t := range c.Tools {
			tools[t] = t
		}
	}
	return newReaderStream(r, decoderConfig{
		rule:        c.Rule,
		maxEvent:    c.MaxEventBytes,
		maxOutput:   c.MaxOutputBytes,
		maxToolArgs: c.MaxToolArgumentBytes,
		tools:       tools,
		observed:    c.Observed,
		readChunk:   c.ReadChunk,
	})
}

// NewReaderStreamIn is NewReaderStream for a continuation sent to convID.
func NewReaderStreamIn(r io.Reader, c ReaderConfig, convID string) *Stream {
	s := NewReaderStream(r, c)
	s.d.convID = convID
	s.d.cfg.convID = convID
	return s
}

// WithClock sets the clock used to read Retry-After dates.
func WithClock(now func() time.Time) Option { return withClock(now) }

// ParseRetryAfter exposes the Retry-After parser.
var ParseRetryAfter = parseRetryAfter

// Footprint is the number of bytes the stream's decoder retains in its own
// buffers (scratch space, held arguments of unnamed calls); the SSE line
// buffer is bounded by the Splitter itself.
func Footprint(s *Stream) int {
	d := s.d
	n := cap(d.buf) + cap(d.kbuf) + cap(d.tbuf) + cap(d.lbuf) + cap(d.sbuf) + cap(d.cbuf)
	for _, c := range d.calls {
		n += cap(c.held)
	}
	return n
}

// WithPeekTimeout bounds the time spent reading an error body.
func WithPeekTimeout(d time.Duration) Option { return withPeekTimeout(d) }

// ToolCall is one whole upstream tool call of a completed stream.
type ToolCall struct {
	Index           int    // the gateway's index (0, 1, …), as in the EventToolCall deltas
	UpstreamID      string // the upstream id, or InternalIDPrefix+Index when it sent none
	UpstreamGroupID string // "" when the upstream sent none
	Synthetic       bool   // UpstreamID is internal: the upstream sent no id
	Name            string // the client's tool name
	Arguments       string // the concatenated argument fragments, byte for byte
}

// ToolCalls assembles the tool calls of events, the events s returned, the way
// the gateway's turn does (chat.ToolCallSet). Like the turn, it hands nothing
// out unless s was proven complete.
func ToolCalls(s *Stream, events []chat.Event) []ToolCall {
	if !s.Outcome().Complete {
		return nil
	}
	var set chat.ToolCallSet
	for _, ev := range events {
		if ev.Kind == chat.EventToolCall && ev.ToolCall != nil {
			set.Add(*ev.ToolCall)
		}
	}
	var out []ToolCall
	for _, c := range set.Calls() {
		out = append(out, ToolCall{Index: c.Index, UpstreamID: c.UpstreamID, UpstreamGroupID: c.UpstreamGroupID,
			Synthetic: c.Synthetic, Name: c.Name, Arguments: c.Arguments()})
	}
	return out
}

// ParseRateWindow exposes the parsing of the rate-limit headers.
var ParseRateWindow = parseRateWindow
