package memstore_test

import (
	"testing"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/ports/porttest"
)

// BenchmarkAnchorTurn: the anchor-store work of one continued turn (claim,
// settle, record), with the store at its default capacity so that records
// drop old tombstones.
func BenchmarkAnchorTurn(b *testing.B) {
	porttest.BenchAnchorTurn(b, memstore.NewAnchors(conversation.Limits{MaxAnchors: 10000}, porttest.AnchorPolicy))
}
