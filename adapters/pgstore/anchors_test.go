package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

func TestPostgresAnchorStorePassesTheAnchorContract(t *testing.T) {
	baseURL(t)
	porttest.AnchorContract(t, func(t *testing.T, l conversation.Limits, p conversation.Policy) ports.AnchorStore {
		u := freshSchema(t)
		s := open(t, u, limits, porttest.Policy)
		t.Cleanup(func() { checkAnchorUsage(t, u) })
		return s.Anchors(l, p)
	})
}

// checkAnchorUsage verifies that the accounting row matches the anchors.
func checkAnchorUsage(t *testing.T, u string) {
	t.Helper()
	var n, rows, b, bytes int64
	query(t, u, `SELECT u.anchors, (SELECT count(*) FROM conversation_anchors), u.bytes,
		(SELECT coalesce(sum(bytes), 0) FROM conversation_anchors) FROM conversation_usage u`, &n, &rows, &b, &bytes)
	if n != rows || b != bytes {
		t.Errorf("anchor usage row says %d anchors, %d bytes; the table holds %d, %d", n, b, rows, bytes)
	}
}

func TestAConversationStartedOnOneReplicaContinuesOnAnother(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := conversation.Limits{MaxAnchors: 100}
	a := open(t, u, limits, porttest.Policy).Anchors(l, porttest.AnchorPolicy)
	b := open(t, u, limits, porttest.Policy).Anchors(l, porttest.AnchorPolicy)
	ctx := context.Background()
	is.NoErr(a.Record(ctx, porttest.Anchor("p1", "h1", porttest.T0), porttest.T0)) // replica A anchors the answer
	d, got, err := porttest.ClaimAnchor(ctx, b, "p1", "h1", porttest.T0, "claim-b")
	is.NoErr(err)
	is.Equal(d.Effect, conversation.EffectContinue) // replica B continues it
	is.Equal(got.ConversationID, "conv-h1")         // in the same upstream conversation
	d, _, err = porttest.ClaimAnchor(ctx, a, "p1", "h1", porttest.T0, "claim-a")
	is.NoErr(err)
	is.Equal(d.Reason, conversation.ReasonRaced) // and replica A sees the claim

	// 32 lookups spread over both replicas: one continuation.
	is.NoErr(a.Record(ctx, porttest.Anchor("p1", "h2", porttest.T0), porttest.T0))
	var wins, raced atomic.Int32
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			d, _, err := porttest.ClaimAnchor(ctx, s, "p1", "h2", porttest.T0, fmt.Sprintf("c%d", i))
			switch {
			case err == nil && d.Effect == conversation.EffectContinue:
				wins.Add(1)
			case err == nil && d.Reason == conversation.ReasonRaced:
				raced.Add(1)
			}
		}()
	}
	wg.Wait()
	is.Equal(wins.Load(), int32(1))   // exactly one continuation across replicas
	is.Equal(raced.Load(), int32(31)) // every other lookup starts fresh
	checkAnchorUsage(t, u)
}
