package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports"
)

// Usage is the owner's budget (docs/USAGE.md): it admits each upstream
// dispatch against the key slot's limits on the ledger's budget rows (shared
// by every replica on PostgreSQL), and keeps the usage ledger. Admissions are
// exact and synchronous; the ledger's daily rows are aggregated in memory and
// added to the store every flush interval (Run), so that recording costs a
// map update per request.
type Usage struct {
	ledger    ports.UsageLedger
	clock     ports.Clock
	log       *slog.Logger
	retention int

	mu      sync.Mutex
	pending map[usage.Key]usage.Row
}

// NewUsage returns the budget on ledger. It panics on a nil dependency.
func NewUsage(ledger ports.UsageLedger, clock ports.Clock, log *slog.Logger, retentionDays int) *Usage {
	if ledger == nil || clock == nil || log == nil {
		panic("app: nil dependency")
	}
	if retentionDays <= 0 {
		retentionDays = usage.DefaultRetentionDays
	}
	return &Usage{ledger: ledger, clock: clock, log: log, retention: retentionDays, pending: map[usage.Key]usage.Row{}}
}

// WithUsage makes the gateway admit every dispatch against the principal's
// limits and count it.
func (g *Gateway) WithUsage(u *Usage) *Gateway {
	if u == nil {
		panic("app: nil usage")
	}
	g.usage = u
	return g
}

// admit counts one dispatch of p before it is sent, a fresh turn's or a
// continuation's alike, and refuses it when a limit is reached
// (key_rate_limited, key_quota_exhausted, with the wait until the window
// frees) or when the budget cannot be read (correlation_store_unavailable:
// an unknown budget is not a green light). It returns the admission time for
// a refund.
func (g *Gateway) admit(ctx context.Context, p Principal) (time.Time, error) {
	if g.usage == nil || p.Slot == "" {
		return time.Time{}, nil
	}
	now := g.clock.Now()
	err := g.usage.ledger.Budget(ctx, p.Slot, func(b *usage.Budget) error { return b.Admit(now, p.Limits) })
	if err != nil {
		g.log.InfoContext(ctx, "key limit refused the request before sending", "code", string(errs.CodeOf(err)), "principal_slot", p.Slot)
		return time.Time{}, err
	}
	return now, nil
}

// refund gives back an admitted dispatch the upstream provably never
// accepted, and its rate-limit token too when nothing was sent at all (the
// upstream never saw the request: see usage.Budget.ReturnToken).
func (g *Gateway) refund(ctx context.Context, p Principal, admitted time.Time, cause error) {
	if g.usage == nil || admitted.IsZero() {
		return
	}
	unsent := errors.Is(cause, ports.ErrNotSent)
	err := g.usage.ledger.Budget(context.WithoutCancel(ctx), p.Slot, func(b *usage.Budget) error {
		b.Refund(admitted)
		if unsent {
			b.ReturnToken(p.Limits)
		}
		return nil
	})
	if err != nil {
		g.log.WarnContext(ctx, "a refused dispatch was not refunded", "code", string(errs.CodeOf(err)), "principal_slot", p.Slot)
	}
}

// Record counts one finished request in the ledger (buffered until the next
// flush).
func (u *Usage) Record(e usage.Entry) {
	k := usage.KeyOf(e)
	u.mu.Lock()
	r, ok := u.pending[k]
	if !ok {
		r = usage.Row{Key: k}
	}
	r.Add(e)
	u.pending[k] = r
	u.mu.Unlock()
}

// Flush adds the buffered rows to the ledger. Rows that could not be added
// stay buffered for the next flush.
func (u *Usage) Flush(ctx context.Context) error {
	u.mu.Lock()
	rows := make([]usage.Row, 0, len(u.pending))
	for _, r := range u.pending {
		rows = append(rows, r)
	}
	clear(u.pending)
	u.mu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	err := u.ledger.Add(ctx, rows)
	if err != nil {
		u.mu.Lock()
		for _, r := range rows {
			cur, ok := u.pending[r.Key]
			if !ok {
				cur = usage.Row{Key: r.Key}
			}
			cur.Merge(r)
			u.pending[r.Key] = cur
		}
		u.mu.Unlock()
	}
	return err
}

// Report returns the ledger's rows of the days [since, until] (this process's
// buffered rows included).
func (u *Usage) Report(ctx context.Context, since, until string) ([]usage.Row, error) {
	if err := u.Flush(ctx); err != nil {
		return nil, err
	}
	return u.ledger.Rows(ctx, since, until)
}

// Budgets returns every slot's budget as of now (past windows read as zero;
// limits are the caller's, for the bucket).
func (u *Usage) Budgets(ctx context.Context) (map[string]usage.Budget, error) {
	bs, err := u.ledger.Budgets(ctx)
	if err != nil {
		return nil, err
	}
	now := u.clock.Now()
	for k, b := range bs {
		bs[k] = b.At(now, usage.Limits{})
	}
	return bs, nil
}

// flushBound bounds the last flush when the process stops.
const flushBound = 2 * time.Second

// Run flushes the ledger every interval and sweeps rows past the retention
// once an hour, until ctx ends; then it flushes one last time. A failing
// flush is logged when it starts failing and when it recovers.
func (u *Usage) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	var swept time.Time
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushBound)
			if err := u.Flush(fctx); err != nil {
				u.log.Warn("usage ledger: the last rows were not written", "code", string(errs.CodeOf(err)))
			}
			cancel()
			return
		case <-t.C:
			err := u.Flush(ctx)
			switch {
			case err != nil && !failing:
				u.log.Warn("usage ledger flush failed; the rows stay buffered", "code", string(errs.CodeOf(err)), "error", errs.Redact(err))
			case err == nil && failing:
				u.log.Info("usage ledger flush recovered")
			}
			failing = err != nil
			if now := u.clock.Now(); now.Sub(swept) >= time.Hour {
				if n, err := u.ledger.Sweep(ctx, usage.Oldest(now, u.retention)); err == nil {
					swept = now
					if n > 0 {
						u.log.Info("usage ledger swept", "rows", n, "retention_days", u.retention)
					}
				}
			}
		}
	}
}

// Summary is what one request did, for the ingress's access line, its
// ledger entry and its metrics. The service returns it: a turn's once the
// turn was closed (Summarized), a refusal's with the error (SummaryOf). No
// layer fills it through the request's context.
type Summary struct {
	Dispatches  int         // upstream dispatches the request cost
	QueryChars  int64       // characters sent upstream
	OutputChars int64       // characters of the answer received
	Usage       *chat.Usage // reported by the upstream; nil when not
	// Notes are the named groups of attributes the request's access line
	// carries beyond the request itself ("conversation": the conversation
	// decision; "upstream": the upstream stream's outcome), in the order
	// first noted, one per name. Only log-safe values: no content, key or
	// upstream id. The service's own line of a noted decision is a debug
	// line unless it is a warning (ports.OwnLineLevel): the caller writes
	// the notes.
	Notes []slog.Attr
}

// Summarized is implemented by a turn that did something a request's
// summary counts (every turn the Gateway dispatched): Summary is complete
// once the turn was closed. A turn that is not Summarized dispatched and
// noted nothing.
type Summarized interface{ Summary() Summary }

// SummaryOf returns the summary a refusal of Chat carries: what the request
// did before it was refused (zero when it did nothing).
func SummaryOf(err error) Summary {
	var r *refusal
	if errors.As(err, &r) {
		return r.sum
	}
	return Summary{}
}

// summarized returns t as Chat returns it: a turn that is not Summarized
// (a replayed answer) carries what the request did before it, if anything.
func summarized(t Turn, sum *record) Turn {
	if _, ok := t.(Summarized); ok || sum.empty() {
		return t
	}
	return summarizedTurn{Turn: t, sum: sum.summary()}
}

// summarizedTurn is a turn that is not Summarized with the request's summary;
// it says what its turn says of itself.
type summarizedTurn struct {
	Turn
	sum Summary
}

func (t summarizedTurn) Summary() Summary { return t.sum }

// Disclosure implements Disclosed.
func (t summarizedTurn) Disclosure() string {
	if d, ok := t.Turn.(Disclosed); ok {
		return d.Disclosure()
	}
	return ""
}

// Replayed implements Replayed.
func (t summarizedTurn) Replayed() bool {
	r, ok := t.Turn.(Replayed)
	return ok && r.Replayed()
}

// record is the Summary of one request while the service answers it: Chat
// makes one and passes it to every step that dispatches or notes. It is
// used on the request's goroutine (a turn's Close from another one takes
// the turn's lock).
type record struct{ Summary }

// note notes the group name with attrs, replacing a group of the same name
// (one key per line: strict JSON log pipelines reject duplicates).
func (r *record) note(name string, attrs ...slog.Attr) {
	g := slog.Attr{Key: name, Value: slog.GroupValue(attrs...)}
	for i := range r.Notes {
		if r.Notes[i].Key == name {
			r.Notes[i] = g
			return
		}
	}
	r.Notes = append(r.Notes, g)
}

// summary returns a copy of what the record holds.
func (r *record) summary() Summary {
	s := r.Summary
	s.Notes = slices.Clone(s.Notes)
	return s
}

// empty reports whether the request did nothing a summary counts.
func (r *record) empty() bool {
	return r.Dispatches == 0 && r.QueryChars == 0 && r.OutputChars == 0 && r.Usage == nil && len(r.Notes) == 0
}

// refuse returns err carrying what the request did before it (SummaryOf).
func (r *record) refuse(err error) error {
	if r.empty() {
		return err
	}
	return &refusal{cause: err, sum: r.summary()}
}

// refusal is a refusal of Chat with the request's summary. It adds nothing
// to the error's message, code, marks or redaction.
type refusal struct {
	cause error
	sum   Summary
}

func (r *refusal) Error() string { return r.cause.Error() }
func (r *refusal) Unwrap() error { return r.cause }

// SafeFormatError prints nothing of its own, so that the redacted rendering
// (errs.Redact) is the cause's.
func (r *refusal) SafeFormatError(errors.Printer) error { return r.cause }

// Format renders the cause (fmt's %v, %+v).
func (r *refusal) Format(s fmt.State, verb rune) { errors.FormatError(r, s, verb) }

// contentChars counts the characters of the messages' content and tool-call
// arguments.
func contentChars(msgs []chat.Message) int64 {
	var n int64
	for _, m := range msgs {
		if m.Content != nil {
			n += usage.Chars(*m.Content)
		}
		for _, c := range m.ToolCalls {
			n += usage.Chars(c.Arguments)
		}
	}
	return n
}
