package app_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/internal/testkit"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// mGroup is the model of one issued tool group, as the client sees it.
type mGroup struct {
	continuation chat.Request // the valid continuation the client would send
	principal    app.Principal
	upGroup      string
	state        correlation.State
	pendingExp   time.Time
	terminalExp  time.Time
	answer       []app.Delta // first answer, replayed while CONSUMED
	results      string      // results of the accepted submission
}

type appMachine struct {
	r      *rig
	next   porttest.Script
	seq    int
	groups map[string]*mGroup // by upstream group id
	sent   map[string]int     // continuations that reached the upstream, by upstream group id
}

func (m *appMachine) respond(req ports.UpstreamRequest) porttest.Script {
	s := m.next
	if req.Continuation != nil && !s.NotSent {
		m.sent[req.Continuation.Results[0].UpstreamCallID[:len(req.Continuation.Results[0].UpstreamCallID)-2]]++
	}
	if s.NotSent {
		s.Err = errors.Join(errs.New(errs.UpstreamUnavailable), ports.ErrNotSent)
	}
	return s
}

func (m *appMachine) newGroupScript(t *rapid.T) (porttest.Script, string) {
	m.seq++
	g := fmt.Sprintf("grp%03d", m.seq)
	names := []string{"get_weather"}
	if rapid.Bool().Draw(t, "parallel") {
		names = append(names, "get_time")
	}
	return porttest.Script{Events: porttest.ToolCalls("conv", g, names...)}, g
}

func (m *appMachine) run(t *rapid.T, p app.Principal, req chat.Request) ([]app.Delta, error) {
	turn, err := m.r.gw.Chat(t.Context(), p, req, nil)
	if err != nil {
		return nil, err
	}
	return testkit.Drain(t.Context(), turn)
}

// issue records a tool answer as a new model group.
func (m *appMachine) issue(t *rapid.T, p app.Principal, history []chat.Message, ds []app.Delta, upGroup string) {
	results := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "results")
	m.groups[upGroup] = &mGroup{continuation: request(echo(history, ds, results)...), principal: p, upGroup: upGroup,
		state: correlation.Pending, pendingExp: m.r.clock.Now().Add(policy.PendingTTL), results: results}
}

func (m *appMachine) ToolTurn(t *rapid.T) {
	p := app.Principal{Slot: "s", ID: rapid.SampledFrom([]string{"p1", "p2"}).Draw(t, "principal")}
	s, g := m.newGroupScript(t)
	m.next = s
	history := []chat.Message{{Role: chat.RoleUser, Content: str(fmt.Sprintf("q%d", m.seq))}}
	ds, err := m.run(t, p, request(history...))
	if err != nil {
		t.Fatalf("tool turn: %v", err)
	}
	m.issue(t, p, history, ds, g)
}

func (m *appMachine) pick(t *rapid.T) *mGroup {
	if len(m.groups) == 0 {
		t.Skip("no group")
	}
	keys := make([]string, 0, len(m.groups))
	for k := range m.groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return m.groups[rapid.SampledFrom(keys).Draw(t, "group")]
}

func (m *appMachine) Continue(t *rapid.T) {
	g := m.pick(t)
	req := g.continuation
	results := g.results
	if rapid.Bool().Draw(t, "other results") {
		results = "other"
		req = request(append(append([]chat.Message(nil), req.Messages[:len(req.Messages)-countTools(req)]...),
			retarget(req.Messages[len(req.Messages)-countTools(req):], results)...)...)
	}
	fault := rapid.SampledFrom([]string{"text", "tools", "not sent", "lost after send", "stream fails"}).Draw(t, "fault")
	var newGroup string
	switch fault {
	case "text":
		m.next = porttest.Script{Events: porttest.Text("conv", "answer")}
	case "tools":
		m.next, newGroup = m.newGroupScript(t)
	case "not sent":
		m.next = porttest.Script{NotSent: true}
	case "lost after send":
		m.next = porttest.Script{Err: errs.New(errs.UpstreamConnectionLost)}
	case "stream fails":
		m.next = porttest.Script{Events: porttest.Text("conv", "half"), End: errs.New(errs.UpstreamCompletionAmbiguous)}
	}
	ds, err := m.run(t, g.principal, req)
	now := m.r.clock.Now()
	code := errs.CodeOf(err)
	want := func(c errs.Code) {
		if code != c {
			t.Fatalf("continuation of %s in %s (%s): got %q vs expected %q", g.upGroup, g.state, fault, code, c)
		}
	}
	switch {
	case g.state == correlation.Removed:
		want(errs.UnknownToolCall)
	case g.state == correlation.Pending && !now.Before(g.pendingExp):
		want(errs.ToolCallExpired)
		g.state, g.terminalExp = correlation.Expired, now.Add(policy.TerminalTTL)
	case g.state != correlation.Pending && g.state != correlation.Removed && !now.Before(g.terminalExp):
		want(errs.UnknownToolCall)
		g.state = correlation.Removed
	case g.state == correlation.Pending:
		switch fault {
		case "text", "tools":
			want("")
			g.state, g.terminalExp, g.answer, g.results, g.continuation = correlation.Consumed, now.Add(policy.TerminalTTL), ds, results, req
			if fault == "tools" {
				m.issue(t, g.principal, req.Messages, ds, newGroup)
			}
		case "not sent":
			want(errs.UpstreamUnavailable)
		default:
			want(errs.ContinuationOutcomeUncertain)
			g.state, g.terminalExp = correlation.Uncertain, now.Add(policy.TerminalTTL)
		}
	case g.state == correlation.Consumed && results == g.results:
		want("")
		if !reflect.DeepEqual(ds, g.answer) {
			t.Fatalf("replay of %s: got %+v vs expected the first answer %+v", g.upGroup, ds, g.answer)
		}
	case g.state == correlation.Consumed:
		want(errs.ContinuationConflict)
	case g.state == correlation.Expired:
		want(errs.ToolCallExpired)
	case g.state == correlation.Uncertain:
		want(errs.ContinuationOutcomeUncertain)
	}
}

func countTools(r chat.Request) int {
	n := 0
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role == chat.RoleTool; i-- {
		n++
	}
	return n
}

func retarget(results []chat.Message, content string) []chat.Message {
	out := make([]chat.Message, len(results))
	for i, m := range results {
		out[i] = m
		out[i].Content = str(content)
	}
	return out
}

func (m *appMachine) Forge(t *rapid.T) {
	g := m.pick(t)
	other := app.Principal{Slot: "x", ID: "intruder"}
	_, err := m.run(t, other, g.continuation)
	if errs.CodeOf(err) != errs.UnknownToolCall {
		t.Fatalf("foreign principal: got %q vs expected unknown_tool_call", errs.CodeOf(err))
	}
}

func (m *appMachine) Tick(t *rapid.T) {
	m.r.clock.Advance(time.Duration(rapid.IntRange(0, 1200).Draw(t, "seconds")) * time.Second)
	now := m.r.clock.Now()
	if _, err := m.r.store.Sweep(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	for _, g := range m.groups {
		switch {
		case g.state == correlation.Pending && !now.Before(g.pendingExp):
			g.state, g.terminalExp = correlation.Expired, now.Add(policy.TerminalTTL)
		case g.state != correlation.Pending && g.state != correlation.Removed && !now.Before(g.terminalExp):
			g.state = correlation.Removed
		}
	}
}

func (m *appMachine) Check(t *rapid.T) {
	for g, n := range m.sent {
		if n > 1 {
			t.Fatalf("group %s: %d continuations reached the upstream vs expected at most 1", g, n)
		}
	}
	c, _ := m.r.store.Counts(t.Context())
	want := map[correlation.State]int{}
	for _, g := range m.groups {
		if g.state != correlation.Removed {
			want[g.state]++
		}
	}
	for _, s := range []correlation.State{correlation.Pending, correlation.Consumed, correlation.Expired, correlation.Uncertain, correlation.Inflight} {
		if c.ByState[s] != want[s] {
			t.Fatalf("store %s: got %d vs expected %d", s, c.ByState[s], want[s])
		}
	}
}

func TestTheGatewayMatchesTheModelUnderRandomFaults(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := &appMachine{groups: map[string]*mGroup{}, sent: map[string]int{}}
		m.r = &rig{store: memstore.New(correlation.Limits{MaxGroups: 1000, MaxCalls: 4000, ResponseCacheBytes: 1 << 20}, policy),
			clock: porttest.NewClock(porttest.T0)}
		m.r.up = &porttest.Upstream{Respond: m.respond}
		m.r.gw = app.New(app.Config{WorkspaceID: "ws", Correlation: true, Policy: policy}, m.r.up, m.r.store, m.r.clock, &porttest.IDs{},
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		rt.Repeat(rapid.StateMachineActions(m))
	})
}
