package app

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/attempt"
	"github.com/pmgate/pmgate/domain/budget"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// A retry never spends twice (docs/USAGE.md, "Retries never spend twice").
// The official SDKs retry a request that timed out or failed by themselves,
// without an idempotency key, marking each retry with
// x-stainless-retry-count: 1, 2, …; a client may also name a request with an
// explicit Idempotency-Key. Such a request is recorded in the attempt store
// (ports.AttemptStore) under a key that binds the principal, the route and
// either the body's bytes (a marked request) or the client's key:
//
//   - a marked retry (count ≥ 1) of a fresh request identical to one being
//     answered waits for it; of one answered within the window it gets the
//     recorded outcome: the answer replayed (JSON, or the stream rendered
//     again from the recorded deltas) or the failure's code, never a failure
//     replayed as a success, and nothing is dispatched;
//   - an explicit key with the same body gets the recorded outcome, or
//     idempotency_key_in_use while the first is in flight; with another body
//     idempotency_key_reused;
//   - an attempt that provably dispatched nothing (a refusal before sending,
//     an upstream refusal before processing) removes its record: its retry is
//     dispatched as if it were the first;
//   - Claude Code's own retries (each a new SDK call, count 0) are
//     recognised by its User-Agent: any identical body of it is a repeat;
//   - the first attempt (count 0) of a marked request is recorded and its
//     upstream exchange runs to its end even when its client goes away (the
//     SDK's timeout closes the connection before it retries), bounded by the
//     request timeout, so that the retry gets its answer.
//
// Only fresh requests use the marker: a continuation (tool results) is
// already dispatched at most once by its group. An explicit key is honoured
// on both.

// Repeat is what the ingress knows of a request a client may send again.
type Repeat struct {
	Route string // the API's method and path, e.g. "POST /v1/chat/completions"
	Body  []byte // the body as received; only its hash is kept
	// RetryCount is the x-stainless-retry-count header's value, or -1 when the
	// request carries none (or an unreadable one).
	RetryCount int
	// IdempotencyKey is the client's Idempotency-Key, or "".
	IdempotencyKey string
}

// Detached is implemented by a turn whose upstream exchange outlives its
// client: the ingress must not close it when its client goes away (the turn
// watches that itself), only when it is done with it (Close reads it to its
// end and records it).
type Detached interface{ Detached() bool }

// Replayed is implemented by a turn that replays a recorded answer instead of
// dispatching: the ingress discloses it.
type Replayed interface{ Replayed() bool }

// ErrReplayed marks a failure that is the recorded outcome of an earlier
// attempt of the same request (or an answer about that attempt), not a new
// one: the ingress discloses it like a replayed answer.
var ErrReplayed = errors.New("app: recorded outcome of an earlier attempt")

// AttemptPolicy bounds the records: how long an outcome is kept, and how
// long past its request's deadline an attempt in flight may still finish.
type AttemptPolicy struct {
	TTL time.Duration
	// Grace is added to the request's deadline to make the record's: an
	// attempt in flight past it has lost its owner (a stopped replica).
	Grace time.Duration
	// Poll is how often a waiting retry reads the record again.
	Poll time.Duration
	// AbortGrace (750 ms) is how long an attempt whose client went away goes on
	// without a repeat waiting for it before it is released (the SDKs retry
	// after half a second; a client disconnect releases the upstream within
	// one second).
	AbortGrace time.Duration
}

// WithAttempts turns the recording of repeatable requests on. Call it before
// serving.
func (g *Gateway) WithAttempts(s ports.AttemptStore, p AttemptPolicy) *Gateway {
	if s == nil {
		panic("app: nil attempt store")
	}
	if p.Poll <= 0 {
		p.Poll = 100 * time.Millisecond
	}
	if p.AbortGrace <= 0 {
		p.AbortGrace = 750 * time.Millisecond
	}
	g.attempts, g.attemptPolicy = s, p
	return g
}

// attemptKey names a recorded request.
func attemptKey(p Principal, r *Repeat, bodyHash string) string {
	h := sha256.New()
	for _, part := range []string{p.ID, r.Route} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	if r.IdempotencyKey != "" {
		h.Write([]byte("key\x00" + r.IdempotencyKey))
	} else {
		h.Write([]byte("body\x00" + bodyHash))
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func bodyHashOf(b []byte) string {
	s := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(s[:])
}

// attempt answers a request the ingress described (r): recorded, replayed,
// waited for, or, when it is none of the repeatable kinds, passed on.
func (g *Gateway) attempt(ctx context.Context, sum *record, p Principal, req chat.Request, r *Repeat) (Turn, error) {
	explicit := r.IdempotencyKey != ""
	if !explicit {
		if _, cont := correlation.SplitContinuation(req.Messages); r.RetryCount < 0 || cont {
			return g.chat(ctx, sum, p, req)
		}
	}
	bodyHash := bodyHashOf(r.Body)
	key := attemptKey(p, r, bodyHash)
	// Claude Code retries with its own loop, one new SDK call per attempt, so
	// every attempt carries count 0; it never sends a byte-identical
	// transcript again but as a retry (a new prompt, or an interrupted turn,
	// changes the transcript), so an identical body of it is a retry.
	kind := attempt.Question
	switch {
	case explicit:
		kind = attempt.Repeat
	case r.RetryCount >= 1 || req.Client == budget.ClientClaudeCode:
		kind = attempt.Retry
	}
	repeat := kind != attempt.Question
	for {
		if repeat {
			rec, ok, err := g.attempts.Get(ctx, key, g.clock.Now())
			if err != nil {
				return nil, err // no proof this is not a repeat: nothing is sent
			}
			ev := kind
			if explicit && ok && rec.BodyHash != bodyHash {
				ev = attempt.KeyReused
			}
			d, err := attempt.Fire(attempt.Of(fieldsOf(rec, ok), g.clock.Now()), ev)
			if err != nil {
				return nil, err
			}
			g.logAttempt(ctx, d)
			switch d.Effect {
			case attempt.EffectReplay:
				return g.replayRecord(rec, req)
			case attempt.EffectReject:
				if d.Code == errs.RetryOutcomeUnknown {
					return nil, errors.Mark(d.Err(), ErrReplayed)
				}
				return nil, d.Err()
			case attempt.EffectWait:
				if d.From == attempt.InFlight {
					if err := g.attempts.Await(ctx, key, rec.Token); err != nil {
						return nil, err
					}
				}
				if err := g.waitAttempt(ctx, key, rec); err != nil {
					return nil, err
				}
				continue
			}
		}
		token, err := g.ids.Token()
		if err != nil {
			return nil, err
		}
		now := g.clock.Now()
		deadline := now.Add(requestLeft(ctx) + g.attemptPolicy.Grace)
		rec := ports.Attempt{Key: key, BodyHash: bodyHash, Token: token, Deadline: deadline, Expires: deadline.Add(g.attemptPolicy.TTL)}
		cur, began, err := g.attempts.Begin(ctx, rec, !repeat, now)
		switch {
		case errors.Is(err, ports.ErrAttemptsFull) || (err != nil && !repeat):
			// No room, or no store: the request goes on unrecorded (a retry
			// of it then finds no record and is refused only if the store
			// cannot be read).
			g.log.WarnContext(ctx, "request not recorded for its retries", "code", string(errs.CodeOf(err)), "full", errors.Is(err, ports.ErrAttemptsFull))
			return g.chat(ctx, sum, p, req)
		case err != nil:
			return nil, err
		case !began && !repeat:
			// The same question again while the first is being answered, not
			// marked as a retry: a new question, answered on its own.
			d, err := attempt.Fire(attempt.Of(fieldsOf(cur, true), now), attempt.Question)
			if err != nil {
				return nil, err
			}
			g.logAttempt(ctx, d)
			return g.chat(ctx, sum, p, req)
		case !began:
			continue // an identical attempt began first: its outcome
		}
		if !repeat {
			g.logAttempt(ctx, attempt.Decision{Row: questionRow, From: attempt.Absent, To: attempt.InFlight, Event: attempt.Question, Effect: attempt.EffectDispatch})
		}
		return g.run(ctx, sum, p, req, key, token)
	}
}

// questionRow is the row of a question recorded in flight (ABSENT →
// IN_FLIGHT): the store's Begin applied it.
var questionRow = func() string {
	d, err := attempt.Fire(attempt.Absent, attempt.Question)
	if err != nil {
		panic(err)
	}
	return d.Row
}()

// fieldsOf is what the machine reads of a stored record (ok: a live one).
func fieldsOf(rec ports.Attempt, ok bool) attempt.Fields {
	return attempt.Fields{Exists: ok, Done: rec.Done, Awaited: rec.Awaited, Code: rec.Code, Answered: rec.Answer != nil, Deadline: rec.Deadline}
}

// logAttempt reports one applied row of the attempt machine at debug.
func (g *Gateway) logAttempt(ctx context.Context, d attempt.Decision) {
	g.log.DebugContext(ctx, "attempt", "row", d.Row, "from", string(d.From), "to", string(d.To), "effect", string(d.Effect), "code", string(d.Code))
}

// replayRecord answers a repeat with its record's outcome (rows of
// attempt.EffectReplay): the failure's own code, or the answer replayed;
// never a failure replayed as a success.
func (g *Gateway) replayRecord(rec ports.Attempt, req chat.Request) (Turn, error) {
	if rec.Code != "" {
		if _, ok := errs.Lookup(errs.Code(rec.Code)); !ok {
			return nil, errors.Mark(errs.New(errs.RetryOutcomeUnknown), ErrReplayed)
		}
		return nil, errors.Mark(errs.New(errs.Code(rec.Code)), ErrReplayed)
	}
	t, err := replayTurn(rec.Answer, req.Output)
	if err != nil {
		if errs.Has(err, errs.ToolCallAlreadyConsumed) { // bytes that are no answer
			err = errs.New(errs.RetryOutcomeUnknown)
		}
		return nil, errors.Mark(err, ErrReplayed)
	}
	return replayedTurn{t}, nil
}

// waitAttempt returns when the attempt in flight that rec records has
// finished, was abandoned or passed its deadline, or when ctx ends.
func (g *Gateway) waitAttempt(ctx context.Context, key string, rec ports.Attempt) error {
	tick := time.NewTicker(g.attemptPolicy.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
		cur, ok, err := g.attempts.Get(ctx, key, g.clock.Now())
		if err != nil {
			return err
		}
		if !ok || cur.Done || cur.Token != rec.Token || !g.clock.Now().Before(cur.Deadline) {
			return nil
		}
	}
}

// run dispatches a recorded attempt. Its upstream exchange is detached from
// the client's cancellation (not from the request's deadline), so that it
// ends, and is recorded, when the client went away to retry: the turn's Close
// drains it. A client that went away without a retry waiting for the attempt
// within AbortGrace releases it (abortSoon).
func (g *Gateway) run(ctx context.Context, sum *record, p Principal, req chat.Request, key, token string) (Turn, error) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestLeft(ctx))
	t := &recordedTurn{g: g, ctx: dctx, cancel: cancel, key: key, token: token, sum: sum}
	t.abortMu.Lock()
	t.watch = context.AfterFunc(ctx, t.abortSoon)
	t.abortMu.Unlock()
	inner, err := g.chat(dctx, sum, p, req)
	if err != nil {
		t.stopWatch()
		t.settle(err)
		cancel()
		return nil, err
	}
	t.inner = inner
	return t, nil
}

// recordedTurn passes a recorded attempt's deltas on and records its outcome
// at its end. Its Close drains an unfinished turn (the client went away), so
// the ingress must not close it from another goroutine on a disconnect: it
// aborts it (Detached) when the client did not leave to retry.
type recordedTurn struct {
	g      *Gateway
	inner  Turn
	ctx    context.Context
	cancel context.CancelFunc
	key    string
	token  string
	sum    *record // what the request did: settle reads its dispatches

	mu     sync.Mutex
	deltas []Delta
	ended  bool
	err    error

	abortMu   sync.Mutex
	watch     func() bool // stops the watch of the client's context
	abort     *time.Timer // set by abortSoon
	abortDone bool
}

// Detached implements Detached.
func (t *recordedTurn) Detached() bool { return true }

// abortSoon runs when the client went away (or its request timed out),
// maybe to retry: unless a repeat waits for the attempt when AbortGrace has
// passed, the upstream exchange is released, as a disconnect releases any
// other, and the attempt is recorded as of unknown outcome.
func (t *recordedTurn) abortSoon() {
	t.abortMu.Lock()
	defer t.abortMu.Unlock()
	if t.abortDone {
		return
	}
	t.abort = time.AfterFunc(t.g.attemptPolicy.AbortGrace, func() {
		rec, ok, err := t.g.attempts.Get(context.WithoutCancel(t.ctx), t.key, t.g.clock.Now())
		if err == nil && ok && rec.Token == t.token && rec.Awaited {
			return // a retry waits for the answer
		}
		t.cancel()
	})
}

// stopWatch ends the watch of the client once the attempt ended.
func (t *recordedTurn) stopWatch() {
	t.abortMu.Lock()
	defer t.abortMu.Unlock()
	t.abortDone = true
	if t.watch != nil {
		t.watch()
	}
	if t.abort != nil {
		t.abort.Stop()
	}
}

// Next implements Turn: the inner turn's next delta, read under the
// detached context.
func (t *recordedTurn) Next(context.Context) (Delta, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return Delta{}, t.end()
	}
	d, err := t.inner.Next(t.ctx)
	return d, t.step(d, err)
}

// TryNext implements TryTurn: the inner turn's, read under the detached
// context; an inner turn that cannot tell is read as if its delta were at
// hand (Next).
func (t *recordedTurn) TryNext(context.Context) (Delta, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return Delta{}, true, t.end()
	}
	tt, ok := t.inner.(TryTurn)
	if !ok {
		d, err := t.inner.Next(t.ctx)
		return d, true, t.step(d, err)
	}
	d, ok, err := tt.TryNext(t.ctx)
	if !ok {
		return Delta{}, false, nil
	}
	return d, true, t.step(d, err)
}

// end is what Next returns once the turn ended.
func (t *recordedTurn) end() error {
	if t.err == nil {
		return io.EOF
	}
	return t.err
}

// Summary implements Summarized.
func (t *recordedTurn) Summary() Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.inner.(Summarized); ok {
		return s.Summary()
	}
	return t.sum.summary()
}

// step keeps what the inner turn returned (d, err) and returns err.
func (t *recordedTurn) step(d Delta, err error) error {
	switch {
	case err == nil:
		t.deltas = append(t.deltas, d)
	case errors.Is(err, io.EOF):
		t.ended = true
		t.settle(nil)
	default:
		t.ended, t.err = true, err
		t.settle(err)
	}
	return err
}

// Close implements Turn: an unfinished turn is read to its end (bounded by
// the request's deadline) and recorded, then released.
func (t *recordedTurn) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inner == nil {
		return
	}
	for !t.ended {
		d, err := t.inner.Next(t.ctx)
		_ = t.step(d, err)
	}
	t.inner.Close()
	t.stopWatch()
	t.cancel()
}

// settle records the attempt's outcome: the answer of a success, the code of
// a failure, or nothing (the record removed) when nothing was dispatched.
func (t *recordedTurn) settle(err error) {
	g, ctx := t.g, context.WithoutCancel(t.ctx)
	var serr error
	switch {
	case err != nil && (t.sum.Dispatches == 0 || errs.Has(err, errs.UpstreamConversationLost)):
		// Nothing dispatched, or the service proved it processed nothing (it
		// no longer knows the conversation the turn continued, so nothing
		// was answered): the retry is dispatched as a first attempt — after
		// a lost conversation it starts a fresh one.
		serr = g.attempts.Abandon(ctx, t.key, t.token)
	case err != nil:
		code := errs.CodeOf(err)
		if code == errs.ClientCancelled {
			// Released after its client left: sent, its outcome unknown.
			code = errs.RetryOutcomeUnknown
		}
		serr = g.attempts.Finish(ctx, t.key, t.token, string(code), nil, g.expires(), g.clock.Now())
	default:
		answer, eerr := encodeReplay(t.deltas)
		if eerr != nil {
			answer = nil // recorded without it: a retry is refused, never dispatched
		}
		serr = g.attempts.Finish(ctx, t.key, t.token, "", answer, g.expires(), g.clock.Now())
	}
	t.deltas = nil
	if serr != nil {
		// The record stays in flight until its deadline; a retry then gets
		// retry_outcome_unknown, never a second dispatch.
		g.log.ErrorContext(ctx, "attempt outcome not recorded", "code", string(errs.CodeOf(serr)), "error", errs.Redact(serr))
	}
}

// requestLeft is the time left before ctx's deadline (the request timeout),
// or a bound of ten minutes when it has none.
func requestLeft(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl)
	}
	return 10 * time.Minute
}

func (g *Gateway) expires() time.Time { return g.clock.Now().Add(g.attemptPolicy.TTL) }

// replayedTurn is a recorded answer replayed.
type replayedTurn struct{ Turn }

// Replayed implements Replayed.
func (replayedTurn) Replayed() bool { return true }
