package memstore_test

import (
	"testing"

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

func TestMemoryAnchorStorePassesTheAnchorContract(t *testing.T) {
	porttest.AnchorContract(t, func(t *testing.T, l conversation.Limits, p conversation.Policy) ports.AnchorStore {
		return memstore.NewAnchors(l, p)
	})
}

func TestMemoryStoreBehavesAsTheRegistryUnderRacingClaims(t *testing.T) {
	porttest.StoreMachine(t, func(l correlation.Limits, p correlation.Policy) (ports.CorrelationStore, func()) {
		return memstore.New(l, p), func() {}
	})
}
