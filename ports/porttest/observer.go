package porttest

import (
	"context"
	"slices"
	"sync"

	"github.com/pmgate/pmgate/ports"
)

// Observed is a fake ports.Observer that records every event it is handed.
// It is safe for concurrent use.
type Observed struct {
	mu     sync.Mutex
	events []ports.Event
}

var _ ports.Observer = (*Observed)(nil)

// Observe implements ports.Observer.
func (o *Observed) Observe(_ context.Context, e ports.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}

// Events returns the events recorded so far, in order.
func (o *Observed) Events() []ports.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.events)
}

// Take returns the events recorded so far and forgets them.
func (o *Observed) Take() []ports.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.events
	o.events = nil
	return out
}

// Has reports whether e was recorded.
func (o *Observed) Has(e ports.Event) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Contains(o.events, e)
}
