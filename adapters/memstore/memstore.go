// Package memstore is the embedded default correlation store: the pure
// correlation.Registry behind one mutex (the app's sweeper applies time to it).
// Each operation is atomic with respect to every other, which makes the
// PENDING→INFLIGHT claim atomic within one process (docs/CORRELATION.md).
package memstore

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/ports"
)

// Store is an in-memory ports.CorrelationStore.
type Store struct {
	mu     sync.Mutex
	reg    *correlation.Registry
	nextID uint64
	closed bool
}

var _ ports.CorrelationStore = (*Store)(nil)

// New returns an empty store.
func New(l correlation.Limits, p correlation.Policy) *Store {
	return &Store{reg: correlation.NewRegistry(l, p)}
}

// Reserve implements ports.CorrelationStore.
func (s *Store) Reserve(_ context.Context, calls int, now time.Time) (ports.Reservation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	id := "r" + strconv.FormatUint(s.nextID, 10)
	if _, err := s.reg.Reserve(id, calls, now); err != nil {
		return ports.Reservation{}, err
	}
	return ports.Reservation{ID: id, Calls: calls}, nil
}

// CheckRoom implements ports.CorrelationStore.
func (s *Store) CheckRoom(_ context.Context, principalID string, calls int, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reg.CheckRoom(principalID, calls, now)
}

// Release implements ports.CorrelationStore.
func (s *Store) Release(_ context.Context, r ports.Reservation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reg.Release(r.ID)
	return nil
}

// Admit implements ports.CorrelationStore.
func (s *Store) Admit(_ context.Context, r ports.Reservation, g correlation.Group) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reg.Admit(r.ID, g)
}

// Resolve implements ports.CorrelationStore.
func (s *Store) Resolve(_ context.Context, principalID string, publicIDs []string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reg.Resolve(principalID, publicIDs), nil
}

// Update implements ports.CorrelationStore: fn runs on a copy under the lock and
// the copy is written only when fn returns nil.
func (s *Store) Update(_ context.Context, key string, fn func(g *correlation.Group) (correlation.Decision, error)) (correlation.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reg.Update(key, fn)
}

// Sweep implements ports.CorrelationStore.
func (s *Store) Sweep(_ context.Context, now time.Time) (correlation.SweepReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rep, _ := s.reg.Sweep(now)
	return rep, nil
}

// Counts implements ports.CorrelationStore.
func (s *Store) Counts(context.Context) (correlation.Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reg.Counts(), nil
}

// Pending implements ports.CorrelationStore.
func (s *Store) Pending(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for _, k := range s.reg.Keys() {
		if g, ok := s.reg.Get(k); ok && g.State == correlation.Pending {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// Shared implements ports.CorrelationStore: the records live in this process
// only, so nobody can continue its pending groups once it stops.
func (*Store) Shared() bool { return false }
