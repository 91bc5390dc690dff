package ops

import (
	"log/slog"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/ports"
)

// The monitor is an inline subscriber: an event reaches it inside Observe, in
// the observing goroutine — so while the monitor cannot take it (its lock
// held here) Observe does not return, and once Observe has returned the
// control page's list holds the row. A queued monitor would let Observe
// return at once and count the row whenever its goroutine got to it.
func TestTheMonitorCountsInsideObserve(t *testing.T) {
	is := is.New(t)
	events := app.NewObservers(slog.New(slog.DiscardHandler))
	t.Cleanup(events.Close)
	m := NewMonitor(MonitorConfig{Version: "test", Strategy: "access_token", Events: events})
	e := ports.Event{Kind: ports.EventTransition, Machine: correlation.MachineName, Row: "C01", From: "PENDING", To: "INFLIGHT", Count: 1}

	m.mu.Lock()
	returned := make(chan struct{})
	go func() {
		events.Observe(t.Context(), e)
		close(returned)
	}()
	select {
	case <-returned:
		m.mu.Unlock()
		t.Fatal("Observe returned before the monitor took the event")
	case <-time.After(50 * time.Millisecond):
	}
	m.mu.Unlock()
	<-returned
	_, trans := m.Recent()
	is.Equal(len(trans), 1) // there as soon as Observe returned
	is.Equal(trans[0].Row, "C01")
}
