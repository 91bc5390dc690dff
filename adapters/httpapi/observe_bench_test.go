package httpapi_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/adapters/ops"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/internal/testkit"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// observedGateway is the app wired as the process wires it: its events go
// through the fan-out to the monitor and the log.
func observedGateway(b *testing.B, up ports.Upstream, store ports.CorrelationStore, policy correlation.Policy) *app.Gateway {
	log := slog.New(slog.DiscardHandler)
	events := app.NewObservers(log)
	b.Cleanup(events.Close)
	ops.NewMonitor(ops.MonitorConfig{Events: events})
	events.Subscribe("log", app.LogObserver{Log: log})
	return app.New(app.Config{WorkspaceID: "ws", Correlation: true, Policy: policy, Observer: events}, up, store,
		porttest.NewClock(porttest.T0), &porttest.IDs{}, log)
}

// What a tool turn and its continuation cost with their machine rows
// observed (two rows per iteration: the claim and the proven end), all
// goroutines counted.
func BenchmarkObservedToolTurn(b *testing.B) {
	n := 0
	up := &porttest.Upstream{Respond: func(req ports.UpstreamRequest) porttest.Script {
		n++
		if req.Continuation == nil {
			return porttest.Script{Events: porttest.ToolCalls("conv-1", "grp", "get_weather")}
		}
		return porttest.Script{Events: porttest.Text("conv-1", "done")}
	}}
	policy := correlation.Policy{PendingTTL: time.Hour, InflightTTL: time.Minute, TerminalTTL: time.Hour}
	store := memstore.New(correlation.Limits{MaxGroups: 1 << 20, MaxCalls: 1 << 20}, policy)
	gw := observedGateway(b, up, store, policy)
	tools := []chat.Tool{{Name: "get_weather", Parameters: []byte(`{"type":"object"}`), UpstreamParameters: []byte(`{"type":"object"}`)}}
	p := app.Principal{Slot: "default", ID: "p1"}
	ctx := context.Background()
	text := "go"
	history := []chat.Message{{Role: chat.RoleUser, Content: &text}}
	req := func(msgs []chat.Message) chat.Request {
		return chat.Request{Model: "m", Messages: msgs, Tools: tools, ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto}}
	}
	b.ReportAllocs()
	for b.Loop() {
		turn, err := gw.Chat(ctx, p, req(history), nil)
		if err != nil {
			b.Fatal(err)
		}
		ds, err := testkit.Drain(ctx, turn)
		if err != nil {
			b.Fatal(err)
		}
		turn, err = gw.Chat(ctx, p, req(testkit.Echo(history, ds, "sunny")), nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := testkit.Drain(ctx, turn); err != nil {
			b.Fatal(err)
		}
	}
}
