package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/msgsse"
)

// stopScanner enforces stop_sequences on text that arrives in pieces: the
// text is cut before the first sequence to complete, and released only up
// to where no sequence can still begin, so a sequence split across upstream
// deltas is found as surely as one inside a delta. With no sequences it
// releases everything at once.
type stopScanner struct {
	stops   []string
	hold    int // longest sequence − 1: bytes that may begin a match
	pending string
	matched *string // the sequence that cut the text
}

func newStopScanner(stops []string) *stopScanner {
	sc := &stopScanner{stops: stops}
	for _, s := range stops {
		sc.hold = max(sc.hold, len(s)-1)
	}
	return sc
}

// feed adds text and returns what may be shown now; after a match it
// returns nothing more.
func (sc *stopScanner) feed(t string) string {
	if sc.matched != nil {
		return ""
	}
	if len(sc.stops) == 0 {
		return t
	}
	sc.pending += t
	// The sequence that completes first stops generation.
	cut, end := -1, -1
	for i, s := range sc.stops {
		if j := strings.Index(sc.pending, s); j >= 0 && (end < 0 || j+len(s) < end) {
			cut, end = j, j+len(s)
			sc.matched = &sc.stops[i]
		}
	}
	if cut >= 0 {
		out := sc.pending[:cut]
		sc.pending = ""
		return out
	}
	n := len(sc.pending) - sc.hold
	for n > 0 && n < len(sc.pending) && !utf8.RuneStart(sc.pending[n]) {
		n--
	}
	if n <= 0 {
		return ""
	}
	out := sc.pending[:n]
	sc.pending = sc.pending[n:]
	return out
}

// flush releases the held tail at the proven end (no sequence completed).
func (sc *stopScanner) flush() string {
	out := sc.pending
	sc.pending = ""
	return out
}

// defaultPingInterval is how often a stream with nothing to say sends
// event: ping, so that clients' idle timers see bytes during long upstream
// silences.
const defaultPingInterval = 10 * time.Second

// streamMessage renders a turn as the Messages event stream (answer.Drive):
// message_delta and message_stop come only after the proven end, a failure
// after the headers is one event: error. While the upstream is silent, ping
// events keep the connection alive.
func (s *server) streamMessage(w http.ResponseWriter, r *http.Request, o msgOutput, tr *answer.Reader) error {
	m := &msgStream{s: s, o: o, ms: msgsse.New(sse.New(w, answer.StreamUsageHeader(s.cfg.UsageEstimatesOff))), sc: newStopScanner(o.req.stops)}
	// The turn is read on this goroutine; pings come from a timer's (the
	// emitter serializes them), and after the handler's end (Close) the
	// timer writes nothing.
	interval := s.cfg.MessagesPingInterval
	if interval <= 0 {
		interval = defaultPingInterval
	}
	// The timer may fire before AfterFunc has returned (a short interval, a
	// loaded machine): its function waits until ping is set.
	var ping *time.Timer
	armed := make(chan struct{})
	ping = time.AfterFunc(interval, func() {
		<-armed
		if m.ms.Ping() {
			ping.Reset(interval)
		}
	})
	close(armed)
	defer func() {
		m.ms.Close()
		ping.Stop()
	}()
	return answer.Drive(r.Context(), tr, m)
}

// msgStream is a turn rendered through the Messages emitter, its text cut
// at the request's stop sequences.
type msgStream struct {
	s  *server
	o  msgOutput
	ms *msgsse.Stream
	sc *stopScanner
}

func (m *msgStream) Opened() bool { return m.ms.Started() }

// open: message_start's input count is the estimate, unless estimates are off.
func (m *msgStream) Open() error {
	var input int64
	if !m.s.cfg.UsageEstimatesOff {
		input = m.o.req.estimate
	}
	return m.ms.Start(m.o.id, m.o.req.chat.Model, input)
}

func (m *msgStream) Step(st answer.Step) error {
	if err := m.ms.Text(m.sc.feed(st.Text)); err != nil {
		return err
	}
	c := st.Call
	if c == nil || m.sc.matched != nil {
		return nil
	}
	if st.First {
		if err := m.ms.Text(m.sc.flush()); err != nil {
			return err
		}
		if err := m.ms.ToolUse(c.ID, c.Name); err != nil {
			return err
		}
	}
	return m.ms.Input(c.Arguments)
}

func (m *msgStream) Finish(ctx context.Context, tr *answer.Reader) error {
	if !m.ms.Started() {
		return errNothingProven()
	}
	if m.sc.matched == nil {
		if err := m.ms.Text(m.sc.flush()); err != nil {
			return err
		}
	}
	return m.ms.Stop(m.sc.matched, msgUsageOf(tr.Usage(m.o.req.chat, m.s.cfg.UsageEstimatesOff, nil)))
}

func (m *msgStream) Flush() error { return m.ms.Flush() }

func (m *msgStream) Fail(ctx context.Context, err error) error {
	body, e, _ := anthropicBody(ctx, err)
	m.s.noteError(ctx, e, err)
	return m.ms.Fail(body.Error, body.RequestID)
}
