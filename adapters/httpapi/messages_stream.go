package httpapi

import (
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/msgsse"
	"github.com/pmgate/pmgate/ports"
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

// streamMessage renders a turn as the Messages event stream. Headers wait
// for the first delta, so a failure before any output is a plain error with
// its status. After the headers, a failure is one event: error and the end
// of the stream: never message_delta or message_stop, which come only after
// the proven end. While the upstream is silent, ping events keep the
// connection alive.
func (s *server) streamMessage(w http.ResponseWriter, r *http.Request, o msgOutput, tr *turnReader) {
	ms := msgsse.New(sse.New(w, s.markStreamUsage))
	ctx := ports.WithBeforeWait(r.Context(), func() { _ = ms.Flush() })
	fail := func(err error) {
		body, e, _ := anthropicBody(ctx, err)
		s.noteError(ctx, e, err)
		_ = ms.Fail(body.Error, body.RequestID)
	}
	// emitted says whether the stream goes on after err, an emitter's.
	emitted := func(err error) bool {
		if err != nil {
			s.emitFailed(ctx, err, func(errorBody) error { fail(err); return nil })
		}
		return err == nil
	}
	// The turn is read on this goroutine; pings come from a timer's (the
	// stream serializes them), and after the handler's end (Close) the timer
	// writes nothing.
	interval := s.cfg.MessagesPingInterval
	if interval <= 0 {
		interval = defaultPingInterval
	}
	var ping *time.Timer
	ping = time.AfterFunc(interval, func() {
		if ms.Ping() {
			ping.Reset(interval)
		}
	})
	defer func() {
		ms.Close()
		ping.Stop()
	}()

	sc := newStopScanner(o.req.stops)
	for {
		st, err := tr.next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			if !ms.Started() {
				s.writeError(w, r, err)
				return
			}
			fail(err)
			return
		}
		if !ms.Started() {
			var input int64 // message_start's input count: the estimate, unless estimates are off
			if !s.cfg.UsageEstimatesOff {
				input = o.req.estimate
			}
			if !emitted(ms.Start(o.id, o.req.chat.Model, input)) {
				return
			}
		}
		if !emitted(ms.Text(sc.feed(st.text))) {
			return
		}
		if c := st.call; c != nil && sc.matched == nil {
			if st.first && (!emitted(ms.Text(sc.flush())) || !emitted(ms.ToolUse(c.ID, c.Name))) {
				return
			}
			if !emitted(ms.Input(c.Arguments)) {
				return
			}
		}
	}
	if !ms.Started() {
		s.writeError(w, r, errNothingProven())
		return
	}
	if sc.matched == nil && !emitted(ms.Text(sc.flush())) {
		return
	}
	emitted(ms.Stop(sc.matched, msgUsageOf(s.streamUsage(ctx, o.req.chat, tr))))
}
