package correlation_test

import (
	"fmt"
	"github.com/cockroachdb/errors"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
)

// mGroup is the hand-written model of one group: plain fields and the rules of
// docs/CORRELATION.md (transitions, TTLs), sharing no code with the machine.
type mGroup struct {
	fix         fixture
	state       correlation.State
	pendingExp  time.Time
	inflightExp time.Time
	terminalExp time.Time
	accepted    string // joined contents of the accepted results
	cached      int    // bytes of the cached response, -1 when none
	gated       bool   // the loop-approval gate answered its dispatch
	sent        int    // dispatches not proven unsent
}

type registryMachine struct {
	name    string
	reg     *correlation.Registry
	limits  correlation.Limits
	policy  correlation.Policy
	now     time.Time
	seq     int
	model   map[string]*mGroup
	removed []fixture
}

func (m *registryMachine) live() (groups, calls int) {
	for _, g := range m.model {
		if g.state == correlation.Pending || g.state == correlation.Inflight {
			groups++
			calls += len(g.fix.group.Calls)
		}
	}
	return
}

func (m *registryMachine) cacheBytes() int {
	n := 0
	for _, g := range m.model {
		if g.cached > 0 {
			n += g.cached
		}
	}
	return n
}

// sweepModel applies the time rules to every group as they stood before the sweep.
func (m *registryMachine) sweepModel() (expired, uncertain, removed int) {
	keys := make([]string, 0, len(m.model))
	for k := range m.model {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := m.model[k]
		switch {
		case g.state == correlation.Pending && !m.now.Before(g.pendingExp):
			g.state, g.terminalExp = correlation.Expired, m.now.Add(m.policy.TerminalTTL)
			expired++
		case g.state == correlation.Inflight && !m.now.Before(g.inflightExp):
			g.state, g.terminalExp = correlation.Uncertain, m.now.Add(m.policy.TerminalTTL)
			uncertain++
		case g.state != correlation.Pending && g.state != correlation.Inflight && !m.now.Before(g.terminalExp):
			m.removed = append(m.removed, g.fix)
			delete(m.model, k)
			removed++
		}
	}
	return
}

func (m *registryMachine) pick(t *rapid.T, want ...correlation.State) *mGroup {
	var keys []string
	for k, g := range m.model {
		for _, s := range want {
			if g.state == s {
				keys = append(keys, k)
			}
		}
		if len(want) == 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		t.Skip("no group in the wanted state")
	}
	sort.Strings(keys)
	return m.model[rapid.SampledFrom(keys).Draw(t, "group")]
}

func (m *registryMachine) Admit(t *rapid.T) {
	calls := rapid.IntRange(1, 3).Draw(t, "calls")
	principal := rapid.SampledFrom([]string{"p1", "p2"}).Draw(t, "principal")
	m.seq++
	key := fmt.Sprintf("g%03d", m.seq)
	ids := make([]string, calls)
	for i := range ids {
		ids[i] = fmt.Sprintf("call_pmn_%s_%d", key, i)
	}
	f := newFixture(t, key, principal, ids...)
	f.group.IssuedAt, f.group.PendingExpiresAt = m.now, m.now.Add(m.policy.PendingTTL)

	fits := func() bool {
		g, c := m.live()
		return g+1 <= m.limits.MaxGroups && c+calls <= m.limits.MaxCalls
	}
	want := fits()
	if !want && calls <= m.limits.MaxCalls { // a group larger than the limit is refused outright
		m.sweepModel()
		want = fits()
	}
	ds, err := m.reg.Reserve(key, calls, m.now)
	for _, d := range ds {
		record(m.name, d)
	}
	if !want {
		if !errs.Has(err, errs.CorrelationCapacityExceeded) {
			t.Fatalf("admission over capacity: got %v vs expected correlation_capacity_exceeded", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("reserve: got %v vs expected success", err)
	}
	err = m.reg.Admit(key, f.group)
	if !m.keyFits(principal, calls) {
		m.expectShareRefusal(t, principal, err)
		m.reg.Release(key)
		return
	}
	if err != nil {
		t.Fatalf("admit: %v", err)
	}
	m.model[key] = &mGroup{fix: f, state: correlation.Pending, pendingExp: f.group.PendingExpiresAt, cached: -1}
}

// share is the model's per-key share: MaxGroupsPerKey groups (the whole pool
// when unset or not below it) and the same fraction of the calls, rounded up.
func (m *registryMachine) share() (groups, calls int) {
	l := m.limits
	if l.MaxGroupsPerKey == 0 || l.MaxGroupsPerKey >= l.MaxGroups {
		return l.MaxGroups, l.MaxCalls
	}
	calls = (l.MaxCalls*l.MaxGroupsPerKey + l.MaxGroups - 1) / l.MaxGroups
	if calls < 1 {
		calls = 1
	}
	return l.MaxGroupsPerKey, calls
}

// keyLive is what principal holds live in the model, and the first deadline
// of those groups.
func (m *registryMachine) keyLive(principal string) (groups, calls int, first time.Time) {
	for _, g := range m.model {
		if g.fix.group.PrincipalID != principal {
			continue
		}
		var d time.Time
		switch g.state {
		case correlation.Pending:
			d = g.pendingExp
		case correlation.Inflight:
			d = g.inflightExp
		default:
			continue
		}
		groups++
		calls += len(g.fix.group.Calls)
		if first.IsZero() || d.Before(first) {
			first = d
		}
	}
	return groups, calls, first
}

func (m *registryMachine) keyFits(principal string, calls int) bool {
	if m.limits.MaxGroupsPerKey == 0 || m.limits.MaxGroupsPerKey >= m.limits.MaxGroups {
		return true // no share: the pool alone decides
	}
	sg, sc := m.share()
	g, c, _ := m.keyLive(principal)
	return g+1 <= sg && c+calls <= sc
}

// expectShareRefusal checks err is the share refusal of principal: the code,
// the share and the wait until the key's first live group's deadline.
func (m *registryMachine) expectShareRefusal(t *rapid.T, principal string, err error) {
	var se *correlation.ShareExceeded
	if !errs.Has(err, errs.CorrelationCapacityExceeded) || !errors.As(err, &se) {
		t.Fatalf("group beyond the key's share: got %v vs expected its share refusal", err)
	}
	sg, sc := m.share()
	_, _, first := m.keyLive(principal)
	var after time.Duration
	if first.After(m.now) {
		after = first.Sub(m.now)
	}
	if se.Groups != sg || se.Calls != sc || se.After != after {
		t.Fatalf("share refusal: got %+v vs expected groups=%d calls=%d after=%v", se, sg, sc, after)
	}
}

// CheckRoom asks whether a group would fit: a key at its share is refused
// with its share refusal (even when the pool has room), a full pool with the
// plain code, after overdue groups expired.
func (m *registryMachine) CheckRoom(t *rapid.T) {
	calls := rapid.IntRange(1, 3).Draw(t, "calls")
	principal := rapid.SampledFrom([]string{"p1", "p2"}).Draw(t, "principal")
	fits := func() bool {
		g, c := m.live()
		return g+1 <= m.limits.MaxGroups && c+calls <= m.limits.MaxCalls
	}
	err := m.reg.CheckRoom(principal, calls, m.now)
	if calls > m.limits.MaxCalls {
		if !errs.Has(err, errs.CorrelationCapacityExceeded) {
			t.Fatalf("group larger than the pool: got %v vs expected correlation_capacity_exceeded", err)
		}
		return
	}
	if !fits() || !m.keyFits(principal, calls) {
		m.sweepModel()
	}
	switch {
	case !m.keyFits(principal, calls):
		m.expectShareRefusal(t, principal, err)
	case !fits():
		var se *correlation.ShareExceeded
		if !errs.Has(err, errs.CorrelationCapacityExceeded) || errors.As(err, &se) {
			t.Fatalf("full pool: got %v vs expected the pool's correlation_capacity_exceeded", err)
		}
	case err != nil:
		t.Fatalf("room: got %v vs expected room", err)
	}
}

// MovedPast sends a request that shows some group's calls: all of them
// unanswered (the conversation moved past it), one answered, or one not shown.
// Only the first moves past the group, and only a PENDING one is cancelled
// (an overdue one expires); nothing else changes.
func (m *registryMachine) MovedPast(t *rapid.T) {
	g := m.pick(t)
	how := rapid.SampledFrom([]string{"moved past", "moved past", "one answered", "one not shown"}).Draw(t, "request")
	var msgs []chat.Message
	var shown []chat.ToolCall
	for i, c := range g.fix.group.Calls {
		if how == "one not shown" && i == 0 {
			continue
		}
		shown = append(shown, chat.ToolCall{ID: c.PublicID, Name: c.OriginalName, Arguments: c.ArgumentsJSON})
	}
	msgs = append(msgs, chat.Message{Role: chat.RoleUser, Content: str("q")}, chat.Message{Role: chat.RoleAssistant, ToolCalls: shown})
	if how == "one answered" {
		msgs = append(msgs, chat.Message{Role: chat.RoleTool, ToolCallID: g.fix.group.Calls[0].PublicID, Content: str("r")})
	}
	msgs = append(msgs, chat.Message{Role: chat.RoleUser, Content: str("never mind, something else")})
	unanswered := map[string]bool{}
	for _, id := range correlation.Unanswered(msgs) {
		unanswered[id] = true
	}
	d, err := m.reg.Apply(g.fix.group.Key, func(gr *correlation.Group) (correlation.Decision, error) {
		return gr.MovedPast(m.now, m.policy, unanswered)
	})
	switch {
	case how != "moved past":
		if !errors.Is(err, correlation.ErrNotMovedPast) {
			t.Fatalf("%s: got (%+v, %v) vs expected ErrNotMovedPast", how, d, err)
		}
	case g.state != correlation.Pending:
		if !errors.Is(err, correlation.ErrIllegalTransition) {
			t.Fatalf("moved past in %s: got (%+v, %v) vs expected an illegal transition", g.state, d, err)
		}
	case !m.now.Before(g.pendingExp):
		if err != nil || d.To != correlation.Expired {
			t.Fatalf("moved past an overdue group: got (%+v, %v) vs expected EXPIRED", d, err)
		}
		record(m.name, d)
		g.state, g.terminalExp = correlation.Expired, m.now.Add(m.policy.TerminalTTL)
	default:
		if err != nil || d.Row != "C28" || d.To != correlation.Cancelled {
			t.Fatalf("moved past: got (%+v, %v) vs expected C28 to CANCELLED", d, err)
		}
		record(m.name, d)
		g.state, g.terminalExp = correlation.Cancelled, m.now.Add(m.policy.TerminalTTL)
	}
}

// expectSubmit is the model's answer to a submission of contents (joined by
// "|") to g, or of a variant that breaks validation (code != "").
func (m *registryMachine) expectSubmit(g *mGroup, contents string, invalid errs.Code) (correlation.State, errs.Code, bool) {
	switch {
	case g.state == correlation.Pending && !m.now.Before(g.pendingExp):
		g.state, g.terminalExp = correlation.Expired, m.now.Add(m.policy.TerminalTTL)
		return g.state, errs.ToolCallExpired, false
	case g.state == correlation.Inflight && !m.now.Before(g.inflightExp):
		g.state, g.terminalExp = correlation.Uncertain, m.now.Add(m.policy.TerminalTTL)
		return g.state, errs.ContinuationOutcomeUncertain, false
	}
	switch g.state {
	case correlation.Pending:
		if invalid != "" {
			return g.state, invalid, false
		}
		g.state, g.accepted, g.inflightExp = correlation.Inflight, contents, m.now.Add(m.policy.InflightTTL)
		g.sent++
		return g.state, "", true
	case correlation.Inflight:
		if invalid == "" && contents == g.accepted {
			return g.state, errs.ContinuationInflight, false
		}
		return g.state, errs.ContinuationConflict, false
	case correlation.Consumed:
		// The gate's results again, whatever the tools or the transcript before
		// the (unchanged) calls: the gate's answer again (C33).
		if g.gated && contents == g.accepted && (invalid == "" || invalid == errs.ContinuationToolsMismatch || invalid == errs.ContinuationHistoryMismatch) {
			return g.state, errs.UpstreamLoopApproval, false
		}
		if invalid == "" && contents == g.accepted {
			if g.cached >= 0 {
				return g.state, "", false
			}
			return g.state, errs.ToolCallAlreadyConsumed, false
		}
		return g.state, errs.ContinuationConflict, false
	case correlation.Expired:
		return g.state, errs.ToolCallExpired, false
	case correlation.Cancelled:
		return g.state, errs.ToolCallCancelled, false
	default:
		return g.state, errs.ContinuationOutcomeUncertain, false
	}
}

// submit runs a submission the way the app does: resolve, then submit.
func (m *registryMachine) submit(sub correlation.Submission, attempt string) (correlation.Decision, error) {
	keys := m.reg.Resolve(sub.PrincipalID, sub.Continuation.IDs())
	if len(keys) == 0 {
		return correlation.SubmitUnknown(), nil
	}
	var key string
	for _, k := range keys {
		key = k
	}
	sub.Unresolved = len(sub.Continuation.IDs()) - len(keys)
	return m.reg.Submit(key, m.now, sub, attempt)
}

func (m *registryMachine) Submit(t *rapid.T) {
	g := m.pick(t)
	n := len(g.fix.group.Calls)
	contents := make([]string, n)
	for i := range contents {
		contents[i] = rapid.SampledFrom([]string{"a", "b"}).Draw(t, "content")
	}
	if g.accepted != "" && rapid.Bool().Draw(t, "retry") {
		contents = strings.Split(g.accepted, "|")
	}
	variant := rapid.SampledFrom([]string{"valid", "valid", "valid", "missing", "model", "history", "foreign",
		"tools", "workspace", "duplicate", "unknown extra"}).Draw(t, "variant")
	sub := g.fix.submission(contents...)
	var invalid errs.Code
	switch variant {
	case "missing":
		if n == 1 {
			sub.Continuation.Results = nil
			sub.Continuation.Results = append(sub.Continuation.Results, correlation.Result{ID: "call_pmn_never", Content: "x"})
			invalid = errs.ToolResultGroupMismatch // the only id left is unknown: resolved by the app below
		} else {
			sub.Continuation.Results = sub.Continuation.Results[:n-1]
			invalid = errs.ToolResultIncomplete
		}
	case "model":
		sub.Model, invalid = "other-model", errs.ContinuationModelMismatch
	case "history":
		sub.Continuation.Prefix = sub.Continuation.Prefix[1:]
		invalid = errs.ContinuationHistoryMismatch
	case "tools":
		sub.ToolsHash, invalid = "sha256:other", errs.ContinuationToolsMismatch
	case "workspace":
		sub.WorkspaceID, invalid = "ws-other", errs.ContinuationWorkspaceMismatch
	case "duplicate":
		sub.Continuation.Results = append(sub.Continuation.Results, sub.Continuation.Results[0])
		invalid = errs.ToolResultGroupMismatch
	case "unknown extra":
		sub.Continuation.Results = append(sub.Continuation.Results, correlation.Result{ID: "call_pmn_forged", Content: "x"})
		invalid = errs.UnknownToolCall
	case "foreign":
		sub.PrincipalID = map[string]string{"p1": "p2", "p2": "p1"}[g.fix.group.PrincipalID]
	}
	d, err := m.submit(sub, "attempt")
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	record(m.name, d)
	if variant == "foreign" || (variant == "missing" && n == 1) {
		// nothing resolves for this principal, or only ids of no group: 404, no change
		if d.Code != errs.UnknownToolCall {
			t.Fatalf("foreign or unknown ids: got %q vs expected unknown_tool_call", d.Code)
		}
		return
	}
	state, code, dispatch := m.expectSubmit(g, strings.Join(contents, "|"), invalid)
	if d.Code != code || (d.Effect == correlation.EffectDispatch) != dispatch || d.To != state {
		t.Fatalf("submit %s in model state: got (%s, %q, %s) vs expected (%s, %q, dispatch=%v)", variant, d.To, d.Code, d.Effect, state, code, dispatch)
	}
}

func (m *registryMachine) SubmitRemoved(t *rapid.T) {
	if len(m.removed) == 0 {
		t.Skip("nothing removed yet")
	}
	f := rapid.SampledFrom(m.removed).Draw(t, "removed")
	d, err := m.submit(f.submission(), "attempt")
	if err != nil || d.Code != errs.UnknownToolCall {
		t.Fatalf("removed group: got (%q, %v) vs expected unknown_tool_call", d.Code, err)
	}
	record(m.name, d)
}

func (m *registryMachine) Complete(t *rapid.T) {
	g := m.pick(t, correlation.Inflight)
	size := rapid.IntRange(0, 300).Draw(t, "response bytes")
	d, err := m.reg.Apply(g.fix.group.Key, func(gr *correlation.Group) (correlation.Decision, error) {
		return gr.Complete(m.now, m.policy, make([]byte, size), "sha256:r")
	})
	if err != nil {
		t.Fatalf("complete: %v", err)
	}
	record(m.name, d)
	g.state, g.terminalExp = correlation.Consumed, m.now.Add(m.policy.TerminalTTL)
	if m.cacheBytes()+size <= m.limits.ResponseCacheBytes {
		g.cached = size
	}
}

func (m *registryMachine) NotSent(t *rapid.T) {
	g := m.pick(t, correlation.Inflight)
	d, err := m.reg.Apply(g.fix.group.Key, func(gr *correlation.Group) (correlation.Decision, error) {
		return gr.NotSent(m.now, m.policy)
	})
	if err != nil {
		t.Fatalf("not sent: %v", err)
	}
	record(m.name, d)
	g.state, g.accepted = correlation.Pending, ""
	g.sent--
}

func (m *registryMachine) Ambiguous(t *rapid.T) {
	g := m.pick(t, correlation.Inflight)
	d, err := m.reg.Apply(g.fix.group.Key, func(gr *correlation.Group) (correlation.Decision, error) {
		return gr.Ambiguous(m.now, m.policy)
	})
	if err != nil {
		t.Fatalf("ambiguous: %v", err)
	}
	record(m.name, d)
	g.state, g.terminalExp = correlation.Uncertain, m.now.Add(m.policy.TerminalTTL)
}

// Gated: the dispatched continuation met the loop-approval gate; the results
// were accepted, so the group is consumed, with nothing cached.
func (m *registryMachine) Gated(t *rapid.T) {
	g := m.pick(t, correlation.Inflight)
	d, err := m.reg.Apply(g.fix.group.Key, func(gr *correlation.Group) (correlation.Decision, error) {
		return gr.Gated(m.now, m.policy)
	})
	if err != nil || d.Code != errs.UpstreamLoopApproval {
		t.Fatalf("gated: got (%q, %v) vs expected upstream_loop_approval", d.Code, err)
	}
	record(m.name, d)
	g.state, g.terminalExp, g.gated = correlation.Consumed, m.now.Add(m.policy.TerminalTTL), true
}

func (m *registryMachine) Cancel(t *rapid.T) {
	g := m.pick(t)
	d, err := m.reg.Apply(g.fix.group.Key, func(gr *correlation.Group) (correlation.Decision, error) {
		return gr.Cancel(m.now, m.policy)
	})
	if g.state != correlation.Pending {
		if err == nil {
			t.Fatalf("cancel in %s: got success vs expected an illegal transition", g.state)
		}
		return
	}
	if err != nil {
		t.Fatalf("cancel: %v", err)
	}
	record(m.name, d)
	g.state, g.terminalExp = correlation.Cancelled, m.now.Add(m.policy.TerminalTTL)
}

func (m *registryMachine) Tick(t *rapid.T) {
	m.now = m.now.Add(time.Duration(rapid.IntRange(0, 1200).Draw(t, "seconds")) * time.Second)
	rep, ds := m.reg.Sweep(m.now)
	for _, d := range ds {
		record(m.name, d)
	}
	e, u, r := m.sweepModel()
	if rep.Expired != e || rep.Uncertain != u || rep.Removed != r {
		t.Fatalf("sweep: got %+v vs expected expired=%d uncertain=%d removed=%d", rep, e, u, r)
	}
}

// RepeatedClaims submits the same valid continuation n times in a row:
// exactly one claims the group. The registry is not safe for concurrent use
// (its store serializes access), so claims that race for real run against the
// stores themselves, in porttest.StoreMachine.
func (m *registryMachine) RepeatedClaims(t *rapid.T) {
	g := m.pick(t, correlation.Pending)
	if !m.now.Before(g.pendingExp) {
		t.Skip("overdue")
	}
	n := rapid.IntRange(2, 16).Draw(t, "claimants")
	sub := g.fix.submission()
	decisions := make([]correlation.Decision, n)
	for i := range n {
		decisions[i], _ = m.submit(sub, fmt.Sprintf("attempt-%d", i))
	}
	wins := 0
	for _, d := range decisions {
		record(m.name, d)
		switch {
		case d.Effect == correlation.EffectDispatch:
			wins++
		case d.Code != errs.ContinuationInflight:
			t.Fatalf("losing claimant: got %q vs expected continuation_inflight", d.Code)
		}
	}
	if wins != 1 {
		t.Fatalf("concurrent claims: got %d dispatches vs expected exactly 1", wins)
	}
	contents := make([]string, len(g.fix.group.Calls))
	for i := range contents {
		contents[i] = "sunny"
	}
	g.state, g.accepted, g.inflightExp = correlation.Inflight, strings.Join(contents, "|"), m.now.Add(m.policy.InflightTTL)
	g.sent++
}

func (m *registryMachine) Check(t *rapid.T) {
	counts := m.reg.Counts()
	want := map[correlation.State]int{}
	for k, g := range m.model {
		want[g.state]++
		got, ok := m.reg.Get(k)
		if !ok || got.State != g.state {
			t.Fatalf("group %s: got state %s (present=%v) vs expected %s", k, got.State, ok, g.state)
		}
		if g.sent > 1 || g.sent < 0 {
			t.Fatalf("group %s dispatched %d times", k, g.sent)
		}
		if (g.cached >= 0) != (got.CachedResponse != nil) || (g.cached > 0 && len(got.CachedResponse) != g.cached) {
			t.Fatalf("group %s: cached %d bytes vs expected %d", k, len(got.CachedResponse), g.cached)
		}
	}
	if len(m.reg.Keys()) != len(m.model) {
		t.Fatalf("got %d stored groups vs expected %d", len(m.reg.Keys()), len(m.model))
	}
	for _, s := range correlation.States {
		if counts.ByState[s] != want[s] {
			t.Fatalf("count %s: got %d vs expected %d", s, counts.ByState[s], want[s])
		}
	}
	lg, lc := m.live()
	if counts.LiveGroups != lg || counts.LiveCalls != lc || counts.CacheBytes != m.cacheBytes() {
		t.Fatalf("capacity: got groups=%d calls=%d cache=%d vs expected %d %d %d", counts.LiveGroups, counts.LiveCalls, counts.CacheBytes, lg, lc, m.cacheBytes())
	}
	if lg > m.limits.MaxGroups || lc > m.limits.MaxCalls || counts.CacheBytes > m.limits.ResponseCacheBytes {
		t.Fatalf("limits exceeded: %+v", counts)
	}
	sg, sc := m.share()
	for _, p := range []string{"p1", "p2"} {
		if g, c, _ := m.keyLive(p); g > sg || c > sc {
			t.Fatalf("key %s holds %d groups, %d calls vs its share %d, %d", p, g, c, sg, sc)
		}
	}
}

func TestRegistryMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		limits := correlation.Limits{
			MaxGroups:          rapid.IntRange(1, 6).Draw(rt, "max groups"),
			MaxCalls:           rapid.IntRange(1, 12).Draw(rt, "max calls"),
			ResponseCacheBytes: rapid.IntRange(0, 600).Draw(rt, "cache bytes"),
		}
		limits.MaxGroupsPerKey = rapid.IntRange(0, limits.MaxGroups).Draw(rt, "max groups per key")
		p := correlation.Policy{
			PendingTTL:  time.Duration(rapid.IntRange(1, 1800).Draw(rt, "pending ttl s")) * time.Second,
			InflightTTL: time.Duration(rapid.IntRange(1, 600).Draw(rt, "inflight ttl s")) * time.Second,
			TerminalTTL: time.Duration(rapid.IntRange(1, 1800).Draw(rt, "terminal ttl s")) * time.Second,
		}
		m := &registryMachine{name: t.Name(), reg: correlation.NewRegistry(limits, p), limits: limits, policy: p, now: t0, model: map[string]*mGroup{}}
		rt.Repeat(rapid.StateMachineActions(m))
	})
}

// The capacity row is exercised by the model test whenever a full registry
// refuses a newer group; this example pins the behaviour down.
func TestAFullRegistryRefusesNewGroupsAndKeepsPendingOnes(t *testing.T) {
	reg := correlation.NewRegistry(correlation.Limits{MaxGroups: 1, MaxCalls: 4, ResponseCacheBytes: 0}, policy)
	f := newFixture(t, "g1", "p1", "call_pmn_a")
	if _, err := reg.Reserve("g1", 1, t0); err != nil {
		t.Fatal(err)
	}
	if err := reg.Admit("g1", f.group); err != nil {
		t.Fatal(err)
	}
	ds, err := reg.Reserve("g2", 1, t0.Add(time.Minute))
	if !errs.Has(err, errs.CorrelationCapacityExceeded) {
		t.Fatalf("got %v vs expected correlation_capacity_exceeded", err)
	}
	if len(ds) != 1 || ds[0].Row != "C10" {
		t.Fatalf("got decisions %+v vs expected the capacity-pressure row", ds)
	}
	record(t.Name(), ds[0])
	if g, _ := reg.Get("g1"); g.State != correlation.Pending {
		t.Fatalf("pending group got %s vs expected PENDING (never evicted)", g.State)
	}
	// Once the pending group is overdue, admission expires it and succeeds.
	if _, err := reg.Reserve("g3", 1, f.group.PendingExpiresAt); err != nil {
		t.Fatalf("after expiry: got %v vs expected success", err)
	}
	if g, _ := reg.Get("g1"); g.State != correlation.Expired {
		t.Fatalf("overdue group got %s vs expected EXPIRED", g.State)
	}
	_ = chat.RoleUser
}
