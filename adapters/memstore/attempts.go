package memstore

import (
	"context"
	"sync"
	"time"

	"github.com/pmgate/pmgate/ports"
)

// Attempts is the ports.AttemptStore of one process: the records under one
// mutex, bounded by a byte budget. Expired records are dropped when their key
// is read and, when a new record would not fit, by a sweep of all of them
// (only then: the sweep is linear, the budget bounds its length).
type Attempts struct {
	mu      sync.Mutex
	max     int64
	bytes   int64
	records map[string]ports.Attempt
}

var _ ports.AttemptStore = (*Attempts)(nil)

// NewAttempts returns an empty store whose records take at most maxBytes.
func NewAttempts(maxBytes int64) *Attempts {
	return &Attempts{max: maxBytes, records: map[string]ports.Attempt{}}
}

// live returns key's record, dropping it when it expired.
func (s *Attempts) live(key string, now time.Time) (ports.Attempt, bool) {
	a, ok := s.records[key]
	if ok && !a.Expires.After(now) {
		s.drop(key, a)
		return ports.Attempt{}, false
	}
	return a, ok
}

func (s *Attempts) drop(key string, a ports.Attempt) {
	delete(s.records, key)
	s.bytes -= a.Size()
}

// fits reports whether n more bytes fit, sweeping the expired records first
// when they would not.
func (s *Attempts) fits(n int64, now time.Time) bool {
	if s.bytes+n <= s.max {
		return true
	}
	for k, a := range s.records {
		if !a.Expires.After(now) {
			s.drop(k, a)
		}
	}
	return s.bytes+n <= s.max
}

// Begin implements ports.AttemptStore.
func (s *Attempts) Begin(_ context.Context, a ports.Attempt, replaceDone bool, now time.Time) (ports.Attempt, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.live(a.Key, now)
	if ok && (!old.Done || !replaceDone) {
		return old, false, nil
	}
	var freed int64
	if ok {
		freed = old.Size()
	}
	if !s.fits(a.Size()-freed, now) {
		return ports.Attempt{}, false, ports.ErrAttemptsFull
	}
	if cur, ok := s.records[a.Key]; ok { // still there after the sweep: the replaced record
		s.drop(a.Key, cur)
	}
	a.Done, a.Code, a.Answer, a.Awaited = false, "", nil, false
	s.records[a.Key] = a
	s.bytes += a.Size()
	return a, true, nil
}

// Get implements ports.AttemptStore.
func (s *Attempts) Get(_ context.Context, key string, now time.Time) (ports.Attempt, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.live(key, now)
	return a, ok, nil
}

// Finish implements ports.AttemptStore.
func (s *Attempts) Finish(_ context.Context, key, token, code string, answer []byte, expires, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.records[key]
	if !ok || a.Token != token || a.Done {
		return nil
	}
	s.drop(key, a)
	a.Done, a.Code, a.Expires = true, code, expires
	a.Answer = nil
	if answer != nil && s.fits(a.Size()+int64(len(answer)), now) {
		a.Answer = answer
	}
	s.records[key] = a
	s.bytes += a.Size()
	return nil
}

// Abandon implements ports.AttemptStore.
func (s *Attempts) Abandon(_ context.Context, key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.records[key]; ok && a.Token == token && !a.Done {
		s.drop(key, a)
	}
	return nil
}

// Await implements ports.AttemptStore.
func (s *Attempts) Await(_ context.Context, key, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.records[key]; ok && a.Token == token && !a.Done {
		a.Awaited = true
		s.records[key] = a
	}
	return nil
}
