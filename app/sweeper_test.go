package app_test

import (
	"context"
	"errors"
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

// admitGroup stores a PENDING group through the port, as a tool turn does.
func admitGroup(t *testing.T, s ports.CorrelationStore, g correlation.Group) {
	t.Helper()
	r, err := s.Reserve(t.Context(), len(g.Calls), g.IssuedAt)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Admit(t.Context(), r, g); err != nil {
		t.Fatal(err)
	}
}

func groupState(t *testing.T, s ports.CorrelationStore, key string) correlation.State {
	t.Helper()
	var st correlation.State
	errRead := errors.New("read only")
	err := s.Update(t.Context(), key, func(g *correlation.Group) error {
		st = g.State
		return errRead
	})
	if errs.Has(err, errs.UnknownToolCall) {
		return correlation.Removed
	}
	if err != errRead {
		t.Fatalf("read state: %v", err)
	}
	return st
}

func TestShutdownCancelsPendingGroupsOfAPrivateStoreOnly(t *testing.T) {
	is := is.New(t)
	s := memstore.New(correlation.Limits{MaxGroups: 4, MaxCalls: 8}, porttest.Policy)
	for _, k := range []string{"g1", "g2"} {
		admitGroup(t, s, porttest.Group(k, "p1", 1, porttest.T0))
	}
	is.NoErr(s.Update(t.Context(), "g2", func(g *correlation.Group) error {
		_, err := g.Submit(porttest.T0, porttest.Policy, porttest.Submission(*g, "r"), "a")
		return err
	}))
	gw := app.New(app.Config{Correlation: true, Policy: porttest.Policy}, &porttest.Upstream{}, s,
		porttest.NewClock(porttest.T0.Add(time.Second)), &porttest.IDs{}, slog.New(slog.DiscardHandler))
	n, c := gw.Shutdown(t.Context())
	is.Equal(n, 1)                                // one pending group cancelled
	is.Equal(c.ByState[correlation.Cancelled], 1) // it is a tombstone now
	is.Equal(c.ByState[correlation.Inflight], 1)  // the in-flight one is left to its request
	is.Equal(groupState(t, s, "g1"), correlation.Cancelled)
}

// sharedStore is a memory store that says it is shared between replicas.
type sharedStore struct{ *memstore.Store }

func (sharedStore) Shared() bool { return true }

func TestShutdownLeavesASharedStoreAlone(t *testing.T) {
	is := is.New(t)
	s := memstore.New(correlation.Limits{MaxGroups: 4, MaxCalls: 8}, porttest.Policy)
	admitGroup(t, s, porttest.Group("g1", "p1", 1, porttest.T0))
	gw := app.New(app.Config{Correlation: true, Policy: porttest.Policy}, &porttest.Upstream{}, sharedStore{s},
		porttest.NewClock(porttest.T0.Add(time.Second)), &porttest.IDs{}, slog.New(slog.DiscardHandler))
	n, c := gw.Shutdown(t.Context())
	is.Equal(n, 0)                              // another replica continues it
	is.Equal(c.ByState[correlation.Pending], 1) // the counts seen last
	is.Equal(groupState(t, s, "g1"), correlation.Pending)
}

// flakyStore fails its sweeps while down is set.
type flakyStore struct {
	*memstore.Store
	down   atomic.Bool
	sweeps atomic.Int32
}

func (f *flakyStore) Sweep(ctx context.Context, now time.Time) (correlation.SweepReport, error) {
	f.sweeps.Add(1)
	if f.down.Load() {
		return correlation.SweepReport{}, errs.New(errs.CorrelationStoreUnavailable)
	}
	return f.Store.Sweep(ctx, now)
}

// flakyAnchors fails its sweeps while down is set.
type flakyAnchors struct {
	*memstore.Anchors
	down   atomic.Bool
	sweeps atomic.Int32
}

func (f *flakyAnchors) Sweep(ctx context.Context, now time.Time) (conversation.SweepReport, error) {
	f.sweeps.Add(1)
	if f.down.Load() {
		return conversation.SweepReport{}, errs.New(errs.CorrelationStoreUnavailable)
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
	admitGroup(t, st, porttest.Group("g1", "p1", 1, porttest.T0))
	is.NoErr(an.Record(t.Context(), porttest.Anchor("p1", "h1", porttest.T0), porttest.T0))
	st.down.Store(true)
	an.down.Store(true)
	var logs syncBuffer
	clock := porttest.NewClock(porttest.T0)
	gw := app.New(app.Config{Correlation: true, Policy: porttest.Policy}, &porttest.Upstream{}, st, clock, &porttest.IDs{},
		slog.New(slog.NewJSONHandler(&logs, nil))).WithAnchors(an, porttest.AnchorPolicy)
	var seen atomic.Int32
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		gw.RunSweeps(ctx, time.Millisecond, func(rep correlation.SweepReport) { seen.Add(int32(rep.Expired)) })
		close(done)
	}()
	waitFor(t, "several failing sweeps", func() bool { return st.sweeps.Load() > 5 && an.sweeps.Load() > 5 })
	clock.Advance(porttest.Policy.PendingTTL + porttest.AnchorPolicy.TTL) // both are overdue now
	st.down.Store(false)
	an.down.Store(false)
	waitFor(t, "the overdue group to expire", func() bool { return seen.Load() == 1 })
	waitFor(t, "the overdue anchor to expire", func() bool {
		c, err := an.Counts(t.Context())
		return err == nil && c.ByState[conversation.Expired] == 1
	})
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunSweeps did not stop")
	}
	is.Equal(groupState(t, st, "g1"), correlation.Expired) // the sweeper expired the overdue group
	out := logs.String()
	for _, name := range []string{"correlation", "conversation"} {
		is.Equal(strings.Count(out, `"msg":"`+name+` sweep failed"`), 1) // logged when it starts failing, not every tick
		is.Equal(strings.Count(out, `"msg":"`+name+` sweep recovered"`), 1)
		is.Equal(strings.Count(out, `"msg":"`+name+` sweep"`), 1) // and what it changed, once
	}
	is.True(strings.Contains(out, `"code":"correlation_store_unavailable"`))
}
