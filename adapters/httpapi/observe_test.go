package httpapi_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/adapters/ops"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// stuckObserver blocks on every event until released.
type stuckObserver struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	n       int
}

func (s *stuckObserver) Observe(context.Context, ports.Event) {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
}

type panickingObserver struct{}

func (panickingObserver) Observe(context.Context, ports.Event) { panic("observer bug") }

// Two requests, the second continuing the first's conversation, are answered
// in full while one subscriber of the gateway's events is stuck and another
// panics on every event; afterwards /metrics counts the anchor machine's rows
// and the panics.
func TestAnswersArriveWhileAnObserverIsStuckAndTheAnchorRowsReachMetrics(t *testing.T) {
	is := is.New(t)
	log := slog.New(slog.DiscardHandler)
	events := app.NewObservers(log)
	monitor := ops.NewMonitor(ops.MonitorConfig{Version: "test", Strategy: "access_token", Events: events})
	stuck := &stuckObserver{entered: make(chan struct{}), release: make(chan struct{})}
	events.Subscribe("stuck", stuck)
	events.Subscribe("broken", panickingObserver{})
	released := false
	t.Cleanup(func() {
		if !released {
			close(stuck.release)
		}
		events.Close()
	})
	up := &porttest.Upstream{Respond: func(ports.UpstreamRequest) porttest.Script {
		return porttest.Script{Events: porttest.Text("conv-1", "ok")}
	}}
	anchorPolicy := conversation.Policy{TTL: time.Hour, ClaimTTL: time.Minute, TerminalTTL: time.Hour}
	policy := correlation.Policy{PendingTTL: time.Hour, InflightTTL: time.Minute, TerminalTTL: time.Hour}
	gw := app.New(app.Config{WorkspaceID: "ws", Correlation: true, Policy: policy, Observer: events}, up,
		memstore.New(correlation.Limits{MaxGroups: 10, MaxCalls: 10}, policy), porttest.NewClock(porttest.T0), &porttest.IDs{}, log).
		WithAnchors(memstore.NewAnchors(conversation.Limits{MaxAnchors: 10}, anchorPolicy), anchorPolicy)
	h, _ := newServer(t, gw, withMonitor(monitor))

	first := post(h, withMessages(`[{"role":"user","content":"hi"}]`))
	is.Equal(first.Code, 200)
	second := post(h, withMessages(`[{"role":"user","content":"hi"},{"role":"assistant","content":"ok"},{"role":"user","content":"more"}]`))
	is.Equal(second.Code, 200) // answered in full
	is.True(strings.Contains(second.Body.String(), `"content":"ok"`))
	is.Equal(up.Requests()[1].ConversationID, "conv-1") // the second continued the conversation: rows A01, A08
	<-stuck.entered
	stuck.mu.Lock()
	is.Equal(stuck.n, 0) // ... while the stuck subscriber still holds the first event
	stuck.mu.Unlock()

	close(stuck.release)
	released = true
	is.NoErr(events.Flush(t.Context())) // every subscriber has had every event (a scrape waits for the monitor's only)
	m := get(h, "/metrics", "Authorization", "Bearer "+apiKey)
	is.Equal(m.Code, 200)
	body := m.Body.String()
	for _, line := range []string{
		`pmgate_conversation_transitions_total{from="ACTIVE",row="A01",to="CLAIMED"} 1`,
		`pmgate_conversation_transitions_total{from="CLAIMED",row="A08",to="ADVANCED"} 1`,
		`pmgate_observer_panics_total{observer="broken"} 2`,
		`pmgate_observer_events_dropped_total{observer="stuck"} 0`,
		`pmgate_observer_events_dropped_total{observer="metrics"} 0`,
	} {
		is.True(strings.Contains(body, line)) // each series is on /metrics
	}
}

// The monitor counts in the goroutine that observes: once a request has been
// answered, its rows are in the registry, with nothing flushed and nothing
// waited for — a scrape needs no flush of the gateway's events first — even
// while a queued subscriber is stuck on the same events.
func TestTheRowsAreCountedWhenTheAnswerIsWritten(t *testing.T) {
	is := is.New(t)
	log := slog.New(slog.DiscardHandler)
	events := app.NewObservers(log)
	monitor := ops.NewMonitor(ops.MonitorConfig{Version: "test", Strategy: "access_token", Events: events})
	stuck := &stuckObserver{entered: make(chan struct{}), release: make(chan struct{})}
	events.Subscribe("stuck", stuck)
	t.Cleanup(func() {
		close(stuck.release)
		events.Close()
	})
	up := &porttest.Upstream{Respond: func(ports.UpstreamRequest) porttest.Script {
		return porttest.Script{Events: porttest.Text("conv-1", "ok")}
	}}
	anchorPolicy := conversation.Policy{TTL: time.Hour, ClaimTTL: time.Minute, TerminalTTL: time.Hour}
	policy := correlation.Policy{PendingTTL: time.Hour, InflightTTL: time.Minute, TerminalTTL: time.Hour}
	gw := app.New(app.Config{WorkspaceID: "ws", Correlation: true, Policy: policy, Observer: events}, up,
		memstore.New(correlation.Limits{MaxGroups: 10, MaxCalls: 10}, policy), porttest.NewClock(porttest.T0), &porttest.IDs{}, log).
		WithAnchors(memstore.NewAnchors(conversation.Limits{MaxAnchors: 10}, anchorPolicy), anchorPolicy)
	h, _ := newServer(t, gw, withMonitor(monitor))

	is.Equal(post(h, withMessages(`[{"role":"user","content":"hi"}]`)).Code, 200)
	is.Equal(post(h, withMessages(`[{"role":"user","content":"hi"},{"role":"assistant","content":"ok"},{"role":"user","content":"more"}]`)).Code, 200)
	families, err := monitor.Registry().Gather() // straight from the registry: no scrape handler in between
	is.NoErr(err)
	counted := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "pmgate_conversation_transitions_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "row" {
					counted[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	is.Equal(counted["A08"], 1.0) // the continuation's row, counted before the answer was read
	is.True(counted["A01"] >= 1)
}
