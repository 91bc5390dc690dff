package app_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// order records which inline subscriber was handed an event, in the order
// they were called.
type order struct {
	name string
	mu   *sync.Mutex
	log  *[]string
}

func (o order) Observe(_ context.Context, e ports.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	*o.log = append(*o.log, o.name+":"+e.Row)
}

// An inline subscriber has every event when Observe returns — no Flush, no
// wait — and the inline subscribers are called in the order they subscribed;
// one that panics is counted and the ones after it still get the event.
func TestAnInlineSubscriberHasTheEventWhenObserveReturns(t *testing.T) {
	is := is.New(t)
	events := app.NewObservers(slog.New(slog.DiscardHandler))
	var mu sync.Mutex
	var calls []string
	events.SubscribeInline("first", order{"first", &mu, &calls})
	events.SubscribeInline("broken", panicking{})
	events.SubscribeInline("second", order{"second", &mu, &calls})
	t.Cleanup(events.Close)

	for _, row := range []string{"C01", "C14"} {
		events.Observe(t.Context(), ports.Event{Kind: ports.EventTransition, Machine: correlation.MachineName, Row: row, Count: 1})
	}
	mu.Lock()
	is.Equal(calls, []string{"first:C01", "second:C01", "first:C14", "second:C14"}) // there at once, in order
	mu.Unlock()
	is.Equal(events.Stats(), []app.ObserverStats{{Name: "first"}, {Name: "broken", Panicked: 2}, {Name: "second"}})
}

// An inline subscriber gets its own copy of the evidence too: the panicking
// one before it writes into its copy, and neither the next nor the emitter
// sees that.
func TestAnInlineSubscriberGetsItsOwnCopyOfTheEvidence(t *testing.T) {
	is := is.New(t)
	events := app.NewObservers(slog.New(slog.DiscardHandler))
	good := &porttest.Observed{}
	events.SubscribeInline("broken", panicking{})
	events.SubscribeInline("good", good)
	t.Cleanup(events.Close)
	ev := &ports.StreamEvidence{EventTypes: map[string]int{"textChunk": 3}, WouldComplete: map[string]bool{"legacy_done": true}}
	events.Observe(t.Context(), ports.Event{Kind: ports.EventExchange, Exchange: ports.Exchange{Outcome: ports.OutcomeCompleted, Evidence: ev}})
	got := good.Events()[0].Exchange.Evidence
	is.Equal(got.EventTypes, map[string]int{"textChunk": 3})
	is.Equal(got.WouldComplete, map[string]bool{"legacy_done": true})
	is.True(got != ev)
	is.Equal(ev.EventTypes["textChunk"], 3)
}

// After Close an inline subscriber is handed nothing, like a queued one.
func TestAfterCloseAnInlineSubscriberGetsNothing(t *testing.T) {
	is := is.New(t)
	events := app.NewObservers(slog.New(slog.DiscardHandler))
	good := &porttest.Observed{}
	sub := events.SubscribeInline("good", good)
	events.Observe(t.Context(), ports.Event{Kind: ports.EventSweep, Count: 1})
	events.Close()
	events.Observe(t.Context(), ports.Event{Kind: ports.EventSweep, Count: 2})
	is.Equal(len(good.Events()), 1)
	is.NoErr(sub.Flush(t.Context())) // nothing is ever queued for it
}

// picky is a queued subscriber that wants only correlation rows and blocks
// on its first one until released.
type picky struct{ *blockedObserver }

func (picky) Wants(_ context.Context, e ports.Event) bool {
	return e.Machine == correlation.MachineName
}

// A queued subscriber that filters is queued only what it wants: while it is
// stuck, a flood of events it does not want neither fills its queue (nothing
// it wants is dropped) nor reaches it.
func TestAQueuedFilterQueuesOnlyWhatItWants(t *testing.T) {
	is := is.New(t)
	events := app.NewObservers(slog.New(slog.DiscardHandler))
	p := picky{newBlocked()}
	events.Subscribe("picky", p)
	t.Cleanup(events.Close)
	want := ports.Event{Kind: ports.EventTransition, Machine: correlation.MachineName, Row: "C01", Count: 1}
	events.Observe(t.Context(), want)
	<-p.entered // stuck on the first
	for range app.ObserverQueue + 5 {
		events.Observe(t.Context(), ports.Event{Kind: ports.EventTransition, Machine: conversation.MachineName, Row: "A01", Count: 1})
	}
	events.Observe(t.Context(), want)
	close(p.release)
	is.NoErr(events.Flush(t.Context()))
	is.Equal(rows(p.Events()), []string{"correlation:C01", "correlation:C01"}) // both, and nothing else
	is.Equal(events.Stats(), []app.ObserverStats{{Name: "picky"}})             // nothing dropped
}

// The log's filter is its level: at info it wants the correlation rows and
// the anchor rows it writes at info, not the lookups it writes at debug (most
// requests observe nothing else, so the log's goroutine sleeps through them);
// at debug it wants those too. What it writes is unchanged.
func TestTheLogObserverWantsWhatItsLevelWrites(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	fresh := ports.Event{Kind: ports.EventTransition, Machine: conversation.MachineName, Row: "A01", Effect: string(conversation.EffectFresh)}
	settled := ports.Event{Kind: ports.EventTransition, Machine: conversation.MachineName, Row: "A08", Effect: string(conversation.EffectTransition)}
	corr := ports.Event{Kind: ports.EventTransition, Machine: correlation.MachineName, Row: "C01"}
	exchange := ports.Event{Kind: ports.EventExchange}
	for _, c := range []struct {
		level                          slog.Level
		fresh, settled, corr, exchange bool
	}{
		{slog.LevelInfo, false, true, true, false},
		{slog.LevelDebug, true, true, true, false},
		{slog.LevelWarn, false, false, false, false},
	} {
		var buf bytes.Buffer
		l := app.LogObserver{Log: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: c.level}))}
		is.Equal([]bool{l.Wants(ctx, fresh), l.Wants(ctx, settled), l.Wants(ctx, corr), l.Wants(ctx, exchange)},
			[]bool{c.fresh, c.settled, c.corr, c.exchange})
		for _, e := range []ports.Event{fresh, settled, corr, exchange} {
			l.Observe(ctx, e)
		}
		// What it writes is what it wanted: one line per wanted event.
		n := 0
		for _, w := range []bool{c.fresh, c.settled, c.corr, c.exchange} {
			if w {
				n++
			}
		}
		is.Equal(strings.Count(buf.String(), "\n"), n)
	}
}

// An inline subscriber is called inside Observe: while it holds the event,
// Observe has not returned.
func TestAnInlineSubscriberIsCalledInsideObserve(t *testing.T) {
	events := app.NewObservers(slog.New(slog.DiscardHandler))
	held := newBlocked()
	events.SubscribeInline("held", held)
	t.Cleanup(events.Close)
	returned := make(chan struct{})
	go func() {
		events.Observe(t.Context(), ports.Event{Kind: ports.EventSweep, Count: 1})
		close(returned)
	}()
	<-held.entered
	select {
	case <-returned:
		close(held.release)
		t.Fatal("Observe returned while the inline subscriber still held the event")
	case <-time.After(50 * time.Millisecond):
	}
	close(held.release)
	<-returned
	if n := len(held.Events()); n != 1 {
		t.Fatalf("the subscriber recorded %d events, want 1", n)
	}
}
