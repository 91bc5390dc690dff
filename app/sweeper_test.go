package app_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

func TestShutdownCancelsPendingGroupsOfAPrivateStoreOnly(t *testing.T) {
	is := is.New(t)
	s := memstore.New(correlation.Limits{MaxGroups: 4, MaxCalls: 8}, porttest.Policy)
	for _, k := range []string{"g1", "g2"} {
		porttest.Admit(t, s, porttest.Group(k, "p1", 1, porttest.T0), porttest.T0)
	}
	d, err := s.Update(t.Context(), "g2", func(g *correlation.Group) (correlation.Decision, error) {
		return g.Submit(porttest.T0, porttest.Policy, porttest.Submission(*g, "r"), "a")
	})
	is.NoErr(err)
	is.Equal(d.Effect, correlation.EffectDispatch) // Update returns the closure's decision: g2 is claimed
	gw := app.New(app.Config{Correlation: true, Policy: porttest.Policy}, &porttest.Upstream{}, s,
		porttest.NewClock(porttest.T0.Add(time.Second)), &porttest.IDs{}, slog.New(slog.DiscardHandler))
	n, c := gw.Shutdown(t.Context())
	is.Equal(n, 1)                                // one pending group cancelled
	is.Equal(c.ByState[correlation.Cancelled], 1) // it is a tombstone now
	is.Equal(c.ByState[correlation.Inflight], 1)  // the in-flight one is left to its request
	is.Equal(porttest.StateOf(t, s, "g1"), correlation.Cancelled)
}

// sharedStore is a memory store that says it is shared between replicas.
type sharedStore struct{ *memstore.Store }

func (sharedStore) Shared() bool { return true }

func TestShutdownLeavesASharedStoreAlone(t *testing.T) {
	is := is.New(t)
	s := memstore.New(correlation.Limits{MaxGroups: 4, MaxCalls: 8}, porttest.Policy)
	porttest.Admit(t, s, porttest.Group("g1", "p1", 1, porttest.T0), porttest.T0)
	gw := app.New(app.Config{Correlation: true, Policy: porttest.Policy}, &porttest.Upstream{}, sharedStore{s},
		porttest.NewClock(porttest.T0.Add(time.Second)), &porttest.IDs{}, slog.New(slog.DiscardHandler))
	n, c := gw.Shutdown(t.Context())
	is.Equal(n, 0)                              // another replica continues it
	is.Equal(c.ByState[correlation.Pending], 1) // the counts seen last
	is.Equal(porttest.StateOf(t, s, "g1"), correlation.Pending)
}

// outage makes a store's sweeps fail while down is set, and counts them.
type outage struct {
	down   atomic.Bool
	sweeps atomic.Int32
}

// fails counts one sweep and returns the error it fails with, if any.
func (o *outage) fails() error {
	o.sweeps.Add(1)
	if o.down.Load() {
		return errs.New(errs.CorrelationStoreUnavailable)
	}
	return nil
}

type flakyStore struct {
	*memstore.Store
	outage
}

func (f *flakyStore) Sweep(ctx context.Context, now time.Time) (correlation.SweepReport, error) {
	if err := f.fails(); err != nil {
		return correlation.SweepReport{}, err
	}
	return f.Store.Sweep(ctx, now)
}

type flakyAnchors struct {
	*memstore.Anchors
	outage
}

func (f *flakyAnchors) Sweep(ctx context.Context, now time.Time) (conversation.SweepReport, error) {
	if err := f.fails(); err != nil {
		return conversation.SweepReport{}, err
	}
	return f.Anchors.Sweep(ctx, now)
}

// waitFor polls cond until it holds or the bound passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestSweepsApplyTimeAndLogAnOutageOnceEachWay(t *testing.T) {
	is := is.New(t)
	st := &flakyStore{Store: memstore.New(correlation.Limits{MaxGroups: 4, MaxCalls: 8}, porttest.Policy)}
	an := &flakyAnchors{Anchors: memstore.NewAnchors(conversation.Limits{MaxAnchors: 4}, porttest.AnchorPolicy)}
	porttest.Admit(t, st, porttest.Group("g1", "p1", 1, porttest.T0), porttest.T0)
	is.NoErr(an.Record(t.Context(), porttest.Anchor("p1", "h1", porttest.T0), porttest.T0))
	st.down.Store(true)
	an.down.Store(true)
	var logs syncBuffer
	clock := porttest.NewClock(porttest.T0)
	var swept porttest.Observed
	gw := app.New(app.Config{Correlation: true, Policy: porttest.Policy, Observer: &swept}, &porttest.Upstream{}, st, clock, &porttest.IDs{},
		slog.New(slog.NewJSONHandler(&logs, nil))).WithAnchors(an, porttest.AnchorPolicy)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		gw.RunSweeps(ctx, time.Millisecond)
		close(done)
	}()
	waitFor(t, "several failing sweeps", func() bool { return st.sweeps.Load() > 5 && an.sweeps.Load() > 5 })
	clock.Advance(porttest.Policy.PendingTTL + porttest.AnchorPolicy.TTL) // both are overdue now
	st.down.Store(false)
	an.down.Store(false)
	// Each sweep reports the rows it applied to the observer, with their states.
	waitFor(t, "the overdue group to expire", func() bool {
		return swept.Has(ports.Event{Kind: ports.EventSweep, Machine: "correlation", Row: "C09", From: "PENDING", To: "EXPIRED", Count: 1})
	})
	waitFor(t, "the overdue anchor to expire", func() bool {
		return swept.Has(ports.Event{Kind: ports.EventSweep, Machine: "conversation", Row: "A05", From: "ACTIVE", To: "EXPIRED", Count: 1})
	})
	c, err := an.Counts(t.Context())
	is.NoErr(err)
	is.Equal(c.ByState[conversation.Expired], 1) // the sweeper expired the overdue anchor
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunSweeps did not stop")
	}
	is.Equal(porttest.StateOf(t, st, "g1"), correlation.Expired) // the sweeper expired the overdue group
	out := logs.String()
	for _, name := range []string{"correlation", "conversation"} {
		is.Equal(strings.Count(out, `"msg":"`+name+` sweep failed"`), 1) // logged when it starts failing, not every tick
		is.Equal(strings.Count(out, `"msg":"`+name+` sweep recovered"`), 1)
		is.Equal(strings.Count(out, `"msg":"`+name+` sweep"`), 1) // and what it changed, once
	}
	is.True(strings.Contains(out, `"code":"correlation_store_unavailable"`))
}
