package porttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// OpenStore returns an empty store with the given limits and policy and the
// function that closes it. StoreMachine opens one per generated run, so a
// store that holds connections must give them back when closed.
type OpenStore func(l correlation.Limits, p correlation.Policy) (s ports.CorrelationStore, closeStore func())

// StoreMachine drives a store through random sequences of admissions,
// submissions, settlements, cancellations, sweeps and racing claims, and
// compares every answer and every count with correlation.Registry, the pure
// reference model a store must behave as. The racing claims are real: several
// goroutines call the store's Update at once, with nothing of the test's own
// between them, so a store whose Update is not atomic lets more than one of
// them claim the group — the at-most-once dispatch the store exists for.
func StoreMachine(t *testing.T, open OpenStore) {
	rapid.Check(t, func(rt *rapid.T) {
		l := correlation.Limits{
			MaxGroups:          rapid.IntRange(1, 5).Draw(rt, "max groups"),
			MaxCalls:           rapid.IntRange(1, 10).Draw(rt, "max calls"),
			ResponseCacheBytes: rapid.IntRange(0, 200).Draw(rt, "cache bytes"),
		}
		l.MaxGroupsPerKey = rapid.IntRange(0, l.MaxGroups).Draw(rt, "max groups per key")
		s, closeStore := open(l, Policy)
		defer closeStore()
		m := &storeMachine{store: s, ref: correlation.NewRegistry(l, Policy), now: T0, admitted: map[string]correlation.Group{}}
		rt.Repeat(rapid.StateMachineActions(m))
	})
}

type storeMachine struct {
	store    ports.CorrelationStore
	ref      *correlation.Registry // the reference: driven one call at a time
	now      time.Time
	seq      int
	keys     []string                     // every key ever admitted, removed ones included
	admitted map[string]correlation.Group // the records as admitted, for submissions to removed groups
}

func (m *storeMachine) ctx() context.Context { return context.Background() }

// pick draws an admitted key whose reference state is one of want (any key,
// removed ones included, when want is empty).
func (m *storeMachine) pick(t *rapid.T, want ...correlation.State) string {
	var keys []string
	for _, k := range m.keys {
		g, ok := m.ref.Get(k)
		st := correlation.Removed
		if ok {
			st = g.State
		}
		if len(want) == 0 || slices.Contains(want, st) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		t.Skip("no group in the wanted state")
	}
	return rapid.SampledFrom(keys).Draw(t, "group")
}

// update runs a typed transition on both and requires the same outcome.
func (m *storeMachine) update(t *rapid.T, what, key string, fn func(g *correlation.Group) (correlation.Decision, error)) {
	want, werr := m.ref.Apply(key, fn)
	got, gerr := m.store.Update(m.ctx(), key, fn)
	if (werr == nil) != (gerr == nil) || errs.CodeOf(werr) != errs.CodeOf(gerr) {
		t.Fatalf("%s %s: got error %v vs expected %v", what, key, gerr, werr)
	}
	if werr == nil {
		sameDecision(t, what+" "+key, got, want)
	}
}

func sameDecision(t *rapid.T, what string, got, want correlation.Decision) {
	if got.Row != want.Row || got.To != want.To || got.Effect != want.Effect || got.Code != want.Code || !bytes.Equal(got.Replay, want.Replay) {
		t.Fatalf("%s: got row %s → %s (%s %q, %d replay bytes) vs expected row %s → %s (%s %q, %d replay bytes)", what,
			got.Row, got.To, got.Effect, got.Code, len(got.Replay), want.Row, want.To, want.Effect, want.Code, len(want.Replay))
	}
}

func (m *storeMachine) Admit(t *rapid.T) {
	calls := rapid.IntRange(1, 3).Draw(t, "calls")
	m.seq++
	key := fmt.Sprintf("g%03d", m.seq)
	g := Group(key, rapid.SampledFrom([]string{"p1", "p2"}).Draw(t, "principal"), calls, m.now)
	_, werr := m.ref.Reserve(key, calls, m.now)
	r, gerr := m.store.Reserve(m.ctx(), calls, m.now)
	if errs.CodeOf(werr) != errs.CodeOf(gerr) || (werr == nil) != (gerr == nil) {
		t.Fatalf("reserve %d calls: got %v vs expected %v", calls, gerr, werr)
	}
	if werr != nil {
		return
	}
	werr = m.ref.Admit(key, g)
	gerr = m.store.Admit(m.ctx(), r, g)
	sameRefusal(t, fmt.Sprintf("admit %d calls", calls), gerr, werr)
	if werr != nil {
		m.ref.Release(key)
		if err := m.store.Release(m.ctx(), r); err != nil {
			t.Fatalf("release: %v", err)
		}
		return
	}
	m.keys = append(m.keys, key)
	m.admitted[key] = g
}

func (m *storeMachine) CheckRoom(t *rapid.T) {
	calls := rapid.IntRange(0, 4).Draw(t, "calls")
	principal := rapid.SampledFrom([]string{"p1", "p2"}).Draw(t, "principal")
	want := m.ref.CheckRoom(principal, calls, m.now)
	got := m.store.CheckRoom(m.ctx(), principal, calls, m.now)
	sameRefusal(t, fmt.Sprintf("check room for %d calls of %s", calls, principal), got, want)
}

// sameRefusal requires got to be the refusal want is: none, the same code,
// and the same share refusal (share and wait) when it is one.
func sameRefusal(t *rapid.T, what string, got, want error) {
	if (got == nil) != (want == nil) || errs.CodeOf(got) != errs.CodeOf(want) {
		t.Fatalf("%s: got %v vs expected %v", what, got, want)
	}
	var gs, ws *correlation.ShareExceeded
	gotShare, wantShare := errors.As(got, &gs), errors.As(want, &ws)
	if gotShare != wantShare || (wantShare && *gs != *ws) {
		t.Fatalf("%s: got share refusal %v (%+v) vs expected %v (%+v)", what, gotShare, gs, wantShare, ws)
	}
}

// MovedPast sends a request that moved past a group (every call shown,
// none answered), or one that answers one of its calls.
func (m *storeMachine) MovedPast(t *rapid.T) {
	key := m.pick(t)
	g := m.admitted[key]
	unanswered := map[string]bool{}
	for _, c := range g.Calls {
		unanswered[c.PublicID] = true
	}
	if rapid.Bool().Draw(t, "one answered") {
		delete(unanswered, g.Calls[0].PublicID)
	}
	if _, ok := m.ref.Get(key); !ok {
		t.Skip("removed")
	}
	m.update(t, "moved past", key, func(gr *correlation.Group) (correlation.Decision, error) {
		return gr.MovedPast(m.now, Policy, unanswered)
	})
}

func (m *storeMachine) Submit(t *rapid.T) {
	key := m.pick(t)
	g := m.admitted[key]
	result := rapid.SampledFrom([]string{"sunny", "rain"}).Draw(t, "result")
	sub := Submission(g, result)
	if rapid.Bool().Draw(t, "other model") {
		sub.Model = "other-model"
	}
	want, werr := m.ref.Submit(key, m.now, sub, "attempt")
	if werr != nil {
		t.Fatalf("reference submit: %v", werr)
	}
	got, err := m.store.Update(m.ctx(), key, func(g *correlation.Group) (correlation.Decision, error) {
		return g.Submit(m.now, Policy, sub, "attempt")
	})
	if errs.Has(err, errs.UnknownToolCall) {
		got = correlation.SubmitUnknown() // the app answers a key that is gone from REMOVED
	} else if err != nil {
		t.Fatalf("submit %s: %v", key, err)
	}
	sameDecision(t, "submit "+key, got, want)
}

func (m *storeMachine) Complete(t *rapid.T) {
	key := m.pick(t, correlation.Inflight)
	resp := bytes.Repeat([]byte("r"), rapid.IntRange(0, 120).Draw(t, "response bytes"))
	m.update(t, "complete", key, func(g *correlation.Group) (correlation.Decision, error) {
		return g.Complete(m.now, Policy, resp, "sha256:r")
	})
}

func (m *storeMachine) NotSent(t *rapid.T) {
	m.update(t, "not sent", m.pick(t, correlation.Inflight), func(g *correlation.Group) (correlation.Decision, error) {
		return g.NotSent(m.now, Policy)
	})
}

func (m *storeMachine) Ambiguous(t *rapid.T) {
	m.update(t, "ambiguous", m.pick(t, correlation.Inflight), func(g *correlation.Group) (correlation.Decision, error) {
		return g.Ambiguous(m.now, Policy)
	})
}

func (m *storeMachine) Gated(t *rapid.T) {
	m.update(t, "gated", m.pick(t, correlation.Inflight), func(g *correlation.Group) (correlation.Decision, error) {
		return g.Gated(m.now, Policy)
	})
}

func (m *storeMachine) Cancel(t *rapid.T) {
	m.update(t, "cancel", m.pick(t, correlation.Pending), func(g *correlation.Group) (correlation.Decision, error) {
		return g.Cancel(m.now, Policy)
	})
}

func (m *storeMachine) Tick(t *rapid.T) {
	m.now = m.now.Add(time.Duration(rapid.IntRange(0, 1200).Draw(t, "seconds")) * time.Second)
	want, _ := m.ref.Sweep(m.now)
	got, err := m.store.Sweep(m.ctx(), m.now)
	if err != nil || got.Expired != want.Expired || got.Uncertain != want.Uncertain || got.Removed != want.Removed ||
		!maps.Equal(got.Rows, want.Rows) {
		t.Fatalf("sweep: got %+v, %v vs expected %+v", got, err, want)
	}
}

// ConcurrentClaims races claimants on the store itself: they are released at
// once and each holds its copy for a moment before deciding, so that a store
// whose Update is not atomic lets several of them see PENDING and claim.
func (m *storeMachine) ConcurrentClaims(t *rapid.T) {
	key := m.pick(t, correlation.Pending)
	g, _ := m.ref.Get(key)
	if !m.now.Before(g.PendingExpiresAt) {
		t.Skip("overdue")
	}
	n := rapid.IntRange(2, 8).Draw(t, "claimants")
	sub := Submission(g, "sunny")
	decisions := make([]correlation.Decision, n)
	failed := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			decisions[i], failed[i] = m.store.Update(m.ctx(), key, func(g *correlation.Group) (correlation.Decision, error) {
				time.Sleep(200 * time.Microsecond) // widen the window between read and write
				return g.Submit(m.now, Policy, sub, fmt.Sprintf("attempt-%d", i))
			})
		}()
	}
	close(start)
	wg.Wait()
	wins := 0
	for i, d := range decisions {
		switch {
		case failed[i] != nil:
			t.Fatalf("claimant %d: %v", i, failed[i])
		case d.Effect == correlation.EffectDispatch:
			wins++
		case d.Code != errs.ContinuationInflight:
			t.Fatalf("losing claimant: got %q vs expected continuation_inflight", d.Code)
		}
	}
	if wins != 1 {
		t.Fatalf("%d racing claims: got %d dispatches vs expected exactly 1", n, wins)
	}
	if _, err := m.ref.Submit(key, m.now, sub, "attempt"); err != nil {
		t.Fatalf("reference claim: %v", err)
	}
}

func (m *storeMachine) Check(t *rapid.T) {
	want := m.ref.Counts()
	got, err := m.store.Counts(m.ctx())
	if err != nil {
		t.Fatalf("counts: %v", err)
	}
	nonZero := func(c map[correlation.State]int) map[correlation.State]int {
		out := map[correlation.State]int{}
		for s, n := range c {
			if n != 0 {
				out[s] = n
			}
		}
		return out
	}
	if !maps.Equal(nonZero(got.ByState), nonZero(want.ByState)) || got.LiveGroups != want.LiveGroups ||
		got.LiveCalls != want.LiveCalls || got.CacheBytes != want.CacheBytes || got.ReservedGroups != want.ReservedGroups {
		t.Fatalf("counts: got %+v vs expected %+v", got, want)
	}
	pending, err := m.store.Pending(m.ctx())
	if err != nil {
		t.Fatalf("pending: %v", err)
	}
	var wantPending []string
	for _, k := range m.ref.Keys() {
		if g, _ := m.ref.Get(k); g.State == correlation.Pending {
			wantPending = append(wantPending, k)
		}
	}
	if !slices.Equal(pending, wantPending) {
		t.Fatalf("pending: got %v vs expected %v", pending, wantPending)
	}
}
