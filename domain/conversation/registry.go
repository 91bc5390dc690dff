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
	// Rows counts the applied rows by id (for metrics); nil when none.
	Rows map[string]int
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
//
// Besides the map it keeps the anchors of each class (ACTIVE, CLAIMED,
// tombstones) in the order they entered it, so that choosing what to drop
// when full costs O(1) whatever CONVERSATION_MAX_ANCHORS is.
type Registry struct {
	limits  Limits
	policy  Policy
	anchors map[Key]*entry
	order   [3]chain // by class: entry order
	holders map[string]*holder
	byState map[State]int
	bytes   int
}

// holder is one principal's droppable anchors (tombstones, ACTIVE) in the
// order they entered their class: where a full registry takes its victim.
type holder struct {
	order [2]chain // classTombstone, classActive
}

func (h *holder) n() int { return h.order[classTombstone].n + h.order[classActive].n }

// entry is one stored anchor and its links in the two orders it is kept in:
// the order of its class, and its principal's holder while its class is
// droppable. The links live in the entry so that keeping the orders costs no
// allocation per anchor (container/list cost two elements and two boxed keys,
// 160 bytes an anchor).
type entry struct {
	a            Anchor
	prev, next   *entry // in order[class(a.State)]
	hprev, hnext *entry // in its principal's holder, for a droppable class
}

// chain is a doubly linked list of entries in the order they were pushed,
// through the entries' class links or, for a holder's chain, their holder
// links.
type chain struct {
	front, back *entry
	n           int
	holder      bool
}

func (c *chain) links(e *entry) (prev, next **entry) {
	if c.holder {
		return &e.hprev, &e.hnext
	}
	return &e.prev, &e.next
}

func (c *chain) pushBack(e *entry) {
	prev, next := c.links(e)
	*prev, *next = c.back, nil
	if c.back != nil {
		_, backNext := c.links(c.back)
		*backNext = e
	} else {
		c.front = e
	}
	c.back = e
	c.n++
}

func (c *chain) remove(e *entry) {
	prev, next := c.links(e)
	if *prev != nil {
		_, prevNext := c.links(*prev)
		*prevNext = *next
	} else {
		c.front = *next
	}
	if *next != nil {
		nextPrev, _ := c.links(*next)
		*nextPrev = *prev
	} else {
		c.back = *prev
	}
	*prev, *next = nil, nil
	c.n--
}

// Classes of the entry order.
const (
	classTombstone = iota
	classActive
	classClaimed
)

func class(s State) int {
	switch s {
	case Active:
		return classActive
	case Claimed, Resuming:
		return classClaimed
	}
	return classTombstone
}

// NewRegistry returns an empty registry.
func NewRegistry(l Limits, p Policy) *Registry {
	return &Registry{limits: l, policy: p, anchors: map[Key]*entry{}, holders: map[string]*holder{}, byState: map[State]int{}}
}

// Policy returns the registry's TTL policy.
func (r *Registry) Policy() Policy { return r.policy }

// Record stores a (state ACTIVE). An anchor already under a's key is dropped
// first (a claimed one is kept and a is refused with ErrBusy). While the
// registry is full it drops one anchor of the principal that holds the most
// droppable ones (tombstones and ACTIVE anchors) — a's own principal when it
// holds as many as any other, else the one with the smallest id among those
// that tie — its tombstone that became one longest ago, else its ACTIVE
// anchor that became active longest ago. So one principal's cheap first turns
// replace its own anchors, never another's while it holds more than that one,
// and under contention every principal keeps an equal share of the pool. A
// claimed anchor is never dropped, and when every anchor is claimed a is
// refused with ErrFull. Time
// is not applied here (lookups and the periodic sweep do that). It returns
// the decisions applied to other anchors.
func (r *Registry) Record(a Anchor, now time.Time) ([]Decision, error) {
	if a.State != Active || a.PrincipalID == "" || a.TranscriptHash == "" || a.ConversationID == "" {
		return nil, errors.AssertionFailedf("conversation: a recorded anchor must be ACTIVE, keyed and carry a conversation id")
	}
	var ds []Decision
	drop := func(k Key) (Decision, error) {
		d, err := r.Update(k, func(c *Anchor) (Decision, error) { return c.Drop(now, r.policy) })
		if err == nil {
			ds = append(ds, d)
		}
		return d, err
	}
	k := a.Key()
	if _, ok := r.anchors[k]; ok {
		d, err := drop(k)
		if err != nil {
			return ds, err
		}
		if d.Effect == EffectKeep {
			return ds, errors.Mark(errors.New("conversation: anchor claimed"), ErrBusy)
		}
	}
	for len(r.anchors) >= r.limits.MaxAnchors {
		victim := r.victim(a.PrincipalID)
		if victim == nil { // every anchor is claimed: the oldest claim is kept (row A12)
			if _, err := drop(r.order[classClaimed].front.a.Key()); err != nil {
				return ds, err
			}
			return ds, errors.Mark(errors.New("conversation: full"), ErrFull)
		}
		if _, err := drop(victim.a.Key()); err != nil {
			return ds, err
		}
	}
	e := &entry{a: a}
	r.anchors[k] = e
	r.account(e, nil, &e.a)
	return ds, nil
}

// victim returns the anchor a full registry drops to record one of principal
// p (see Record), or nil when every anchor is claimed.
func (r *Registry) victim(p string) *entry {
	var best *holder
	bestID := ""
	for id, h := range r.holders {
		n := h.n()
		switch {
		case n == 0:
			continue
		case best == nil, n > best.n():
		case n < best.n(), bestID == p, id != p && id > bestID:
			continue
		}
		best, bestID = h, id
	}
	if best == nil {
		return nil
	}
	if v := best.order[classTombstone].front; v != nil {
		return v
	}
	return best.order[classActive].front
}

// Get returns a copy of the anchor under k.
func (r *Registry) Get(k Key) (Anchor, bool) {
	e, ok := r.anchors[k]
	if !ok {
		return Anchor{}, false
	}
	return e.a, true
}

// Update runs fn on a copy of the anchor under k and writes the copy back when
// fn returns no error, and returns fn's decision; an anchor that reaches REMOVED is deleted. Errors:
// ErrNoAnchor when absent; otherwise whatever fn returned.
func (r *Registry) Update(k Key, fn func(a *Anchor) (Decision, error)) (Decision, error) {
	e, ok := r.anchors[k]
	if !ok {
		return Decision{}, errors.Mark(errors.New("conversation: no anchor"), ErrNoAnchor)
	}
	cp := e.a
	d, err := fn(&cp)
	if err != nil {
		return d, err
	}
	if cp.Key() != k {
		return d, errors.AssertionFailedf("conversation: update changed an anchor's key")
	}
	old := e.a
	e.a = cp
	r.account(e, &old, &e.a)
	if cp.State == Removed {
		delete(r.anchors, k)
	}
	return d, nil
}

// account moves the counters and the entry order from old (nil for a new
// anchor) to nw. An anchor whose state changes enters the back of its new
// class.
func (r *Registry) account(e *entry, old, nw *Anchor) {
	if old != nil {
		r.byState[old.State]--
		r.bytes -= old.Bytes()
		if old.State == nw.State {
			r.byState[nw.State]++
			r.bytes += nw.Bytes()
			return
		}
		r.order[class(old.State)].remove(e)
		if c := class(old.State); c != classClaimed {
			h := r.holders[old.PrincipalID]
			h.order[c].remove(e)
			if h.n() == 0 {
				delete(r.holders, old.PrincipalID)
			}
		}
	}
	if nw.State != Removed {
		r.byState[nw.State]++
		r.bytes += nw.Bytes()
		r.order[class(nw.State)].pushBack(e)
		if c := class(nw.State); c != classClaimed {
			h := r.holders[nw.PrincipalID]
			if h == nil {
				h = &holder{order: [2]chain{{holder: true}, {holder: true}}}
				r.holders[nw.PrincipalID] = h
			}
			h.order[c].pushBack(e)
		}
	}
}

// Sweep applies time to every anchor in key order: overdue ACTIVE → EXPIRED,
// claims past their deadline → RETIRED, tombstones past the terminal TTL
// removed.
func (r *Registry) Sweep(now time.Time) (SweepReport, []Decision) {
	var due []Key
	for k, e := range r.anchors {
		if _, ok := e.a.Due(now); ok {
			due = append(due, k)
		}
	}
	sort.Slice(due, func(i, j int) bool { return lessKey(due[i], due[j]) })
	var rep SweepReport
	var ds []Decision
	for _, k := range due {
		d, err := r.Update(k, func(a *Anchor) (Decision, error) {
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
	case Retired, Resumable:
		rep.Retired++
	case Removed:
		rep.Removed++
	}
	if rep.Rows == nil {
		rep.Rows = map[string]int{}
	}
	rep.Rows[d.Row]++
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

func lessKey(a, b Key) bool {
	if a.PrincipalID != b.PrincipalID {
		return a.PrincipalID < b.PrincipalID
	}
	return a.TranscriptHash < b.TranscriptHash
}
