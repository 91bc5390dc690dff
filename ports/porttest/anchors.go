package porttest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/ports"
)

// NewAnchorStore returns an empty anchor store with the given limits and
// policy. Stores are expected to be independent between calls.
type NewAnchorStore func(t *testing.T, l conversation.Limits, p conversation.Policy) ports.AnchorStore

// AnchorPolicy is the TTL policy the anchor suite uses.
var AnchorPolicy = conversation.Policy{TTL: 30 * time.Minute, ClaimTTL: 150 * time.Second, TerminalTTL: 15 * time.Minute}

// AnchorRequest is the claim request that matches Anchor(…).
var AnchorRequest = conversation.Request{WorkspaceID: "ws", Model: "m", ToolsHash: "sha256:tools", InstructionsHash: "sha256:instructions"}

// Anchor returns an ACTIVE anchor of principal for the transcript hash, created at now.
func Anchor(principal, hash string, now time.Time) conversation.Anchor {
	return conversation.Anchor{PrincipalID: principal, WorkspaceID: "ws", Model: "m", ToolsHash: "sha256:tools", InstructionsHash: "sha256:instructions",
		TranscriptHash: hash, TranscriptLength: 4, ConversationID: "conv-" + hash, State: conversation.Active,
		CreatedAt: now, ExpiresAt: now.Add(AnchorPolicy.TTL)}
}

// ClaimAnchor runs one lookup of (principal, hash) as the gateway does and
// returns the decision and the anchor as claimed; a missing anchor is the
// REMOVED row.
func ClaimAnchor(ctx context.Context, s ports.AnchorStore, principal, hash string, now time.Time, claimID string) (conversation.Decision, conversation.Anchor, error) {
	var got conversation.Anchor
	d, err := s.Update(ctx, principal, hash, func(a *conversation.Anchor) (conversation.Decision, error) {
		defer func() { got = *a }()
		return a.Claim(now, AnchorPolicy, AnchorRequest, claimID)
	})
	if errors.Is(err, conversation.ErrNoAnchor) {
		return conversation.LookupMissing(), conversation.Anchor{}, nil
	}
	return d, got, err
}

func anchorState(t *testing.T, s ports.AnchorStore, principal, hash string) conversation.State {
	t.Helper()
	var st conversation.State
	_, err := s.Update(context.Background(), principal, hash, func(a *conversation.Anchor) (conversation.Decision, error) {
		st = a.State
		return conversation.Decision{}, errNoWrite
	})
	if errors.Is(err, conversation.ErrNoAnchor) {
		return conversation.Removed
	}
	if err != errNoWrite {
		t.Fatalf("read anchor state: %v", err)
	}
	return st
}

func recordAnchor(t *testing.T, s ports.AnchorStore, a conversation.Anchor, now time.Time) {
	t.Helper()
	if err := s.Record(context.Background(), a, now); err != nil {
		t.Fatalf("record: %v", err)
	}
}

// AnchorContract runs the anchor-store contract against newStore.
func AnchorContract(t *testing.T, newStore NewAnchorStore) {
	limits := conversation.Limits{MaxAnchors: 8}
	ctx := context.Background()

	t.Run("a recorded anchor is continued once, then never again", func(t *testing.T) {
		s := newStore(t, limits, AnchorPolicy)
		recordAnchor(t, s, Anchor("p1", "h1", T0), T0)
		d, a, err := ClaimAnchor(ctx, s, "p1", "h1", T0.Add(time.Second), "claim-1")
		if err != nil || d.Effect != conversation.EffectContinue || a.ConversationID != "conv-h1" || a.ClaimID != "claim-1" {
			t.Fatalf("first lookup: got %+v, %+v, %v vs expected a continuation of conv-h1", d, a, err)
		}
		if d, _, _ := ClaimAnchor(ctx, s, "p1", "h1", T0.Add(time.Second), "claim-2"); d.Reason != conversation.ReasonRaced {
			t.Fatalf("second lookup while claimed: got %+v vs expected raced", d)
		}
		if _, err := s.Update(ctx, "p1", "h1", func(a *conversation.Anchor) (conversation.Decision, error) {
			return a.Settle(conversation.Complete, "claim-1", T0.Add(2*time.Second), AnchorPolicy)
		}); err != nil {
			t.Fatal(err)
		}
		if d, _, _ := ClaimAnchor(ctx, s, "p1", "h1", T0.Add(3*time.Second), "claim-3"); d.Reason != conversation.ReasonAlreadyContinued {
			t.Fatalf("lookup after the continuation: got %+v vs expected already_continued", d)
		}
	})

	t.Run("anchors are the principal's own", func(t *testing.T) {
		s := newStore(t, limits, AnchorPolicy)
		recordAnchor(t, s, Anchor("p1", "h1", T0), T0)
		if d, _, err := ClaimAnchor(ctx, s, "p2", "h1", T0, "c"); err != nil || d.Row != "A22" {
			t.Fatalf("another principal: got %+v, %v vs expected no anchor", d, err)
		}
		if st := anchorState(t, s, "p1", "h1"); st != conversation.Active {
			t.Fatalf("the owner's anchor: got %s vs expected ACTIVE", st)
		}
	})

	t.Run("update writes only when the closure succeeds", func(t *testing.T) {
		s := newStore(t, limits, AnchorPolicy)
		recordAnchor(t, s, Anchor("p1", "h1", T0), T0)
		_, err := s.Update(ctx, "p1", "h1", func(a *conversation.Anchor) (conversation.Decision, error) {
			a.State = conversation.Claimed
			return conversation.Decision{}, fmt.Errorf("refused")
		})
		if err == nil || anchorState(t, s, "p1", "h1") != conversation.Active {
			t.Fatal("a failed closure changed the anchor")
		}
		d, err := s.Update(ctx, "p1", "h1", func(a *conversation.Anchor) (conversation.Decision, error) {
			return a.Drop(T0, AnchorPolicy)
		})
		if err != nil || d.Row != "A06" || d.To != conversation.Removed {
			t.Fatalf("update returned decision %s → %s, %v vs expected the closure's A06 → REMOVED", d.Row, d.To, err)
		}
		if _, err := s.Update(ctx, "p1", "missing", func(*conversation.Anchor) (conversation.Decision, error) { return conversation.Decision{}, nil }); !errors.Is(err, conversation.ErrNoAnchor) {
			t.Fatalf("unknown key: got %v vs expected ErrNoAnchor", err)
		}
	})

	t.Run("a newer anchor supersedes an older one of the same transcript, never a claimed one", func(t *testing.T) {
		s := newStore(t, limits, AnchorPolicy)
		recordAnchor(t, s, Anchor("p1", "h1", T0), T0)
		newer := Anchor("p1", "h1", T0.Add(time.Second))
		newer.ConversationID = "conv-newer"
		recordAnchor(t, s, newer, T0.Add(time.Second))
		d, a, err := ClaimAnchor(ctx, s, "p1", "h1", T0.Add(2*time.Second), "c1")
		if err != nil || d.Effect != conversation.EffectContinue || a.ConversationID != "conv-newer" {
			t.Fatalf("after superseding: got %+v, %q, %v vs expected to continue conv-newer", d, a.ConversationID, err)
		}
		if err := s.Record(ctx, Anchor("p1", "h1", T0.Add(3*time.Second)), T0.Add(3*time.Second)); !errors.Is(err, conversation.ErrBusy) {
			t.Fatalf("recording over a claimed anchor: got %v vs expected ErrBusy", err)
		}
		if st := anchorState(t, s, "p1", "h1"); st != conversation.Claimed {
			t.Fatalf("the claimed anchor: got %s vs expected CLAIMED", st)
		}
	})

	t.Run("capacity drops tombstones first, then the oldest active anchor, never a claimed one", func(t *testing.T) {
		s := newStore(t, conversation.Limits{MaxAnchors: 3}, AnchorPolicy)
		for i, h := range []string{"h1", "h2", "h3"} {
			at := T0.Add(time.Duration(i) * time.Second)
			recordAnchor(t, s, Anchor("p1", h, at), at)
		}
		// h2 becomes a tombstone (continued and completed).
		if d, _, err := ClaimAnchor(ctx, s, "p1", "h2", T0.Add(4*time.Second), "c2"); err != nil || d.Effect != conversation.EffectContinue {
			t.Fatalf("claim h2: %+v %v", d, err)
		}
		if _, err := s.Update(ctx, "p1", "h2", func(a *conversation.Anchor) (conversation.Decision, error) {
			return a.Settle(conversation.Complete, "c2", T0.Add(4*time.Second), AnchorPolicy)
		}); err != nil {
			t.Fatal(err)
		}
		recordAnchor(t, s, Anchor("p1", "h4", T0.Add(5*time.Second)), T0.Add(5*time.Second))
		if anchorState(t, s, "p1", "h2") != conversation.Removed || anchorState(t, s, "p1", "h1") != conversation.Active {
			t.Fatal("a full store must drop its tombstone before any active anchor")
		}
		recordAnchor(t, s, Anchor("p1", "h5", T0.Add(6*time.Second)), T0.Add(6*time.Second))
		if anchorState(t, s, "p1", "h1") != conversation.Removed {
			t.Fatal("then the oldest active anchor")
		}
		for _, h := range []string{"h3", "h4", "h5"} {
			if d, _, err := ClaimAnchor(ctx, s, "p1", h, T0.Add(7*time.Second), "c-"+h); err != nil || d.Effect != conversation.EffectContinue {
				t.Fatalf("claim %s: %+v %v", h, d, err)
			}
		}
		if err := s.Record(ctx, Anchor("p1", "h6", T0.Add(8*time.Second)), T0.Add(8*time.Second)); !errors.Is(err, conversation.ErrFull) {
			t.Fatalf("every anchor claimed: got %v vs expected ErrFull", err)
		}
		for _, h := range []string{"h3", "h4", "h5"} {
			if anchorState(t, s, "p1", h) != conversation.Claimed {
				t.Fatalf("claimed anchor %s was dropped", h)
			}
		}
	})

	t.Run("a full store drops the recording principal's own anchors first and keeps shares equal", func(t *testing.T) {
		s := newStore(t, conversation.Limits{MaxAnchors: 3}, AnchorPolicy)
		at := func(i int) time.Time { return T0.Add(time.Duration(i) * time.Second) }
		recordAnchor(t, s, Anchor("victim", "v1", at(0)), at(0)) // a long conversation's one anchor
		for i, h := range []string{"a1", "a2", "a3", "a4", "a5", "a6"} {
			recordAnchor(t, s, Anchor("other", h, at(i+1)), at(i+1)) // another key's cheap first turns
		}
		if anchorState(t, s, "victim", "v1") != conversation.Active {
			t.Fatal("another principal's first turns dropped the victim's anchor")
		}
		if anchorState(t, s, "other", "a5") != conversation.Active || anchorState(t, s, "other", "a6") != conversation.Active ||
			anchorState(t, s, "other", "a4") != conversation.Removed {
			t.Fatal("the recording principal's own oldest anchor must make room")
		}
		// The victim records again: the other principal holds more, so it gives way.
		recordAnchor(t, s, Anchor("victim", "v2", at(10)), at(10))
		if anchorState(t, s, "other", "a5") != conversation.Removed || anchorState(t, s, "victim", "v1") != conversation.Active {
			t.Fatal("the principal holding the most anchors gives way")
		}
		// Now the victim holds more: its own oldest goes.
		recordAnchor(t, s, Anchor("victim", "v3", at(11)), at(11))
		if anchorState(t, s, "victim", "v1") != conversation.Removed || anchorState(t, s, "other", "a6") != conversation.Active {
			t.Fatal("a principal holding the most anchors replaces its own")
		}
	})

	t.Run("on a tie the recording principal gives way, not another", func(t *testing.T) {
		s := newStore(t, conversation.Limits{MaxAnchors: 4}, AnchorPolicy)
		at := func(i int) time.Time { return T0.Add(time.Duration(i) * time.Second) }
		// "a" has the smaller id and the oldest anchors: neither makes it give
		// way when "b", holding as many, records.
		for i, h := range []string{"a1", "a2"} {
			recordAnchor(t, s, Anchor("a", h, at(i)), at(i))
		}
		for i, h := range []string{"b1", "b2", "b3"} {
			recordAnchor(t, s, Anchor("b", h, at(i+2)), at(i+2))
		}
		if anchorState(t, s, "b", "b1") != conversation.Removed || anchorState(t, s, "a", "a1") != conversation.Active ||
			anchorState(t, s, "a", "a2") != conversation.Active {
			t.Fatal("on a tie the recording principal's own oldest anchor makes room")
		}
	})

	t.Run("re-recording a transcript at capacity drops nothing else", func(t *testing.T) {
		s := newStore(t, conversation.Limits{MaxAnchors: 3}, AnchorPolicy)
		for i, h := range []string{"h1", "h2", "h3"} {
			at := T0.Add(time.Duration(i) * time.Second)
			recordAnchor(t, s, Anchor("p1", h, at), at)
		}
		recordAnchor(t, s, Anchor("p1", "h2", T0.Add(5*time.Second)), T0.Add(5*time.Second))
		for _, h := range []string{"h1", "h2", "h3"} {
			if anchorState(t, s, "p1", h) != conversation.Active {
				t.Fatalf("anchor %s dropped: the re-recorded one took its own place", h)
			}
		}
	})

	t.Run("sweep expires, retires overdue claims and removes tombstones", func(t *testing.T) {
		s := newStore(t, limits, AnchorPolicy)
		recordAnchor(t, s, Anchor("p1", "h1", T0), T0)
		recordAnchor(t, s, Anchor("p1", "h2", T0), T0)
		if _, _, err := ClaimAnchor(ctx, s, "p1", "h2", T0, "c"); err != nil {
			t.Fatal(err)
		}
		rep, err := s.Sweep(ctx, T0.Add(AnchorPolicy.TTL))
		if err != nil || rep.Expired != 1 || rep.Retired != 1 {
			t.Fatalf("sweep: got %+v, %v vs expected 1 expired, 1 retired", rep, err)
		}
		if d, _, _ := ClaimAnchor(ctx, s, "p1", "h1", T0.Add(AnchorPolicy.TTL), "c2"); d.Reason != conversation.ReasonExpired {
			t.Fatalf("an expired anchor: got %+v vs expected expired", d)
		}
		rep, err = s.Sweep(ctx, T0.Add(AnchorPolicy.TTL+AnchorPolicy.TerminalTTL))
		if err != nil || rep.Removed != 2 {
			t.Fatalf("second sweep: got %+v, %v vs expected 2 removed", rep, err)
		}
		if c, _ := s.Counts(ctx); c.Anchors != 0 {
			t.Fatalf("after removal: %+v", c)
		}
	})

	t.Run("counts report states and bytes", func(t *testing.T) {
		s := newStore(t, limits, AnchorPolicy)
		a := Anchor("p1", "h1", T0)
		recordAnchor(t, s, a, T0)
		recordAnchor(t, s, Anchor("p1", "h2", T0), T0)
		if _, _, err := ClaimAnchor(ctx, s, "p1", "h2", T0, "c"); err != nil {
			t.Fatal(err)
		}
		c, err := s.Counts(ctx)
		if err != nil || c.ByState[conversation.Active] != 1 || c.ByState[conversation.Claimed] != 1 || c.Anchors != 2 ||
			c.MaxAnchors != 8 || c.Bytes < 2*a.Bytes() {
			t.Fatalf("counts: got %+v, %v", c, err)
		}
	})

	t.Run("concurrent lookups continue exactly once", func(t *testing.T) {
		s := newStore(t, limits, AnchorPolicy)
		recordAnchor(t, s, Anchor("p1", "h1", T0), T0)
		var wins, raced atomic.Int32
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, _, err := ClaimAnchor(ctx, s, "p1", "h1", T0, fmt.Sprintf("c%d", i))
				switch {
				case err == nil && d.Effect == conversation.EffectContinue:
					wins.Add(1)
				case err == nil && d.Reason == conversation.ReasonRaced:
					raced.Add(1)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 || raced.Load() != 31 {
			t.Fatalf("got %d continuations and %d raced vs expected 1 and 31", wins.Load(), raced.Load())
		}
	})
}

// BenchAnchorTurn measures the anchor-store work of one continued turn — the
// lookup that claims the anchor, the settlement at its proven end and the
// record of the extended transcript's new anchor — against s. Hashes have
// their real sizes.
func BenchAnchorTurn(b *testing.B, s ports.AnchorStore) {
	ctx := context.Background()
	hash := func(i int) string { return fmt.Sprintf("sha256:%064d", i) }
	if err := s.Record(ctx, Anchor("principal-hmac-0123456789012345678901234567", hash(0), T0), T0); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		p, h := "principal-hmac-0123456789012345678901234567", hash(i)
		claimID := fmt.Sprintf("claim-%024d", i)
		d, _, err := ClaimAnchor(ctx, s, p, h, T0, claimID)
		if err != nil || d.Effect != conversation.EffectContinue {
			b.Fatalf("claim %d: %+v %v", i, d, err)
		}
		if _, err := s.Update(ctx, p, h, func(a *conversation.Anchor) (conversation.Decision, error) {
			return a.Settle(conversation.Complete, claimID, T0, AnchorPolicy)
		}); err != nil {
			b.Fatal(err)
		}
		if err := s.Record(ctx, Anchor(p, hash(i+1), T0), T0); err != nil {
			b.Fatal(err)
		}
	}
}
