package app

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/fsm"
	"github.com/pmgate/pmgate/ports"
)

// ObserverQueue is how many events a subscriber may fall behind before the
// next ones are dropped (and counted) instead of waiting for it.
const ObserverQueue = 1024

// observerCloseBound bounds how long Close waits for the subscribers to take
// what is queued: a stuck subscriber must not hold the process's exit.
const observerCloseBound = 2 * time.Second

// Observers is the gateway's one ports.Observer: a fan-out to the subscribers
// (metrics, the control page's live list, the logs, the probe). Observe never
// fails and never lets a subscriber change a request's outcome. A subscriber
// is one of two kinds:
//
//   - inline (SubscribeInline): handed each event in the observing goroutine
//     before Observe returns, in subscription order. For observers that only
//     update memory (counters, a short list under a mutex) and never block:
//     the monitor, the probe. What a request observed is then there as soon
//     as the request's answer is, so a scrape or a report needs no flush, and
//     no goroutine is woken per request (on a gateway idle between agent
//     turns, that wake-up is paid on the request's path).
//   - queued (Subscribe): a bounded queue per subscriber and a goroutine that
//     delivers from it in order; when the queue is full the event is dropped
//     for that subscriber (and counted). For observers that write or may
//     block — the log (a write to a pipe or a file), anything doing I/O — so
//     that a slow one can neither delay a request nor change its outcome; it
//     only loses events, which Stats counts. A queued observer that
//     implements EventFilter is asked in the observing goroutine whether it
//     wants the event, so one it ignores costs no queueing and no wake-up.
//
// A panicking subscriber of either kind is recovered (the event is lost for
// it, and counted). Each subscriber receives its own copy of an event
// (Exchange.Evidence and its maps included). Observers is safe for
// concurrent use; an inline subscriber is called from many goroutines at
// once.
type Observers struct {
	log    *slog.Logger
	subs   atomic.Pointer[[]*Subscription] // copy on write; read by Observe without a lock
	mu     sync.Mutex                      // serializes Subscribe and Close
	done   chan struct{}
	closed atomic.Bool // done is closed: Observe drops what it is given
	wg     sync.WaitGroup
}

// EventFilter is implemented by an observer that ignores most events: Wants
// reports whether it would do anything with e (observed with ctx). For a
// queued subscriber it is asked in the observing goroutine, before the event
// is queued. It must be cheap and must not block.
type EventFilter interface {
	Wants(ctx context.Context, e ports.Event) bool
}

// Subscription is one subscriber with its queue and counters.
//
// The queue is a ring that grows as far as the subscriber ever fell behind
// (at most ObserverQueue events), not a channel of ObserverQueue slots
// allocated up front: three subscribers' 1024 slots of 240 bytes were about
// 0.7 MiB a gateway held from its start however idle it was.
type Subscription struct {
	o                 *Observers
	name              string
	obs               ports.Observer
	inline            bool        // delivered in the observing goroutine; no queue
	filter            EventFilter // nil: every event is queued
	mu                sync.Mutex
	ring              []queued // ring[head], … ring[head+n-1] (mod len) wait, in order
	head, n           int
	behind            int           // events waiting (barriers excluded)
	wake              chan struct{} // capacity 1: something waits
	dropped, panicked atomic.Int64
}

// put queues q, unless it is an event and ObserverQueue events already
// wait; it reports whether it did.
func (s *Subscription) put(q queued) bool {
	s.mu.Lock()
	if q.barrier == nil {
		if s.behind >= ObserverQueue {
			s.mu.Unlock()
			return false
		}
		s.behind++
	}
	if s.n == len(s.ring) {
		grown := make([]queued, max(8, 2*len(s.ring)))
		for i := range s.n {
			grown[i] = s.ring[(s.head+i)%len(s.ring)]
		}
		s.ring, s.head = grown, 0
	}
	s.ring[(s.head+s.n)%len(s.ring)] = q
	s.n++
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default: // already woken
	}
	return true
}

// pop takes the oldest waiting entry; an event stops counting as behind
// when its delivery starts, as a channel's slot frees on receive.
func (s *Subscription) pop() (queued, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		return queued{}, false
	}
	q := s.ring[s.head]
	s.ring[s.head] = queued{} // the ring keeps no context or event it delivered
	s.head, s.n = (s.head+1)%len(s.ring), s.n-1
	if q.barrier == nil {
		s.behind--
	}
	return q, true
}

// queued is one event waiting for a subscriber, or a Flush barrier.
type queued struct {
	ctx     context.Context
	ev      ports.Event
	barrier chan struct{} // non-nil: closed when every earlier event was delivered
}

// ObserverStats counts what one subscriber lost.
type ObserverStats struct {
	Name     string
	Dropped  int64 // events that found its queue full
	Panicked int64 // deliveries that panicked (the event is lost, the subscriber keeps receiving)
}

var _ ports.Observer = (*Observers)(nil)

// NewObservers returns a fan-out without subscribers; log receives the
// panics of subscribers and the first drop of each.
func NewObservers(log *slog.Logger) *Observers {
	o := &Observers{log: log, done: make(chan struct{})}
	o.subs.Store(&[]*Subscription{})
	return o
}

// Subscribe adds a queued observer under a name (a metric label: a short
// constant) and starts delivering to it, from a goroutine of its own, every
// event observed from now on. Subscribing after Close is mis-wiring and
// panics.
func (o *Observers) Subscribe(name string, obs ports.Observer) *Subscription {
	s := o.add(&Subscription{o: o, name: name, obs: obs, wake: make(chan struct{}, 1)})
	if f, ok := obs.(EventFilter); ok {
		s.filter = f
	}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		o.run(s)
	}()
	return s
}

// SubscribeInline adds an inline observer under a name: every event observed
// from now on is handed to it in the observing goroutine, before Observe
// returns. obs must be safe for concurrent use and must never block.
// Subscribing after Close is mis-wiring and panics.
func (o *Observers) SubscribeInline(name string, obs ports.Observer) *Subscription {
	return o.add(&Subscription{o: o, name: name, obs: obs, inline: true})
}

// add appends s to the subscribers.
func (o *Observers) add(s *Subscription) *Subscription {
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case <-o.done:
		panic("app: Subscribe after Close")
	default:
	}
	subs := append(append([]*Subscription(nil), *o.subs.Load()...), s)
	o.subs.Store(&subs)
	return s
}

// Observe implements ports.Observer: in subscription order it hands e to
// each inline subscriber and queues it for each queued one that wants it,
// and returns.
func (o *Observers) Observe(ctx context.Context, e ports.Event) {
	if o.closed.Load() {
		return
	}
	for _, s := range *o.subs.Load() {
		if s.inline {
			o.deliver(s, queued{ctx: ctx, ev: e})
			continue
		}
		if s.filter != nil && !s.filter.Wants(ctx, e) {
			continue
		}
		if !s.put(queued{ctx: ctx, ev: e}) {
			if s.dropped.Add(1) == 1 {
				o.log.Warn("observer falls behind: events dropped", "observer", s.name, "queue", ObserverQueue)
			}
		}
	}
}

// Flush waits until every subscriber has been handed every event observed
// before the call, or until ctx ends (it then returns ctx's error).
func (o *Observers) Flush(ctx context.Context) error {
	for _, s := range *o.subs.Load() {
		if err := s.Flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Flush waits until this subscriber has been handed every event observed
// before the call, or until ctx ends (it then returns ctx's error); after
// Close it returns at once, and so it does for an inline subscriber, which
// has every event before Observe returns.
func (s *Subscription) Flush(ctx context.Context) error {
	if s.inline {
		return nil
	}
	b := make(chan struct{})
	select {
	case <-s.o.done:
		return nil
	default:
	}
	s.put(queued{barrier: b}) // a barrier is never refused
	select {
	case <-b:
		return nil
	case <-s.o.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close delivers what is queued and stops the subscribers' goroutines,
// waiting for them at most a few seconds. Events observed after Close are
// dropped.
func (o *Observers) Close() {
	o.mu.Lock()
	select {
	case <-o.done:
	default:
		o.closed.Store(true)
		close(o.done)
	}
	o.mu.Unlock()
	stopped := make(chan struct{})
	go func() {
		o.wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(observerCloseBound):
		o.log.Warn("an observer did not stop at shutdown")
	}
}

// Stats returns the losses of every subscriber, in subscription order.
func (o *Observers) Stats() []ObserverStats {
	subs := *o.subs.Load()
	out := make([]ObserverStats, len(subs))
	for i, s := range subs {
		out[i] = ObserverStats{Name: s.name, Dropped: s.dropped.Load(), Panicked: s.panicked.Load()}
	}
	return out
}

// run delivers one subscriber's events until Close, then what is left.
func (o *Observers) run(s *Subscription) {
	for {
		select {
		case <-s.wake:
			o.deliverAll(s)
		case <-o.done:
			o.deliverAll(s)
			return
		}
	}
}

// deliverAll delivers what waits, in order, until nothing does.
func (o *Observers) deliverAll(s *Subscription) {
	for {
		q, ok := s.pop()
		if !ok {
			return
		}
		o.deliver(s, q)
	}
}

func (o *Observers) deliver(s *Subscription, q queued) {
	if q.barrier != nil {
		close(q.barrier)
		return
	}
	defer func() {
		if r := recover(); r != nil {
			s.panicked.Add(1)
			o.log.Error("observer panicked; the event is lost", "observer", s.name)
		}
	}()
	e := q.ev
	if ev := e.Exchange.Evidence; ev != nil {
		cp := *ev
		cp.EventTypes, cp.WouldComplete = maps.Clone(ev.EventTypes), maps.Clone(ev.WouldComplete)
		e.Exchange.Evidence = &cp
	}
	s.obs.Observe(q.ctx, e)
}

// noObserver is the observer of a gateway wired without one.
type noObserver struct{}

func (noObserver) Observe(context.Context, ports.Event) {}

// The rows of the machines, for the states of a row known by id (sweeps and
// the time row a lookup applied first).
var (
	correlationRows  = correlation.Table().Rows
	conversationRows = conversation.Table().Rows
)

// observeAnchor reports the rows of the anchor machine one decision applied:
// the time row applied first by the same lookup (Via), then its own.
func (g *Gateway) observeAnchor(ctx context.Context, p Principal, d conversation.Decision) {
	if d.Via != "" {
		for _, r := range conversationRows {
			if r.ID == d.Via {
				g.obs.Observe(ctx, ports.Event{Kind: ports.EventTransition, Machine: conversation.MachineName, Row: r.ID,
					From: r.From, To: r.To, Effect: string(conversation.EffectTransition), Count: 1, Slot: p.Slot})
			}
		}
	}
	g.obs.Observe(ctx, ports.Event{Kind: ports.EventTransition, Machine: conversation.MachineName, Row: d.Row,
		From: string(d.From), To: string(d.To), Effect: string(d.Effect), Code: string(d.Reason), Count: 1, Slot: p.Slot})
}

// observeSweep reports the rows a sweep applied, by row id, in table order.
func (g *Gateway) observeSweep(ctx context.Context, machine string, rows []fsm.Row, counts map[string]int) {
	for _, r := range rows {
		if n := counts[r.ID]; n > 0 {
			g.obs.Observe(ctx, ports.Event{Kind: ports.EventSweep, Machine: machine, Row: r.ID, From: r.From, To: r.To, Count: n})
		}
	}
}

// LogObserver writes the transitions requests applied to the process log,
// with the request's context (so that the logger attaches its request id):
// a row of the group machine, and a settled anchor claim, at info; the
// anchor lookups, which the turn reports itself (the access line's
// conversation group, see logConversation), at debug. Sweeps are logged by the sweeper.
type LogObserver struct{ Log *slog.Logger }

// Observe implements ports.Observer.
func (l LogObserver) Observe(ctx context.Context, e ports.Event) {
	if e.Kind != ports.EventTransition {
		return
	}
	switch e.Machine {
	case correlation.MachineName:
		l.Log.InfoContext(ctx, "correlation", "row", e.Row, "from", e.From, "to", e.To,
			"effect", e.Effect, "code", e.Code, "principal_slot", e.Slot)
	case conversation.MachineName:
		l.Log.Log(ctx, anchorLevel(e), "conversation anchor", "row", e.Row, "from", e.From, "to", e.To, "principal_slot", e.Slot)
	}
}

// Wants implements EventFilter: a transition the log's level lets through.
// Most requests observe only an anchor lookup (debug) and their exchange, so
// at the default level the log's goroutine is not woken for them.
func (l LogObserver) Wants(ctx context.Context, e ports.Event) bool {
	if e.Kind != ports.EventTransition {
		return false
	}
	switch e.Machine {
	case correlation.MachineName:
		return l.Log.Enabled(ctx, slog.LevelInfo)
	case conversation.MachineName:
		return l.Log.Enabled(ctx, anchorLevel(e))
	}
	return false
}

// anchorLevel is the level of an anchor row's line: debug for the lookups
// the access line reports already (fresh, continue), info for the rest.
func anchorLevel(e ports.Event) slog.Level {
	if e.Effect == string(conversation.EffectFresh) || e.Effect == string(conversation.EffectContinue) {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}
