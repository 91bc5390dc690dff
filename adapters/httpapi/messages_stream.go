package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pmgate/pmgate/domain/errs"
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

// msgStream writes the Messages event stream: "event: <type>" and one data
// line per event, each ended by a blank line; no [DONE].
type msgStream struct {
	out   *sse
	index int // the next block index
	open  string
}

func (ms *msgStream) emit(typ string, v map[string]any) error {
	v["type"] = typ
	return ms.out.holdNamed(typ, v)
}

// streamMessage renders a turn as the Messages event stream. Headers wait
// for the first delta, so a failure before any output is a plain error with
// its status. After the headers, a failure is one event: error and the end
// of the stream: never message_delta or message_stop, which come only after
// the proven end. While the upstream is silent, ping events keep the
// connection alive.
func (s *server) streamMessage(w http.ResponseWriter, r *http.Request, o msgOutput, tr *turnReader) {
	// The turn is read on this goroutine; pings come from a timer's. mu
	// serializes every write, and after the handler's end (closed) the
	// timer writes nothing.
	var mu sync.Mutex
	closed := false
	var ms *msgStream
	var out *sse // ms.out, for the hook
	hook := waitHook(&out)
	ctx := ports.WithBeforeWait(r.Context(), func() {
		mu.Lock()
		defer mu.Unlock()
		hook()
	})
	var startInput int64 // the input count message_start reported
	ok := true
	// emit holds an event for the next write: when the turn waits for the
	// upstream, at a ping, or at the end (flush).
	emit := func(typ string, v map[string]any) {
		if ok && ms.emit(typ, v) != nil {
			infoFrom(ctx).code = errs.ClientCancelled
			ok = false
		}
	}
	// write writes what emit held: flushed at once (a ping), or as the
	// stream's last write (sse.end).
	write := func(last bool) {
		put := out.flush
		if last {
			put = out.end
		}
		if ok && put() != nil {
			infoFrom(ctx).code = errs.ClientCancelled
			ok = false
		}
	}
	interval := s.cfg.MessagesPingInterval
	if interval <= 0 {
		interval = defaultPingInterval
	}
	var ping *time.Timer
	ping = time.AfterFunc(interval, func() {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return
		}
		if ms != nil && ok {
			emit("ping", map[string]any{})
			write(false)
		}
		ping.Reset(interval)
	})
	defer func() {
		mu.Lock()
		closed = true
		mu.Unlock()
		ping.Stop()
	}()
	// Between reads, the turn's results are rendered under mu.
	mu.Lock()
	defer mu.Unlock()
	next := func() (step, error) {
		mu.Unlock()
		defer mu.Lock()
		return tr.next(ctx)
	}

	start := func() {
		s.markStreamUsage(w.Header())
		out = newSSE(w)
		ms = &msgStream{out: out}
		u := msgUsage{}
		if !s.cfg.UsageEstimatesOff {
			u.InputTokens = o.req.estimate
		}
		startInput = u.InputTokens
		emit("message_start", map[string]any{"message": message{ID: o.id, Type: "message", Role: "assistant",
			Model: o.req.chat.Model, Content: []json.RawMessage{}, Usage: u}})
	}
	closeBlock := func() {
		if ms.open != "" {
			emit("content_block_stop", map[string]any{"index": ms.index - 1})
			ms.open = ""
		}
	}
	text := func(t string) {
		if t == "" {
			return
		}
		if ms.open != "text" {
			closeBlock()
			emit("content_block_start", map[string]any{"index": ms.index, "content_block": textBlock{Type: "text", Text: ""}})
			ms.index++
			ms.open = "text"
		}
		emit("content_block_delta", map[string]any{"index": ms.index - 1, "delta": map[string]string{"type": "text_delta", "text": t}})
	}
	fail := func(err error) {
		body, e, _ := anthropicBody(ctx, err)
		s.noteError(ctx, e, err)
		emit("error", map[string]any{"error": body.Error, "request_id": body.RequestID})
		write(true)
	}

	sc := newStopScanner(o.req.stops)
	uses, argBytes, seen := 0, 0, false
	for ok {
		st, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if ms == nil {
				s.writeError(w, r, err)
				return
			}
			fail(err)
			return
		}
		seen = true
		if ms == nil {
			start()
		}
		text(sc.feed(st.text))
		if c := st.call; c != nil && sc.matched == nil {
			if st.first {
				text(sc.flush())
				if ms.open == "tool_use" && argBytes == 0 {
					emit("content_block_delta", map[string]any{"index": ms.index - 1, "delta": map[string]string{"type": "input_json_delta", "partial_json": "{}"}})
				}
				closeBlock()
				emit("content_block_start", map[string]any{"index": ms.index,
					"content_block": toolUseBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: json.RawMessage("{}")}})
				ms.index++
				ms.open = "tool_use"
				uses++
				argBytes = 0
			}
			argBytes += len(c.Arguments)
			emit("content_block_delta", map[string]any{"index": ms.index - 1, "delta": map[string]string{"type": "input_json_delta", "partial_json": c.Arguments}})
		}
	}
	if !ok {
		return
	}
	if !seen {
		s.writeError(w, r, errNothingProven())
		return
	}
	if sc.matched == nil {
		text(sc.flush())
	}
	if ms.open == "tool_use" && argBytes == 0 {
		emit("content_block_delta", map[string]any{"index": ms.index - 1, "delta": map[string]string{"type": "input_json_delta", "partial_json": "{}"}})
	}
	closeBlock()
	reason := stopReasonOf(sc.matched, uses)
	u := s.streamUsage(ctx, o.req.chat, tr)
	emit("message_delta", map[string]any{"delta": map[string]any{"stop_reason": reason, "stop_sequence": sc.matched}, "usage": deltaUsage(msgUsageOf(u), startInput)})
	emit("message_stop", map[string]any{})
	write(true)
}

// deltaUsage is message_delta's usage. Usage there is cumulative (the SDKs
// overwrite with it), so an input count below the one message_start gave —
// the upstream's count or the estimate of what was sent upstream, smaller
// than the request's — is left out, and message_start's stands.
func deltaUsage(u msgUsage, startInput int64) map[string]int64 {
	out := map[string]int64{"output_tokens": u.OutputTokens}
	if u.InputTokens >= startInput {
		out["input_tokens"] = u.InputTokens
		out["cache_creation_input_tokens"] = u.CacheCreationInputTokens
		out["cache_read_input_tokens"] = u.CacheReadInputTokens
	}
	return out
}
