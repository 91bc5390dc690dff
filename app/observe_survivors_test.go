package app_test

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// The observer rules a mutation run showed no test held (issue 35).

// gated records each event as its delivery starts, says so on entered, and
// returns only once released: the test knows how many events the
// subscriber has taken from its queue.
type gated struct {
	mu      sync.Mutex
	got     []int
	entered chan struct{}
	release chan struct{}
}

func (g *gated) Observe(_ context.Context, e ports.Event) {
	g.mu.Lock()
	g.got = append(g.got, e.Count)
	g.mu.Unlock()
	g.entered <- struct{}{}
	<-g.release
}

func (g *gated) seen() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.got)
}

// A subscriber's queue, however its events arrive and are taken (the ring
// wraps, grows while wrapped, empties and fills again), hands it every
// event once, in the order observed.
func TestAWrappingQueueKeepsOrderAndNeverDuplicates(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g := &gated{entered: make(chan struct{}, 4*app.ObserverQueue), release: make(chan struct{})}
		events := app.NewObservers(slog.New(slog.DiscardHandler))
		events.Subscribe("gated", g)
		var unblock sync.Once
		releaseAll := func() { unblock.Do(func() { close(g.release) }) }
		defer events.Close()
		defer releaseAll() // a failed check leaves no subscriber waiting
		entered := func() {
			select {
			case <-g.entered:
			case <-time.After(10 * time.Second):
				rt.Fatalf("the subscriber did not take the next event")
			}
		}
		next, delivering, waiting := 1, false, 0
		put := func(k int) {
			for range k {
				events.Observe(t.Context(), ports.Event{Kind: ports.EventSweep, Count: next})
				next++
				if delivering {
					waiting++
					continue
				}
				entered() // an idle subscriber takes it at once
				delivering = true
			}
		}
		release := func(k int) {
			for ; k > 0 && delivering; k-- {
				g.release <- struct{}{}
				if waiting == 0 {
					delivering = false
					continue
				}
				entered() // it takes the next waiting event
				waiting--
			}
		}
		for range rapid.IntRange(1, 30).Draw(rt, "steps") {
			if rapid.Bool().Draw(rt, "put") {
				put(rapid.IntRange(1, 20).Draw(rt, "n"))
			} else {
				release(rapid.IntRange(1, 20).Draw(rt, "n"))
			}
		}
		releaseAll()
		if err := events.Flush(t.Context()); err != nil {
			rt.Fatalf("flush: %v", err)
		}
		want := make([]int, 0, next-1)
		for i := 1; i < next; i++ {
			want = append(want, i)
		}
		if got := g.seen(); !slices.Equal(got, want) {
			rt.Fatalf("delivered %v, want %v", got, want)
		}
	})
}

// A Flush whose context ends before the subscribers took its barrier
// reports the context's error, even when only a later subscriber is stuck;
// once the subscriber moves on, Flush succeeds.
func TestAFlushWhoseContextEndsFirstReportsFailure(t *testing.T) {
	is := is.New(t)
	events := app.NewObservers(slog.New(slog.DiscardHandler))
	good, slow := &porttest.Observed{}, newBlocked()
	events.Subscribe("good", good)
	sub := events.Subscribe("slow", slow)
	t.Cleanup(events.Close)
	events.Observe(t.Context(), ports.Event{Kind: ports.EventSweep, Count: 1})
	<-slow.entered

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	is.True(errors.Is(events.Flush(cancelled), context.Canceled))
	is.True(errors.Is(sub.Flush(cancelled), context.Canceled))
	short, stop := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer stop()
	is.True(errors.Is(events.Flush(short), context.DeadlineExceeded)) // the barrier never came: not a success

	close(slow.release)
	is.NoErr(events.Flush(t.Context()))
	is.Equal(len(slow.Events()), 1)
}

// A sweep reports the rows it applied, each with its count, and nothing for
// the rows (or the ticks) that applied nothing.
func TestASweepReportsOnlyTheRowsItApplied(t *testing.T) {
	is := is.New(t)
	st := &flakyStore{Store: memstore.New(correlation.Limits{MaxGroups: 4, MaxCalls: 8}, porttest.Policy)}
	an := &flakyAnchors{Anchors: memstore.NewAnchors(conversation.Limits{MaxAnchors: 4}, porttest.AnchorPolicy)}
	porttest.Admit(t, st, porttest.Group("g1", "p1", 1, porttest.T0), porttest.T0)
	is.NoErr(an.Record(t.Context(), porttest.Anchor("p1", "h1", porttest.T0), porttest.T0))
	clock := porttest.NewClock(porttest.T0.Add(porttest.Policy.PendingTTL + porttest.AnchorPolicy.TTL)) // both overdue
	var swept porttest.Observed
	gw := app.New(app.Config{Correlation: true, Policy: porttest.Policy, Observer: &swept}, &porttest.Upstream{}, st, clock, &porttest.IDs{},
		slog.New(slog.DiscardHandler)).WithAnchors(an, porttest.AnchorPolicy)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		gw.RunSweeps(ctx, time.Millisecond)
		close(done)
	}()
	// Many sweeps after the first: all but one per store apply nothing.
	waitFor(t, "several sweeps", func() bool { return st.sweeps.Load() > 10 && an.sweeps.Load() > 10 })
	cancel()
	<-done
	got := swept.Events()
	for _, e := range got {
		if e.Count < 1 {
			t.Fatalf("%d events; row %s %s reported with count %d", len(got), e.Machine, e.Row, e.Count)
		}
	}
	slices.SortFunc(got, func(a, b ports.Event) int { return cmp.Compare(a.Machine, b.Machine) })
	is.Equal(got, []ports.Event{
		{Kind: ports.EventSweep, Machine: "conversation", Row: "A05", From: "ACTIVE", To: "EXPIRED", Count: 1},
		{Kind: ports.EventSweep, Machine: "correlation", Row: "C09", From: "PENDING", To: "EXPIRED", Count: 1},
	})
}

// A lookup that applies a time row first (the anchor expired) reports that
// row and then its own, each once.
func TestAnAnchorLookupReportsEachAppliedRowOnce(t *testing.T) {
	is := is.New(t)
	var seen porttest.Observed
	r := newConvRig(t, nil)
	r.gw = app.New(app.Config{WorkspaceID: "ws", Correlation: true, Policy: policy, Observer: &seen}, r.up, r.store, r.clock, &porttest.IDs{},
		slog.New(slog.DiscardHandler)).WithAnchors(r.anchors, anchorPolicy)
	a := r.turn(t, textRequest(user("one")))
	before := len(seen.Events())
	r.clock.Advance(anchorPolicy.TTL)
	r.turn(t, textRequest(user("one"), assistant(a), user("two")))
	is.Equal(r.last().ConversationID, "") // expired: fresh

	var applied []ports.Event
	for _, e := range seen.Events()[before:] {
		if e.Machine == conversation.MachineName {
			applied = append(applied, e)
		}
	}
	is.Equal(len(applied), 2) // the time row, then the lookup's own
	is.Equal(applied[0].Row, "A05")
	is.Equal(applied[0].From, "ACTIVE")
	is.Equal(applied[0].To, "EXPIRED")
	is.True(applied[1].Row != "A05")
	is.Equal(applied[1].From, "EXPIRED") // the lookup met the anchor the time row left
	for _, e := range applied {
		is.Equal(e.Count, 1)
	}
}
