package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/ports"
)

// Anchors is the in-memory ports.AnchorStore: the pure conversation.Registry
// behind one mutex, so the ACTIVE→CLAIMED claim is atomic within one process.
type Anchors struct {
	mu  sync.Mutex
	reg *conversation.Registry
}

var _ ports.AnchorStore = (*Anchors)(nil)

// NewAnchors returns an empty anchor store.
func NewAnchors(l conversation.Limits, p conversation.Policy) *Anchors {
	return &Anchors{reg: conversation.NewRegistry(l, p)}
}

// Record implements ports.AnchorStore.
func (s *Anchors) Record(_ context.Context, a conversation.Anchor, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.reg.Record(a, now)
	return err
}

// Update implements ports.AnchorStore: fn runs on a copy under the lock.
func (s *Anchors) Update(_ context.Context, principalID, transcriptHash string, fn func(a *conversation.Anchor) (conversation.Decision, error)) (conversation.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reg.Update(conversation.Key{PrincipalID: principalID, TranscriptHash: transcriptHash}, fn)
}

// Sweep implements ports.AnchorStore.
func (s *Anchors) Sweep(_ context.Context, now time.Time) (conversation.SweepReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rep, _ := s.reg.Sweep(now)
	return rep, nil
}

// Counts implements ports.AnchorStore.
func (s *Anchors) Counts(context.Context) (conversation.Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reg.Counts(), nil
}
