package memstore_test

import (
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

func TestMemoryStorePassesTheStoreContract(t *testing.T) {
	porttest.StoreContract(t, func(t *testing.T, l correlation.Limits, p correlation.Policy) ports.CorrelationStore {
		return memstore.New(l, p)
	})
}

func TestShutdownCancelsPendingGroupsOnly(t *testing.T) {
	is := is.New(t)
	s := memstore.New(correlation.Limits{MaxGroups: 4, MaxCalls: 8}, porttest.Policy)
	for _, k := range []string{"g1", "g2"} {
		g := porttest.Group(k, "p1", 1, porttest.T0)
		r, err := s.Reserve(t.Context(), 1, porttest.T0)
		is.NoErr(err)
		is.NoErr(s.Admit(t.Context(), r, g))
	}
	is.NoErr(s.Update(t.Context(), "g2", func(g *correlation.Group) error {
		_, err := g.Submit(porttest.T0, porttest.Policy, porttest.Submission(*g, "r"), "a")
		return err
	}))
	n, c := s.Shutdown(porttest.T0.Add(time.Second))
	is.Equal(n, 1)                                // one pending group cancelled
	is.Equal(c.ByState[correlation.Cancelled], 1) // it is a tombstone now
	is.Equal(c.ByState[correlation.Inflight], 1)  // the in-flight one is left to its request
}

func TestMemoryAnchorStorePassesTheAnchorContract(t *testing.T) {
	porttest.AnchorContract(t, func(t *testing.T, l conversation.Limits, p conversation.Policy) ports.AnchorStore {
		return memstore.NewAnchors(l, p)
	})
}
