package app

import (
	"context"
	"log/slog"
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

// Meter is what one request did upstream, for its ledger entry: the ingress
// puts one into the request's context (WithMeter) and the turn fills it.
type Meter struct {
	Dispatches  int
	QueryChars  int64
	OutputChars int64
	Usage       *chat.Usage // reported by the upstream; nil when not
}

type meterKey struct{}

// WithMeter returns ctx carrying a fresh meter.
func WithMeter(ctx context.Context) (context.Context, *Meter) {
	m := &Meter{}
	return context.WithValue(ctx, meterKey{}, m), m
}

func meterFrom(ctx context.Context) *Meter {
	if m, ok := ctx.Value(meterKey{}).(*Meter); ok {
		return m
	}
	return &Meter{}
}

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
