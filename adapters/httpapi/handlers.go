package httpapi

import (
	"bytes"
	"context"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/budget"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// turnFacts is what one request of a turn route did, as serveTurn returns
// it to the route's adapter (s.turn): the adapter writes it on the request's
// record (the access line, the metrics) and counts a served request in the
// ledger. A handler never writes the record itself.
type turnFacts struct {
	served     bool      // serveTurn ran: the ledger counts the request
	start      time.Time // when serveTurn began (the ledger's time and duration)
	stream     bool
	model      string      // a configured public id, once the request was validated
	toolCalls  int         // tool calls shown to the client
	firstToken time.Time   // the first text or tool-call delta; zero when none
	usage      string      // how the shown usage was obtained; "" when none was shown
	summary    app.Summary // what went upstream, from the turn or its refusal
}

// errRequestTimeout is the cause of a chat request's context when
// RequestTimeout elapses.
var errRequestTimeout = errors.New("httpapi: request timeout")

// serveTurn is the one request path of both APIs: content type, bounded body
// read under BodyReadTimeout, full validation (decode, which returns the
// API's own request and the normalized chat request), then a concurrency
// slot and one turn of the service, rendered by render. Nothing reaches the
// service unless the whole request is valid.
//
// The slot is taken after the body is read and validated: it stands for an
// upstream exchange, so a client that trickles its body (or sends an invalid
// one) never keeps a slot from the others; what such clients can hold is
// bounded by MAX_CONNECTIONS and, in time, by BodyReadTimeout.
//
// conversation is the API's name of the conversation field ("messages",
// "input"): the param of a refusal of the conversation as a whole by the
// service (tool results while correlation is off).
//
// A failure before the answer began is returned, not written: the route's
// adapter writes it (s.handle), in the route's shape. render returns its
// failure likewise when it wrote nothing; a stream that began reports its
// failure inside the stream and returns it too, to be noted only.
//
// What the turn did comes back as its facts, which the route's adapter
// (s.turn) writes on the request's record and counts in the ledger: the
// ledger counts every authenticated request of the API, refusals included,
// and the service returns what went upstream (and what the access line says
// of it) with its turn or its refusal.
func serveTurn[T any](s *server, w http.ResponseWriter, r *http.Request, conversation string, decode func(body []byte) (T, chat.Request, error),
	render func(w http.ResponseWriter, r *http.Request, req T, tr *answer.Reader) error) (f turnFacts, err error) {
	f = turnFacts{served: true, start: s.now()}
	ctx := r.Context()
	defer func() {
		if err != nil {
			err = s.atTurn(ctx, err)
		}
	}()
	admission := s.startSpan(r, ports.SpanAdmission)
	refuse := func(err error) error {
		if admission != nil {
			admission.Fail(string(codeOf(r.Context(), err)))
			admission.End()
		}
		return err
	}
	body, err := s.readJSON(w, r)
	if err != nil {
		return f, refuse(err)
	}
	apiReq, req, err := decode(body)
	if err != nil {
		return f, refuse(err)
	}
	req.Client = budget.ClientOf(r.UserAgent()) // only for the recipe a budget refusal points at
	f.stream, f.model = req.Stream, req.Model
	// The key was checked at the headers; the body may have taken up to
	// BodyReadTimeout. A slot revoked (or its key rotated) meanwhile is
	// refused here, before anything is dispatched.
	sl := slotFrom(r.Context())
	if sl != nil {
		if sl = s.keys.current(sl); sl == nil {
			return f, errs.New(errs.InvalidAPIKey)
		}
	}
	// The key slot's own limit (if any) applies on top of the global one.
	release, ok := acquire(s.sem, sl.limiter())
	if !ok {
		return f, refuse(errs.New(errs.ConcurrencyLimitExceeded))
	}
	defer release()
	if admission != nil {
		admission.SetBool(ports.AttrStream, req.Stream)
		admission.End()
	}
	s.log.DebugContext(r.Context(), "request decoded", "stream", req.Stream, "messages", len(req.Messages),
		"tools", len(req.Tools), "tool_choice", string(req.ToolChoice.Mode))

	ctx = context.WithValue(r.Context(), clientCtxKey{}, r.Context())
	rep, err := repeatOf(r, body)
	if err != nil {
		return f, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.cfg.RequestTimeout, errRequestTimeout)
	defer cancel()
	r = r.WithContext(ctx)

	turn, err := s.svc.Chat(ctx, principalFrom(ctx), req, rep)
	if err == nil && turn == nil {
		err = errors.AssertionFailedf("httpapi: service returned neither a turn nor an error")
	}
	if errors.Is(err, app.ErrContinuationNeedsCorrelation) {
		err = rules.At(err, conversation)
	}
	if err != nil {
		f.summary = app.SummaryOf(err)
		if errors.Is(err, app.ErrReplayed) {
			w.Header().Set(replayedHeader, "true")
		}
		return f, err
	}
	defer func() {
		turn.Close()
		if t, ok := turn.(app.Summarized); ok {
			f.summary = t.Summary() // complete once the turn was closed
		}
	}()
	if d, ok := turn.(app.Disclosed); ok && d.Disclosure() != "" {
		// The upstream conversation holds more than the client's transcript
		// (docs/CONVERSATIONS.md): said before any byte of the answer.
		w.Header().Set(ConversationHeader, d.Disclosure())
	}
	if rp, ok := turn.(app.Replayed); ok && rp.Replayed() {
		w.Header().Set(replayedHeader, "true")
	}
	// A client disconnect or the request timeout releases the upstream at
	// once, even while Next is blocked. A recorded attempt (app.Detached)
	// watches its client itself: one that left to retry leaves it running for
	// the retry, and its Close, deferred above, reads it to its end.
	if d, ok := turn.(app.Detached); !ok || !d.Detached() {
		stop := context.AfterFunc(ctx, turn.Close)
		defer stop()
	}

	tr := answer.NewReader(turn, s.now)
	err = render(w, r, apiReq, tr)
	f.toolCalls, f.usage, f.firstToken = tr.Calls, tr.Shown, tr.First
	return f, err
}

// atTurn is a failure of a turn as the code it is answered with: the turn's
// context classifies a bare context error (codeOf), and that context ends
// before the route's adapter notes or writes the failure, so the code is
// marked on the error.
func (s *server) atTurn(ctx context.Context, err error) error {
	if c := codeOf(ctx, err); c != errs.CodeOf(err) {
		err = errs.Wrap(err, c)
	}
	return err
}

// replayedHeader discloses an answer (or a failure) that is the recorded
// outcome of an earlier attempt of the same request: nothing was dispatched.
const replayedHeader = "x-pmgate-replayed"

// The headers that make a request one a client may send again
// (docs/USAGE.md, "Retries never spend twice").
const (
	retryCountHeader     = "X-Stainless-Retry-Count"
	idempotencyKeyHeader = "Idempotency-Key"
	maxIdempotencyKey    = 255
)

// repeatOf describes the request for the service when it carries an SDK's
// retry count or an Idempotency-Key (nil otherwise). A retry count that is
// no small non-negative integer is ignored (the request is then no marked
// retry); an Idempotency-Key must be 1-255 visible ASCII characters.
func repeatOf(r *http.Request, body []byte) (*app.Repeat, error) {
	count, hasCount := -1, false
	if v := r.Header.Get(retryCountHeader); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 && n <= 1000 {
			count, hasCount = n, true
		}
	}
	key := r.Header.Get(idempotencyKeyHeader)
	_, hasKey := r.Header[idempotencyKeyHeader]
	if !hasCount && !hasKey {
		return nil, nil
	}
	if hasKey && (key == "" || len(key) > maxIdempotencyKey || !visibleASCII(key)) {
		return nil, rules.Invalid("", "The Idempotency-Key header must be 1 to 255 visible ASCII characters.")
	}
	return &app.Repeat{Route: r.Method + " " + r.URL.Path, Body: body, RetryCount: count, IdempotencyKey: key}, nil
}

// ConversationHeader discloses a turn that continued an upstream
// conversation holding more than the client's transcript.
const ConversationHeader = "x-pmgate-conversation"

// readJSON checks the content type and reads the body (readBody); the
// caller writes the refusal.
func (s *server) readJSON(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if !jsonMediaType(r.Header.Get("Content-Type")) {
		return nil, rules.Invalid("", "The Content-Type must be application/json.")
	}
	return s.readBody(w, r)
}

// acquire takes a place in the global semaphore and, when the slot has one,
// in the slot's limiter, without waiting; release gives back both.
func acquire(global chan struct{}, slot *limiter) (release func(), ok bool) {
	select {
	case global <- struct{}{}:
	default:
		return nil, false
	}
	if slot == nil {
		return func() { <-global }, true
	}
	if !slot.take() {
		<-global
		return nil, false
	}
	return func() { slot.give(); <-global }, true
}

// jsonMediaType accepts application/json and application/*+json, with any
// parameters (charset=utf-8, …).
func jsonMediaType(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// readBody reads the body under MaxBodyBytes and BodyReadTimeout. A declared
// Content-Length over the limit is refused before reading; otherwise
// http.MaxBytesReader stops the read at the limit (it looks at most one byte
// further, to tell "exactly at" from "over"). The connection's read deadline
// is set for the body and cleared afterwards (net/http watches the idle
// connection for a client disconnect during the exchange, and a deadline left
// in place would end that watch as a disconnect).
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limit := s.cfg.MaxBodyBytes
	tooLarge := func() error {
		return rules.Refuse(errs.RequestTooLarge, "", "The limit is "+strconv.FormatInt(limit, 10)+" bytes.")
	}
	if r.ContentLength > limit {
		return nil, tooLarge()
	}
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(s.now().Add(s.cfg.BodyReadTimeout)) == nil
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	if deadline && err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	}
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge()
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The expired deadline stays: net/http tries to drain an unread body
		// before answering, and must fail at once instead of waiting for the
		// slow client. The connection closes after the answer.
		w.Header().Set("Connection", "close")
		return nil, rules.Refuse(errs.RequestTimeout, "", "The limit is "+s.cfg.BodyReadTimeout.String()+".")
	case err != nil:
		return nil, rules.Invalid("", "The body could not be read.")
	}
	return buf.Bytes(), nil
}
