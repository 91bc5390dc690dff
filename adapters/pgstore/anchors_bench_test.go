package pgstore_test

import (
	"testing"

	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/ports/porttest"
)

// BenchmarkAnchorTurn: the anchor-store work of one continued turn (claim,
// settle, record: three transactions) against the local PostgreSQL.
func BenchmarkAnchorTurn(b *testing.B) {
	u := freshSchema(b)
	s := open(b, u, limits, porttest.Policy)
	porttest.BenchAnchorTurn(b, s.Anchors(conversation.Limits{MaxAnchors: 10000}, porttest.AnchorPolicy))
}
