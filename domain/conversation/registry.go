package conversation

import (
	"sort"
	"time"

	"github.com/cockroachdb/errors"
)

// Limits bound the anchors a store keeps.
type Limits struct {
	MaxAnchors int // stored records, tombstones included (CONVERSATION_MAX_ANCHORS)
}

// Counts reports anchors per state and their accounted bytes, without ids.
type Counts struct {
	ByState    map[State]int
	Anchors    int
	Bytes      int
	MaxAnchors int
}

// SweepReport counts what one sweep changed.
type SweepReport struct {
	Expired int
	Retired int
	Removed int
}

// Errors of Record and Update. None reaches a client: a request that cannot
// use or record an anchor is simply a fresh conversation.
var (
	// ErrNoAnchor: no anchor under the key (Update).
	ErrNoAnchor = errors.New("conversation: no anchor")
	// ErrBusy: a claimed anchor holds the key; the newer one is not recorded.
	ErrBusy = errors.New("conversation: the transcript's anchor is claimed")
	// ErrFull: every stored anchor is claimed; nothing can make room.
	ErrFull = errors.New("conversation: every anchor is claimed")
)

// Registry is the pure in-memory model of many anchors: recording with
// capacity, lookup by key, updates through a closure on a copy, time and
// accounting. It is not safe for concurrent use: a store adapter serializes
// access. Every state change goes through the anchor machine.
type Registry struct {
	limits  Limits
	policy  Policy
	anchors map[Key]*Anchor
	byState map[State]int
	bytes   int
}

// NewRegistry returns an empty registry.
func NewRegistry(l Limits, p Policy) *Registry {
	return &Registry{limits: l, policy: p, anchors: map[Key]*Anchor{}, byState: map[State]int{}}
}

// Policy returns the registry's TTL policy.
func (r *Registry) Policy() Policy { return r.policy }

// Record stores a (state ACTIVE). An anchor already under a's key is dropped
// first (a claimed one is kept and a is refused with ErrBusy). When the
// registry is full, overdue anchors are swept, then Victim is dropped; when
// every anchor is claimed a is refused with ErrFull. It returns the decisions
// applied to other anchors.
func (r *Registry) Record(a Anchor, now time.Time) ([]Decision, error) {
	if a.State != Active || a.PrincipalID == "" || a.TranscriptHash == "" || a.ConversationID == "" {
		return nil, errors.AssertionFailedf("conversation: a recorded anchor must be ACTIVE, keyed and carry a conversation id")
	}
	var ds []Decision
	k := a.Key()
	if _, ok := r.anchors[k]; ok {
		d, err := r.update(k, func(old *Anchor) (Decision, error) { return old.Drop(now, r.policy) })
		if err != nil {
			return ds, err
		}
		ds = append(ds, d)
		if d.Effect == EffectKeep {
			return ds, errors.Mark(errors.New("conversation: anchor claimed"), ErrBusy)
		}
	}
	if len(r.anchors) >= r.limits.MaxAnchors {
		_, swept := r.Sweep(now)
		ds = append(ds, swept...)
	}
	for len(r.anchors) >= r.limits.MaxAnchors {
		v, ok := Victim(r.all())
		if !ok {
			for _, c := range r.all() { // every anchor is claimed: note the refusal on the oldest
				d, err := r.update(c.Key(), func(c *Anchor) (Decision, error) { return c.Drop(now, r.policy) })
				if err == nil {
					ds = append(ds, d)
				}
				break
			}
			return ds, errors.Mark(errors.New("conversation: full"), ErrFull)
		}
		d, err := r.update(v, func(c *Anchor) (Decision, error) { return c.Drop(now, r.policy) })
		if err != nil {
			return ds, err
		}
		ds = append(ds, d)
	}
	cp := a
	r.anchors[k] = &cp
	r.account(nil, &cp)
	return ds, nil
}

// Victim chooses the anchor to drop for capacity among candidates: the oldest
// tombstone, else the oldest ACTIVE anchor (by CreatedAt, then key); never a
// claimed one. ok is false when every candidate is claimed. Both stores use
// this order.
func Victim(candidates []Anchor) (Key, bool) {
	var best *Anchor
	rank := func(s State) int {
		if s.Terminal() {
			return 0
		}
		return 1
	}
	for i := range candidates {
		c := &candidates[i]
		if c.State == Claimed {
			continue
		}
		if best == nil || rank(c.State) < rank(best.State) ||
			(rank(c.State) == rank(best.State) && (c.CreatedAt.Before(best.CreatedAt) ||
				(c.CreatedAt.Equal(best.CreatedAt) && lessKey(c.Key(), best.Key())))) {
			best = c
		}
	}
	if best == nil {
		return Key{}, false
	}
	return best.Key(), true
}

func lessKey(a, b Key) bool {
	if a.PrincipalID != b.PrincipalID {
		return a.PrincipalID < b.PrincipalID
	}
	return a.TranscriptHash < b.TranscriptHash
}

// all returns copies of every anchor in key order.
func (r *Registry) all() []Anchor {
	out := make([]Anchor, 0, len(r.anchors))
	for _, a := range r.anchors {
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool { return lessKey(out[i].Key(), out[j].Key()) })
	return out
}

// Get returns a copy of the anchor under k.
func (r *Registry) Get(k Key) (Anchor, bool) {
	a, ok := r.anchors[k]
	if !ok {
		return Anchor{}, false
	}
	return *a, true
}

// Update runs fn on a copy of the anchor under k and writes the copy back when
// fn returns nil; an anchor that reaches REMOVED is deleted. Errors:
// ErrNoAnchor when absent; otherwise whatever fn returned.
func (r *Registry) Update(k Key, fn func(a *Anchor) error) error {
	_, err := r.update(k, func(a *Anchor) (Decision, error) { return Decision{}, fn(a) })
	return err
}

func (r *Registry) update(k Key, fn func(a *Anchor) (Decision, error)) (Decision, error) {
	cur, ok := r.anchors[k]
	if !ok {
		return Decision{}, errors.Mark(errors.New("conversation: no anchor"), ErrNoAnchor)
	}
	cp := *cur
	d, err := fn(&cp)
	if err != nil {
		return d, err
	}
	if cp.Key() != k {
		return d, errors.AssertionFailedf("conversation: update changed an anchor's key")
	}
	r.account(cur, &cp)
	if cp.State == Removed {
		delete(r.anchors, k)
		return d, nil
	}
	*cur = cp
	return d, nil
}

func (r *Registry) account(old, nw *Anchor) {
	if old != nil {
		r.byState[old.State]--
		r.bytes -= old.Bytes()
	}
	if nw.State != Removed {
		r.byState[nw.State]++
		r.bytes += nw.Bytes()
	}
}

// Sweep applies time to every anchor in key order: overdue ACTIVE → EXPIRED,
// claims past their deadline → RETIRED, tombstones past the terminal TTL
// removed.
func (r *Registry) Sweep(now time.Time) (SweepReport, []Decision) {
	var due []Key
	for k, a := range r.anchors {
		if _, ok := a.Due(now); ok {
			due = append(due, k)
		}
	}
	sort.Slice(due, func(i, j int) bool { return lessKey(due[i], due[j]) })
	var rep SweepReport
	var ds []Decision
	for _, k := range due {
		d, err := r.update(k, func(a *Anchor) (Decision, error) {
			d, _, err := a.Tick(now, r.policy)
			return d, err
		})
		if err != nil || d.Row == "" {
			continue
		}
		ds = append(ds, d)
		rep.Add(d)
	}
	return rep, ds
}

// Add counts one applied time row.
func (rep *SweepReport) Add(d Decision) {
	switch d.To {
	case Expired:
		rep.Expired++
	case Retired:
		rep.Retired++
	case Removed:
		rep.Removed++
	}
}

// Counts reports state counts and bytes.
func (r *Registry) Counts() Counts {
	c := Counts{ByState: map[State]int{}, Anchors: len(r.anchors), Bytes: r.bytes, MaxAnchors: r.limits.MaxAnchors}
	for s, n := range r.byState {
		if n != 0 {
			c.ByState[s] = n
		}
	}
	return c
}
