// Package porttest holds the contract suites every adapter of a port must pass,
// and small fakes of the ports. A store adapter's test calls StoreContract with
// a constructor; the PostgreSQL adapter runs the same suite unchanged.
package porttest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// NewStore returns an empty store with the given limits and policy. Stores are
// expected to be independent between calls.
type NewStore func(t *testing.T, l correlation.Limits, p correlation.Policy) ports.CorrelationStore

// T0 is the fixed start of time in the suites.
var T0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Policy is the TTL policy the suites use.
var Policy = correlation.Policy{PendingTTL: 15 * time.Minute, InflightTTL: 150 * time.Second, TerminalTTL: 15 * time.Minute}

// Group returns a PENDING group record with n calls for principal; ids are
// unique per key. Submission(g) is a valid continuation for it.
func Group(key, principal string, n int, now time.Time) correlation.Group {
	g := correlation.Group{Key: key, PrincipalID: principal, WorkspaceID: "ws", Model: "m", ConversationID: "conv-" + key,
		UpstreamGroupID: "grp-" + key, State: correlation.Pending, IssuedAt: now, PendingExpiresAt: now.Add(Policy.PendingTTL),
		ToolsHash: canon.ToolsBindingPrefix + "sha256:tools"}
	var calls []chat.ToolCall
	for i := range n {
		id := fmt.Sprintf("call_pmn_%s_%d", key, i)
		g.Calls = append(g.Calls, correlation.Call{PublicID: id, UpstreamID: fmt.Sprintf("up-%s-%d", key, i),
			Index: i, OriginalName: "tool", ArgumentsJSON: "{}"})
		calls = append(calls, chat.ToolCall{ID: id, Name: "tool", Arguments: "{}"})
	}
	prefix := prefixOf(calls)
	h, err := canon.TranscriptHashV2(prefix, nil, nil)
	if err != nil {
		panic(err)
	}
	g.TranscriptHash, g.TranscriptLength = h, len(prefix)
	return g
}

func prefixOf(calls []chat.ToolCall) []chat.Message {
	q := "question"
	return []chat.Message{{Role: chat.RoleUser, Content: &q}, {Role: chat.RoleAssistant, ToolCalls: calls}}
}

// Submission returns a valid continuation of g with the given result text.
func Submission(g correlation.Group, result string) correlation.Submission {
	var calls []chat.ToolCall
	var results []correlation.Result
	for _, c := range g.Calls {
		calls = append(calls, chat.ToolCall{ID: c.PublicID, Name: c.OriginalName, Arguments: c.ArgumentsJSON})
		results = append(results, correlation.Result{ID: c.PublicID, Content: result})
	}
	return correlation.Submission{PrincipalID: g.PrincipalID, WorkspaceID: g.WorkspaceID, Model: g.Model, ToolsHash: g.ToolsHash,
		Continuation: correlation.Continuation{Prefix: prefixOf(calls), Results: results}}
}

// Admit reserves room for g and admits it, as a tool turn does, failing t
// when the store refuses.
func Admit(t testing.TB, s ports.CorrelationStore, g correlation.Group, now time.Time) {
	t.Helper()
	ctx := context.Background()
	r, err := s.Reserve(ctx, len(g.Calls), now)
	if err != nil {
		t.Fatalf("reserve: %v", err)
	}
	if err := s.Admit(ctx, r, g); err != nil {
		t.Fatalf("admit: %v", err)
	}
}

// StateOf reads the state of the group with key through Update (writing
// nothing); a group that does not exist is REMOVED.
func StateOf(t testing.TB, s ports.CorrelationStore, key string) correlation.State {
	t.Helper()
	var st correlation.State
	_, err := s.Update(context.Background(), key, func(g *correlation.Group) (correlation.Decision, error) {
		st = g.State
		return correlation.Decision{}, errNoWrite
	})
	if errs.Has(err, errs.UnknownToolCall) {
		return correlation.Removed
	}
	if err != errNoWrite {
		t.Fatalf("read state: %v", err)
	}
	return st
}

var errNoWrite = fmt.Errorf("porttest: read only")

// StoreContract runs the correlation-store contract against newStore.
func StoreContract(t *testing.T, newStore NewStore) {
	limits := correlation.Limits{MaxGroups: 4, MaxCalls: 8, ResponseCacheBytes: 64}
	ctx := context.Background()

	t.Run("admitted ids resolve for their principal only", func(t *testing.T) {
		s := newStore(t, limits, Policy)
		Admit(t, s, Group("g1", "p1", 2, T0), T0)
		got, err := s.Resolve(ctx, "p1", []string{"call_pmn_g1_0", "call_pmn_g1_1", "call_pmn_nope"})
		if err != nil || len(got) != 2 || got["call_pmn_g1_0"] != "g1" {
			t.Fatalf("resolve: got %v, %v vs expected both ids of g1", got, err)
		}
		other, err := s.Resolve(ctx, "p2", []string{"call_pmn_g1_0"})
		if err != nil || len(other) != 0 {
			t.Fatalf("another principal: got %v vs expected nothing", other)
		}
	})

	t.Run("update writes only when the closure succeeds", func(t *testing.T) {
		s := newStore(t, limits, Policy)
		Admit(t, s, Group("g1", "p1", 1, T0), T0)
		_, err := s.Update(ctx, "g1", func(g *correlation.Group) (correlation.Decision, error) {
			g.State = correlation.Inflight
			return correlation.Decision{}, fmt.Errorf("refused")
		})
		if err == nil || StateOf(t, s, "g1") != correlation.Pending {
			t.Fatalf("failed closure: got state %s vs expected PENDING unchanged", StateOf(t, s, "g1"))
		}
		d, err := s.Update(ctx, "g1", func(g *correlation.Group) (correlation.Decision, error) {
			return g.Cancel(T0, Policy)
		})
		if err != nil {
			t.Fatal(err)
		}
		if d.Row != "C11" || d.To != correlation.Cancelled {
			t.Fatalf("update returned decision %s → %s vs expected the closure's C11 → CANCELLED", d.Row, d.To)
		}
		if StateOf(t, s, "g1") != correlation.Cancelled {
			t.Fatalf("successful closure: got %s vs expected CANCELLED", StateOf(t, s, "g1"))
		}
	})

	t.Run("an unknown key is unknown_tool_call", func(t *testing.T) {
		s := newStore(t, limits, Policy)
		_, err := s.Update(ctx, "missing", func(*correlation.Group) (correlation.Decision, error) { return correlation.Decision{}, nil })
		if !errs.Has(err, errs.UnknownToolCall) {
			t.Fatalf("got %v vs expected unknown_tool_call", err)
		}
	})

	t.Run("capacity refuses newer groups and never evicts pending ones", func(t *testing.T) {
		s := newStore(t, correlation.Limits{MaxGroups: 2, MaxCalls: 8, ResponseCacheBytes: 0}, Policy)
		Admit(t, s, Group("g1", "p1", 1, T0), T0)
		Admit(t, s, Group("g2", "p1", 1, T0), T0)
		if _, err := s.Reserve(ctx, 1, T0); !errs.Has(err, errs.CorrelationCapacityExceeded) {
			t.Fatalf("third group: got %v vs expected correlation_capacity_exceeded", err)
		}
		if StateOf(t, s, "g1") != correlation.Pending || StateOf(t, s, "g2") != correlation.Pending {
			t.Fatal("a pending group was evicted")
		}
		if _, err := s.Reserve(ctx, 1, T0.Add(Policy.PendingTTL)); err != nil {
			t.Fatalf("after the pending TTL, admission expires overdue groups: got %v", err)
		}
	})

	t.Run("check room tells a full store before anything is reserved", func(t *testing.T) {
		s := newStore(t, correlation.Limits{MaxGroups: 2, MaxCalls: 3, ResponseCacheBytes: 0}, Policy)
		room := func(calls int, now time.Time) bool {
			t.Helper()
			err := s.CheckRoom(ctx, "p1", calls, now)
			if err != nil && !errs.Has(err, errs.CorrelationCapacityExceeded) {
				t.Fatal(err)
			}
			return err == nil
		}
		if !room(1, T0) || room(4, T0) || room(0, T0) {
			t.Fatal("an empty store: room for 1 call, never for more calls than the limit or for none")
		}
		Admit(t, s, Group("g1", "p1", 2, T0), T0)
		if !room(1, T0) || room(2, T0) {
			t.Fatal("calls: 2 of 3 live, so room for 1 more call only")
		}
		r, err := s.Reserve(ctx, 1, T0)
		if err != nil {
			t.Fatal(err)
		}
		if room(1, T0) {
			t.Fatal("groups: 1 live + 1 reserved of 2, so no room")
		}
		if c, _ := s.Counts(ctx); c.ReservedGroups != 1 || c.LiveGroups != 1 {
			t.Fatalf("has room reserved or admitted something: %+v", c)
		}
		if err := s.Release(ctx, r); err != nil {
			t.Fatal(err)
		}
		if !room(1, T0) {
			t.Fatal("a released reservation gives its room back")
		}
		Admit(t, s, Group("g2", "p1", 1, T0), T0)
		if room(1, T0) {
			t.Fatal("two live groups of two: full")
		}
		if StateOf(t, s, "g1") != correlation.Pending || StateOf(t, s, "g2") != correlation.Pending {
			t.Fatal("asking for room changed a pending group")
		}
		if !room(1, T0.Add(Policy.PendingTTL)) {
			t.Fatal("after the pending TTL, overdue groups are expired and there is room again")
		}
	})

	t.Run("one key at its share never refuses another key's group", func(t *testing.T) {
		// Five groups of capacity, four per key: Bob fills his share, his next
		// group is refused naming the share (before it is sent and at its
		// admission), Alice's is admitted, and none of Bob's is evicted.
		l := correlation.Limits{MaxGroups: 5, MaxCalls: 10, MaxGroupsPerKey: 4}
		s := newStore(t, l, Policy)
		for i := range 4 {
			Admit(t, s, Group(fmt.Sprintf("bob%d", i), "bob", 1, T0), T0)
		}
		now := T0.Add(time.Minute)
		shareRefusal := func(what string, err error) {
			t.Helper()
			var se *correlation.ShareExceeded
			if !errs.Has(err, errs.CorrelationCapacityExceeded) || !errors.As(err, &se) {
				t.Fatalf("%s: got %v vs expected the key's share refusal", what, err)
			}
			if se.Groups != 4 || se.Calls != 8 || se.After != Policy.PendingTTL-time.Minute {
				t.Fatalf("%s: got %+v vs expected a share of 4 groups, 8 calls, free in %v", what, se, Policy.PendingTTL-time.Minute)
			}
		}
		shareRefusal("bob's check before sending", s.CheckRoom(ctx, "bob", 1, now))
		r, err := s.Reserve(ctx, 1, now)
		if err != nil {
			t.Fatalf("the pool has room: got %v", err)
		}
		shareRefusal("bob's admission", s.Admit(ctx, r, Group("bob4", "bob", 1, now)))
		if err := s.Release(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := s.CheckRoom(ctx, "alice", 1, now); err != nil {
			t.Fatalf("alice's check: got %v vs expected room", err)
		}
		Admit(t, s, Group("alice0", "alice", 1, now), now)
		for i := range 4 {
			if st := StateOf(t, s, fmt.Sprintf("bob%d", i)); st != correlation.Pending {
				t.Fatalf("bob's group %d: got %s vs expected PENDING (never evicted)", i, st)
			}
		}
		if c, _ := s.Counts(ctx); c.LiveGroups != 5 || c.ReservedGroups != 0 {
			t.Fatalf("counts: got %+v vs expected 5 live groups, nothing reserved", c)
		}
		// Bob's conversation moves past one of his groups: it is cancelled and
		// his share has room again at once.
		g := Group("bob0", "bob", 1, T0)
		_, err = s.Update(ctx, "bob0", func(gr *correlation.Group) (correlation.Decision, error) {
			return gr.MovedPast(now, Policy, map[string]bool{g.Calls[0].PublicID: true})
		})
		if err != nil || StateOf(t, s, "bob0") != correlation.Cancelled {
			t.Fatalf("moved past: got %v, %s vs expected CANCELLED", err, StateOf(t, s, "bob0"))
		}
		if err := s.CheckRoom(ctx, "bob", 1, now); err != nil {
			t.Fatalf("bob after his group was cancelled: got %v vs expected room", err)
		}
	})

	t.Run("a key's share counts its calls too", func(t *testing.T) {
		l := correlation.Limits{MaxGroups: 4, MaxCalls: 8, MaxGroupsPerKey: 2} // a share of 2 groups, 4 calls
		s := newStore(t, l, Policy)
		Admit(t, s, Group("bob0", "bob", 3, T0), T0)
		r, err := s.Reserve(ctx, 2, T0)
		if err != nil {
			t.Fatal(err)
		}
		var se *correlation.ShareExceeded
		if err := s.Admit(ctx, r, Group("bob1", "bob", 2, T0)); !errors.As(err, &se) {
			t.Fatalf("bob's 5th call: got %v vs expected the key's share refusal", err)
		}
		if err := s.Admit(ctx, r, Group("bob1", "bob", 1, T0)); err != nil {
			t.Fatalf("bob's 4th call, under the same reservation: got %v", err)
		}
	})

	t.Run("a reservation holds capacity until released", func(t *testing.T) {
		s := newStore(t, correlation.Limits{MaxGroups: 1, MaxCalls: 8, ResponseCacheBytes: 0}, Policy)
		r, err := s.Reserve(ctx, 2, T0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Reserve(ctx, 1, T0); !errs.Has(err, errs.CorrelationCapacityExceeded) {
			t.Fatalf("second reservation: got %v vs expected capacity exceeded", err)
		}
		if err := s.Release(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Reserve(ctx, 1, T0); err != nil {
			t.Fatalf("after release: got %v", err)
		}
	})

	t.Run("sweep expires, marks uncertain and removes", func(t *testing.T) {
		s := newStore(t, limits, Policy)
		Admit(t, s, Group("g1", "p1", 1, T0), T0)
		Admit(t, s, Group("g2", "p1", 1, T0), T0)
		claim(t, s, "g2", T0)
		rep, err := s.Sweep(ctx, T0.Add(Policy.PendingTTL))
		if err != nil || rep.Expired != 1 || rep.Uncertain != 1 {
			t.Fatalf("sweep: got %+v, %v vs expected 1 expired, 1 uncertain", rep, err)
		}
		rep, err = s.Sweep(ctx, T0.Add(Policy.PendingTTL+Policy.TerminalTTL))
		if err != nil || rep.Removed != 2 {
			t.Fatalf("second sweep: got %+v, %v vs expected 2 removed", rep, err)
		}
		if got, _ := s.Resolve(ctx, "p1", []string{"call_pmn_g1_0"}); len(got) != 0 {
			t.Fatal("a removed group still resolves")
		}
	})

	t.Run("counts report states and capacity", func(t *testing.T) {
		s := newStore(t, limits, Policy)
		Admit(t, s, Group("g1", "p1", 2, T0), T0)
		c, err := s.Counts(ctx)
		if err != nil || c.ByState[correlation.Pending] != 1 || c.LiveCalls != 2 || c.MaxGroups != 4 {
			t.Fatalf("counts: got %+v, %v", c, err)
		}
	})

	t.Run("pending lists the PENDING groups only, sorted", func(t *testing.T) {
		s := newStore(t, limits, Policy)
		for _, k := range []string{"g3", "g1", "g2"} {
			Admit(t, s, Group(k, "p1", 1, T0), T0)
		}
		claim(t, s, "g2", T0)
		keys, err := s.Pending(ctx)
		if err != nil || strings.Join(keys, ",") != "g1,g3" {
			t.Fatalf("pending: got %v, %v vs expected [g1 g3]", keys, err)
		}
	})

	t.Run("concurrent claims dispatch exactly once", func(t *testing.T) {
		s := newStore(t, limits, Policy)
		g1 := Group("g1", "p1", 1, T0)
		Admit(t, s, g1, T0)
		sub := Submission(g1, "result")
		var wins, inflight atomic.Int32
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, err := s.Update(ctx, "g1", func(g *correlation.Group) (correlation.Decision, error) {
					return g.Submit(T0, Policy, sub, fmt.Sprintf("a%d", i))
				})
				switch {
				case err == nil && d.Effect == correlation.EffectDispatch:
					wins.Add(1)
				case err == nil && d.Code == errs.ContinuationInflight:
					inflight.Add(1)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 || inflight.Load() != 31 {
			t.Fatalf("got %d dispatches and %d refusals vs expected 1 and 31", wins.Load(), inflight.Load())
		}
	})

	t.Run("stored transcript hashes keep their form", func(t *testing.T) {
		// A value-form record accepts a re-serialized echo after a round trip
		// through the store; a record of the exact form (stored by an earlier
		// build) is still checked byte for byte.
		s := newStore(t, limits, Policy)
		values := Group("g1", "p1", 1, T0)
		values.Calls[0].ArgumentsJSON = `{"a":1,"b":"x"}`
		exact := Group("g2", "p1", 1, T0)
		exact.Calls[0].ArgumentsJSON = values.Calls[0].ArgumentsJSON
		var err error
		if values.TranscriptHash, err = canon.TranscriptHashV2(Submission(values, "").Continuation.Prefix, nil, nil); err != nil {
			t.Fatal(err)
		}
		if exact.TranscriptHash, err = canon.TranscriptHash(Submission(exact, "").Continuation.Prefix); err != nil {
			t.Fatal(err)
		}
		Admit(t, s, values, T0)
		Admit(t, s, exact, T0)
		submit := func(g correlation.Group, args string) correlation.Decision {
			sub := Submission(g, "result")
			sub.Continuation.Prefix[1].ToolCalls[0].Arguments = args
			if sub.Echo, err = canon.PrepareEcho(sub.Continuation.Prefix, nil); err != nil {
				t.Fatal(err)
			}
			d, err := s.Update(ctx, g.Key, func(gr *correlation.Group) (correlation.Decision, error) {
				return gr.Submit(T0, Policy, sub, "a-"+g.Key)
			})
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		if d := submit(exact, `{"b":"x","a":1.0}`); d.Code != errs.ContinuationHistoryMismatch {
			t.Fatalf("exact record, re-serialized echo: got %q vs expected continuation_history_mismatch", d.Code)
		}
		if d := submit(exact, exact.Calls[0].ArgumentsJSON); d.Effect != correlation.EffectDispatch {
			t.Fatalf("exact record, identical echo: got %s %q vs expected a dispatch", d.Effect, d.Code)
		}
		if d := submit(values, `{ "b": "x", "a": 1.0 }`); d.Effect != correlation.EffectDispatch {
			t.Fatalf("value record, re-serialized echo: got %s %q vs expected a dispatch", d.Effect, d.Code)
		}
	})

	// Without the race detector too: every goroutine is released at once and
	// holds its copy for a while before deciding, so a store whose Update is
	// not atomic lets several of them claim, and the count shows it.
	t.Run("racing goroutines with slow closures dispatch exactly once", func(t *testing.T) {
		s := newStore(t, limits, Policy)
		g1 := Group("g1", "p1", 2, T0)
		Admit(t, s, g1, T0)
		sub := Submission(g1, "result")
		var dispatches atomic.Int32
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 24 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				d, err := s.Update(ctx, "g1", func(g *correlation.Group) (correlation.Decision, error) {
					time.Sleep(500 * time.Microsecond) // widen the window between read and write
					return g.Submit(T0, Policy, sub, fmt.Sprintf("attempt-%d", i))
				})
				if err == nil && d.Effect == correlation.EffectDispatch {
					dispatches.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if n := dispatches.Load(); n != 1 {
			t.Fatalf("got %d dispatches of one group vs expected exactly 1", n)
		}
		if StateOf(t, s, "g1") != correlation.Inflight {
			t.Fatalf("got %s vs expected INFLIGHT after the one claim", StateOf(t, s, "g1"))
		}
	})

	t.Run("cached responses stay within the budget", func(t *testing.T) {
		s := newStore(t, correlation.Limits{MaxGroups: 4, MaxCalls: 8, ResponseCacheBytes: 10}, Policy)
		for _, k := range []string{"g1", "g2"} {
			Admit(t, s, Group(k, "p1", 1, T0), T0)
			claim(t, s, k, T0)
			if _, err := s.Update(ctx, k, func(g *correlation.Group) (correlation.Decision, error) {
				return g.Complete(T0, Policy, []byte("12345678"), "d")
			}); err != nil {
				t.Fatal(err)
			}
		}
		c, _ := s.Counts(ctx)
		if c.CacheBytes != 8 {
			t.Fatalf("cache bytes: got %d vs expected 8 (the second response is over budget)", c.CacheBytes)
		}
	})
}

// claim moves the group with key to INFLIGHT through a valid submission.
func claim(t *testing.T, s ports.CorrelationStore, key string, now time.Time) {
	t.Helper()
	_, err := s.Update(context.Background(), key, func(g *correlation.Group) (correlation.Decision, error) {
		d, err := g.Submit(now, Policy, Submission(*g, "result"), "attempt")
		if err == nil && d.Effect != correlation.EffectDispatch {
			err = fmt.Errorf("claim: got %s", d.Row)
		}
		return correlation.Decision{}, err
	})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
}

// TypicalGroup is the group the store benchmarks use: two calls with
// ~100-byte argument strings and realistic id and hash sizes; its transcript
// hash matches Submission(g, …), so a claim on it wins.
func TypicalGroup(i int) correlation.Group {
	g := Group(fmt.Sprintf("key-%022d", i), "principal-hmac-0123456789012345678901234567", 2, T0)
	for j := range g.Calls {
		g.Calls[j].PublicID = fmt.Sprintf("call_pmn_%032d", i*2+j)
		g.Calls[j].UpstreamID = fmt.Sprintf("tc-%024x", i*2+j)
		g.Calls[j].UpstreamGroupID = fmt.Sprintf("grp-%024x", i)
		g.Calls[j].OriginalName = "get_weather"
		g.Calls[j].ArgumentsJSON = `{"city":"` + strings.Repeat("x", 88) + `"}`
		g.Calls[j].ArgumentsHash = "sha256:" + strings.Repeat("a", 64)
		g.Calls[j].SchemaHash = "sha256:" + strings.Repeat("b", 64)
	}
	g.ConversationID = fmt.Sprintf("conv-%032x", i)
	g.ToolsHash = canon.ToolsBindingPrefix + "sha256:" + strings.Repeat("c", 64)
	h, err := canon.TranscriptHashV2(Submission(g, "").Continuation.Prefix, nil, nil) // the call ids changed
	if err != nil {
		panic(err)
	}
	g.TranscriptHash = h
	return g
}
