package app_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// blockedObserver blocks on its first event until released, then records.
type blockedObserver struct {
	entered chan struct{} // closed when the first event arrived
	release chan struct{}
	once    sync.Once
	porttest.Observed
}

func newBlocked() *blockedObserver {
	return &blockedObserver{entered: make(chan struct{}), release: make(chan struct{})}
}

func (b *blockedObserver) Observe(ctx context.Context, e ports.Event) {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	b.Observed.Observe(ctx, e)
}

// panicking panics on every event, and first tries to change what it was
// given: the evidence's maps.
type panicking struct{}

func (panicking) Observe(_ context.Context, e ports.Event) {
	if ev := e.Exchange.Evidence; ev != nil {
		ev.EventTypes["textChunk"] = -1
		ev.WouldComplete["legacy_done"] = false
	}
	panic("observer bug")
}

func rows(evs []ports.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Machine+":"+e.Row)
	}
	return out
}

// A tool turn and its continuation run to the end while one subscriber is
// blocked and another panics on every event: the answers are the ones a
// gateway without observers gives, and once released the blocked subscriber
// receives every event in order.
func TestASlowOrPanickingObserverChangesNothingAndDelaysNothing(t *testing.T) {
	is := is.New(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	events := app.NewObservers(log)
	slow, good := newBlocked(), &porttest.Observed{}
	events.Subscribe("slow", slow)
	events.Subscribe("broken", panicking{})
	events.Subscribe("good", good)
	t.Cleanup(events.Close)

	run := func(obs ports.Observer) ([]chat.Message, []string) {
		up := &porttest.Upstream{Respond: toolLoop(1)}
		store := memstore.New(correlation.Limits{MaxGroups: 100, MaxCalls: 400, ResponseCacheBytes: 1 << 20}, policy)
		gw := app.New(app.Config{WorkspaceID: "ws", Correlation: true, Policy: policy, Observer: obs}, up, store,
			porttest.NewClock(porttest.T0), &porttest.IDs{}, log)
		history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
		turn, err := gw.Chat(t.Context(), principal, request(history...), nil)
		is.NoErr(err)
		ds, err := drain(t, turn)
		is.NoErr(err)
		msgs := echo(history, ds, "r")
		turn, err = gw.Chat(t.Context(), principal, request(msgs...), nil)
		is.NoErr(err)
		final, err := drain(t, turn)
		is.NoErr(err)
		var text []string
		for _, d := range final {
			text = append(text, d.Text)
		}
		return msgs, text
	}

	msgs, text := run(events)
	<-slow.entered // the slow subscriber holds the first event: both turns ended meanwhile
	is.Equal(len(slow.Events()), 0)
	wantMsgs, wantText := run(nil)
	is.Equal(msgs, wantMsgs) // the same answers as a gateway without observers
	is.Equal(text, wantText)

	close(slow.release)
	is.NoErr(events.Flush(t.Context()))
	got := rows(good.Events())
	is.Equal(got, []string{"correlation:C01", "correlation:C14"}) // the claim and the proven end
	is.Equal(rows(slow.Events()), got)                            // the slow one lost nothing, in order
	is.Equal(events.Stats(), []app.ObserverStats{{Name: "slow"}, {Name: "broken", Panicked: int64(len(got))}, {Name: "good"}})
}

// Observe never waits for a subscriber: the events a full queue cannot take
// are dropped for that subscriber alone, and counted.
func TestAFullQueueDropsAndCountsInsteadOfWaiting(t *testing.T) {
	is := is.New(t)
	events := app.NewObservers(slog.New(slog.NewTextHandler(io.Discard, nil)))
	slow, good := newBlocked(), &porttest.Observed{}
	events.Subscribe("slow", slow)
	events.Subscribe("good", good)
	t.Cleanup(events.Close)
	e := ports.Event{Kind: ports.EventTransition, Machine: "correlation", Row: "C01", Count: 1}
	events.Observe(t.Context(), e)
	<-slow.entered // it holds the first event; its queue is empty
	for range app.ObserverQueue + 5 {
		events.Observe(t.Context(), e) // returns although the slow subscriber is blocked
	}
	is.Equal(events.Stats()[0], app.ObserverStats{Name: "slow", Dropped: 5})
	close(slow.release)
	is.NoErr(events.Flush(t.Context()))
	is.Equal(len(slow.Events()), 1+app.ObserverQueue)
	// The other subscriber is not held back by the slow one: every event is
	// delivered to it or (a burst faster than it) counted as dropped.
	is.Equal(int64(len(good.Events()))+events.Stats()[1].Dropped, int64(1+app.ObserverQueue+5))
}

// Every subscriber gets its own copy of an event's evidence: one that writes
// into it changes nothing for the others or for the emitter.
func TestEverySubscriberGetsItsOwnCopyOfTheEvidence(t *testing.T) {
	is := is.New(t)
	events := app.NewObservers(slog.New(slog.NewTextHandler(io.Discard, nil)))
	good := &porttest.Observed{}
	events.Subscribe("broken", panicking{})
	events.Subscribe("good", good)
	t.Cleanup(events.Close)
	ev := &ports.StreamEvidence{EventTypes: map[string]int{"textChunk": 3}, WouldComplete: map[string]bool{"legacy_done": true}}
	events.Observe(t.Context(), ports.Event{Kind: ports.EventExchange, Exchange: ports.Exchange{Outcome: ports.OutcomeCompleted, Evidence: ev}})
	is.NoErr(events.Flush(t.Context()))
	got := good.Events()[0].Exchange.Evidence
	is.Equal(got.EventTypes, map[string]int{"textChunk": 3}) // untouched by the subscriber before it
	is.Equal(got.WouldComplete, map[string]bool{"legacy_done": true})
	is.True(got != ev)
	is.Equal(ev.EventTypes["textChunk"], 3) // and the emitter's value too
}

// Close delivers what is queued; events observed afterwards go nowhere and
// Observe still returns at once.
func TestCloseDeliversWhatIsQueued(t *testing.T) {
	is := is.New(t)
	events := app.NewObservers(slog.New(slog.NewTextHandler(io.Discard, nil)))
	good := &porttest.Observed{}
	events.Subscribe("good", good)
	for range 10 {
		events.Observe(t.Context(), ports.Event{Kind: ports.EventSweep, Machine: "correlation", Row: "C09", Count: 2})
	}
	events.Close()
	is.Equal(len(good.Events()), 10)
	events.Observe(t.Context(), ports.Event{Kind: ports.EventSweep})
	is.NoErr(events.Flush(t.Context()))
	is.Equal(len(good.Events()), 10)
}

// What emitting one event costs the request's goroutine: one queue send per
// subscriber, no allocation.
func BenchmarkObserve(b *testing.B) {
	events := app.NewObservers(slog.New(slog.DiscardHandler))
	for _, name := range []string{"metrics", "log", "probe"} {
		events.Subscribe(name, ignore{})
	}
	b.Cleanup(events.Close)
	e := ports.Event{Kind: ports.EventTransition, Machine: "correlation", Row: "C01", From: "PENDING", To: "INFLIGHT", Count: 1}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		events.Observe(ctx, e)
	}
}

type ignore struct{}

func (ignore) Observe(context.Context, ports.Event) {}
