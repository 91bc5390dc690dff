package correlation

import (
	"sort"
	"strconv"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/redact"

	"github.com/pmgate/pmgate/domain/errs"
)

// Limits bound live correlation state (the CORRELATION_MAX_* settings, see
// docs/CONFIGURATION.md).
type Limits struct {
	MaxGroups          int // live (PENDING + INFLIGHT) groups, reservations included
	MaxCalls           int // calls of live groups, reservations included
	ResponseCacheBytes int // total bytes of cached terminal responses
	// MaxGroupsPerKey is one principal's share of MaxGroups: the live groups
	// one API key may hold (CORRELATION_MAX_GROUPS_PER_KEY). 0, or a value not
	// below MaxGroups, means no share: every key draws on the whole pool.
	MaxGroupsPerKey int
}

// Share is what one principal may hold live at once: MaxGroupsPerKey groups
// and the same fraction of MaxCalls (rounded up), so that one key's pending
// tool calls can fill neither dimension of the pool alone. Without a share it
// is the whole pool.
//
// The share is decided when a group is admitted, on the principal's own live
// groups (never on reservations, which are the pool's): a key at its share is
// refused with correlation_capacity_exceeded naming its share (ShareExceeded),
// while another key's group is admitted as long as the pool has room. Pending
// groups are never evicted for it.
func (l Limits) Share() (groups, calls int) {
	if l.MaxGroupsPerKey <= 0 || l.MaxGroupsPerKey >= l.MaxGroups {
		return l.MaxGroups, l.MaxCalls
	}
	g := l.MaxGroupsPerKey
	return g, max(1, int((int64(l.MaxCalls)*int64(g)+int64(l.MaxGroups)-1)/int64(l.MaxGroups)))
}

// Shared reports whether the limits set a share below the whole pool.
func (l Limits) Shared() bool { g, _ := l.Share(); return g < l.MaxGroups }

// KeyFits reports whether a group of calls calls fits the share of a
// principal that holds liveGroups live groups of liveCalls calls. Without a
// share it is always true: the pool alone decides, and its refusal is the
// pool's.
func (l Limits) KeyFits(liveGroups, liveCalls, calls int) bool {
	if !l.Shared() {
		return true
	}
	g, c := l.Share()
	return liveGroups+1 <= g && liveCalls+calls <= c
}

// ShareExceeded is the refusal of a group beyond its principal's share
// (Limits.Share). It carries the code correlation_capacity_exceeded; the
// ingress shows its public detail and its RetryAfter (the time until the
// principal's first live group reaches its deadline, when that frees a unit
// unless it is answered first).
type ShareExceeded struct {
	Groups, Calls int           // the share
	After         time.Duration // until the first of the key's live groups reaches its deadline; 0 when unknown
}

func (e *ShareExceeded) Error() string {
	return "correlation: this API key holds its share of live tool-call groups"
}

// RetryAfter is the wait until the key's first live group reaches its
// deadline (the ingress's Retry-After).
func (e *ShareExceeded) RetryAfter() time.Duration { return e.After }

// PublicDetail is the sentence a client sees after the code's message; it
// names the share and nothing else.
func (e *ShareExceeded) PublicDetail() string {
	return "This API key already holds its share of " + strconv.Itoa(e.Groups) + " pending tool-call groups (" +
		strconv.Itoa(e.Calls) + " calls); answer them, or send the next turn of their conversation, or wait until they expire. Other keys are not affected."
}

// SafeFormatError keeps the share in logs.
func (e *ShareExceeded) SafeFormatError(p errors.Printer) error {
	p.Printf("correlation: this API key holds its share of %d groups, %d calls", redact.Safe(e.Groups), redact.Safe(e.Calls))
	return nil
}

// RefuseShare is the refusal of a group beyond the share of l, for a
// principal whose first live group reaches its deadline at first (zero when
// it has none), at now.
func RefuseShare(l Limits, first, now time.Time) error {
	g, c := l.Share()
	var after time.Duration
	if !first.IsZero() && first.After(now) {
		after = first.Sub(now)
	}
	return errors.Mark(&ShareExceeded{Groups: g, Calls: c, After: after}, errs.Sentinel(errs.CorrelationCapacityExceeded))
}

// Deadline is the time a live group's own deadline passes: the pending TTL's
// end for a PENDING group, the claim's hard deadline for an INFLIGHT one;
// zero otherwise.
func (g Group) Deadline() time.Time {
	switch g.State {
	case Pending:
		return g.PendingExpiresAt
	case Inflight:
		return g.InflightExpiresAt
	}
	return time.Time{}
}

// Counts reports groups per state and capacity use, without ids.
type Counts struct {
	ByState            map[State]int
	LiveGroups         int
	LiveCalls          int
	ReservedGroups     int
	ReservedCalls      int
	CacheBytes         int
	MaxGroups          int
	MaxCalls           int
	ResponseCacheBytes int
	// GroupsPerKey and CallsPerKey are one key's share (Limits.Share).
	GroupsPerKey, CallsPerKey int
}

// SweepReport counts what one sweep changed.
type SweepReport struct {
	Expired   int
	Uncertain int
	Removed   int
	// Rows counts the applied rows by id (for metrics); nil when none.
	Rows map[string]int
}

// Add counts one transition a sweep applied.
func (r *SweepReport) Add(d Decision) {
	switch d.To {
	case Expired:
		r.Expired++
	case Uncertain:
		r.Uncertain++
	case Removed:
		r.Removed++
	}
	if r.Rows == nil {
		r.Rows = map[string]int{}
	}
	r.Rows[d.Row]++
}

// Merge adds the counts of another report.
func (r *SweepReport) Merge(o SweepReport) {
	r.Expired += o.Expired
	r.Uncertain += o.Uncertain
	r.Removed += o.Removed
	for id, n := range o.Rows {
		if r.Rows == nil {
			r.Rows = map[string]int{}
		}
		r.Rows[id] += n
	}
}

// ErrDuplicatePublicID marks an admission whose public id is already indexed;
// the caller draws new ids and tries again.
var ErrDuplicatePublicID = errors.New("correlation: duplicate public id")

type pubKey struct{ principal, id string }

// Registry is the pure in-memory model of many groups: capacity reservation and
// admission, lookup by (principal, public id), updates through a closure on a
// copy, time (expiry, tombstone removal) and accounting. It is not safe for
// concurrent use: a store adapter serializes access (one mutex, or one
// transaction). Every state change goes through the group machine.
type Registry struct {
	limits       Limits
	policy       Policy
	groups       map[string]*Group
	index        map[pubKey]string
	reservations map[string]int
	resCalls     int
	liveGroups   int
	liveCalls    int
	cacheBytes   int
	byState      map[State]int
	byKey        map[string]keyUse // live groups and calls per principal
}

// keyUse is what one principal holds live.
type keyUse struct{ groups, calls int }

// NewRegistry returns an empty registry.
func NewRegistry(l Limits, p Policy) *Registry {
	return &Registry{
		limits:       l,
		policy:       p,
		groups:       map[string]*Group{},
		index:        map[pubKey]string{},
		reservations: map[string]int{},
		byState:      map[State]int{},
		byKey:        map[string]keyUse{},
	}
}

// Policy returns the registry's TTL policy.
func (r *Registry) Policy() Policy { return r.policy }

func (r *Registry) fits(calls int) bool {
	return r.liveGroups+len(r.reservations)+1 <= r.limits.MaxGroups &&
		r.liveCalls+r.resCalls+calls <= r.limits.MaxCalls
}

// Reserve holds capacity for one group of calls under id. When full, overdue
// groups are expired first (expiry is checked on admission); if still full,
// the pending groups are left untouched (never evicted) and the reservation
// fails with correlation_capacity_exceeded. It returns the decisions applied.
func (r *Registry) Reserve(id string, calls int, now time.Time) ([]Decision, error) {
	if calls <= 0 || calls > r.limits.MaxCalls {
		return nil, errs.Newf(errs.CorrelationCapacityExceeded, "group of %d calls", calls)
	}
	if _, dup := r.reservations[id]; dup {
		return nil, errors.AssertionFailedf("correlation: reservation id reused")
	}
	var ds []Decision
	if !r.fits(calls) {
		_, ds = r.Sweep(now)
	}
	if !r.fits(calls) {
		if g := r.oldestPending(); g != nil {
			d, err := r.Update(g.Key, func(g *Group) (Decision, error) { return g.NoteCapacityPressure() })
			if err == nil {
				ds = append(ds, d)
			}
		}
		return ds, errs.New(errs.CorrelationCapacityExceeded)
	}
	r.reservations[id] = calls
	r.resCalls += calls
	return ds, nil
}

// CheckRoom reports whether a group of calls of principal would be admitted
// now, without reserving anything: the rule of Reserve (overdue groups are
// expired first) and of Admit's share, but a full registry is not capacity
// pressure yet. The app asks it before sending a request with tools upstream,
// so that a full store, or a key at its share, refuses the turn before it
// costs an upstream query. Errors: correlation_capacity_exceeded (a
// ShareExceeded when the key is at its share).
func (r *Registry) CheckRoom(principal string, calls int, now time.Time) error {
	if calls <= 0 || calls > r.limits.MaxCalls {
		return errs.Newf(errs.CorrelationCapacityExceeded, "group of %d calls", calls)
	}
	if !r.fits(calls) || !r.keyFits(principal, calls) {
		r.Sweep(now)
	}
	if !r.keyFits(principal, calls) {
		return r.refuseShare(principal, now)
	}
	if !r.fits(calls) {
		return errs.New(errs.CorrelationCapacityExceeded)
	}
	return nil
}

func (r *Registry) keyFits(principal string, calls int) bool {
	u := r.byKey[principal]
	return r.limits.KeyFits(u.groups, u.calls, calls)
}

// refuseShare is the share refusal of principal at now, with the deadline of
// its first live group.
func (r *Registry) refuseShare(principal string, now time.Time) error {
	var first time.Time
	for _, g := range r.groups {
		if d := g.Deadline(); g.PrincipalID == principal && !d.IsZero() && (first.IsZero() || d.Before(first)) {
			first = d
		}
	}
	return RefuseShare(r.limits, first, now)
}

func (r *Registry) oldestPending() *Group {
	var best *Group
	for _, g := range r.groups {
		if g.State == Pending && (best == nil || g.IssuedAt.Before(best.IssuedAt) ||
			(g.IssuedAt.Equal(best.IssuedAt) && g.Key < best.Key)) {
			best = g
		}
	}
	return best
}

// Release gives back an unused reservation; unknown ids are ignored.
func (r *Registry) Release(id string) {
	if n, ok := r.reservations[id]; ok {
		delete(r.reservations, id)
		r.resCalls -= n
	}
}

// Admit stores g as PENDING under reservation id. The reservation must exist
// and cover g's calls; g's principal must be below its share (Limits.Share),
// else ShareExceeded at now (g.IssuedAt) and the reservation stays for the
// caller to release; public ids must be unique per principal.
func (r *Registry) Admit(id string, g Group) error {
	n, ok := r.reservations[id]
	if !ok || len(g.Calls) > n || len(g.Calls) == 0 {
		return errs.New(errs.CorrelationCapacityExceeded)
	}
	if g.State != Pending {
		return errors.AssertionFailedf("correlation: admitted group must be PENDING")
	}
	if _, dup := r.groups[g.Key]; dup || g.Key == "" {
		return errors.AssertionFailedf("correlation: group key missing or reused")
	}
	if !r.keyFits(g.PrincipalID, len(g.Calls)) {
		return r.refuseShare(g.PrincipalID, g.IssuedAt)
	}
	for _, c := range g.Calls {
		if _, dup := r.index[pubKey{g.PrincipalID, c.PublicID}]; dup {
			return errors.Mark(errors.New("correlation: public id collision"), ErrDuplicatePublicID)
		}
	}
	r.Release(id)
	cp := g.Clone()
	cp.CachedResponse = nil
	r.groups[cp.Key] = &cp
	for _, c := range cp.Calls {
		r.index[pubKey{cp.PrincipalID, c.PublicID}] = cp.Key
	}
	r.account(nil, &cp)
	return nil
}

// Resolve maps the public ids of one principal to group keys; ids unknown for
// that principal are absent.
func (r *Registry) Resolve(principal string, ids []string) map[string]string {
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		if k, ok := r.index[pubKey{principal, id}]; ok {
			out[id] = k
		}
	}
	return out
}

// Get returns a copy of the group with key.
func (r *Registry) Get(key string) (Group, bool) {
	g, ok := r.groups[key]
	if !ok {
		return Group{}, false
	}
	return g.Clone(), true
}

// Update runs fn on a copy of the group with key and writes the copy back when
// fn returns no error, and returns fn's decision. A group that reaches REMOVED is deleted. Cached responses
// over the budget are dropped (the digest stays), so a later replay answers
// tool_call_already_consumed. Errors: unknown_tool_call when absent.
func (r *Registry) Update(key string, fn func(g *Group) (Decision, error)) (Decision, error) {
	cur, ok := r.groups[key]
	if !ok {
		return Decision{}, errs.New(errs.UnknownToolCall)
	}
	cp := cur.Clone()
	d, err := fn(&cp)
	if err != nil {
		return d, err
	}
	if err := FinishUpdate(cur, &cp, func(n int) (bool, error) {
		return r.cacheBytes+n <= r.limits.ResponseCacheBytes, nil
	}); err != nil {
		return d, err
	}
	r.account(cur, &cp)
	if cp.State == Removed {
		delete(r.groups, key)
		for _, c := range cp.Calls {
			delete(r.index, pubKey{cp.PrincipalID, c.PublicID})
		}
		return d, nil
	}
	*cur = cp
	return d, nil
}

// account moves the counters from old (nil for a new group) to nw.
func (r *Registry) account(old, nw *Group) {
	if old != nil {
		r.byState[old.State]--
	}
	if nw.State != Removed {
		r.byState[nw.State]++
	}
	u := UsageChange(old, nw)
	r.liveGroups += u.LiveGroups
	r.liveCalls += u.LiveCalls
	r.cacheBytes += u.CacheBytes
	if u.LiveGroups != 0 || u.LiveCalls != 0 {
		k := r.byKey[nw.PrincipalID]
		k.groups += u.LiveGroups
		k.calls += u.LiveCalls
		if k.groups == 0 && k.calls == 0 {
			delete(r.byKey, nw.PrincipalID)
		} else {
			r.byKey[nw.PrincipalID] = k
		}
	}
}

// The rules of an update, shared by every store: the registry applies them
// under its lock, the PostgreSQL store inside its transaction, so both keep
// the same accounts and refuse the same writes.

// Usage is a change of the capacity counters a store keeps: live (PENDING and
// INFLIGHT) groups, their calls, and the bytes of cached terminal responses.
type Usage struct {
	LiveGroups int
	LiveCalls  int
	CacheBytes int
}

// Add adds the change o.
func (u *Usage) Add(o Usage) {
	u.LiveGroups += o.LiveGroups
	u.LiveCalls += o.LiveCalls
	u.CacheBytes += o.CacheBytes
}

// UsageChange is the change of the counters when a group goes from old (nil
// for a group being admitted) to nw. A group that reaches REMOVED holds
// nothing any more.
func UsageChange(old, nw *Group) Usage {
	var u Usage
	if old != nil {
		if old.State.Live() {
			u.LiveGroups--
			u.LiveCalls -= len(old.Calls)
		}
		u.CacheBytes -= len(old.CachedResponse)
	}
	if nw.State != Removed {
		u.CacheBytes += len(nw.CachedResponse)
	}
	if nw.State.Live() {
		u.LiveGroups++
		u.LiveCalls += len(nw.Calls)
	}
	return u
}

// FinishUpdate checks cp, the copy of cur that an update closure changed,
// before a store writes it. A group's identity (key, principal, number of
// calls) never changes: that is mis-wiring, refused with an assertion
// failure. A response cached for the first time is kept only when cacheFits
// says the response cache budget has room for its n bytes; otherwise it is
// dropped (its digest stays, so a later replay answers
// tool_call_already_consumed). An error of cacheFits is returned unchanged.
func FinishUpdate(cur, cp *Group, cacheFits func(n int) (bool, error)) error {
	if cp.Key != cur.Key || cp.PrincipalID != cur.PrincipalID || len(cp.Calls) != len(cur.Calls) {
		return errors.AssertionFailedf("correlation: update changed a group's identity")
	}
	if cp.CachedResponse == nil || cur.CachedResponse != nil || cp.State == Removed {
		return nil
	}
	ok, err := cacheFits(len(cp.CachedResponse))
	if err != nil {
		return err
	}
	if !ok {
		cp.CachedResponse = nil
	}
	return nil
}

// Sweep applies time to every group in key order: overdue PENDING → EXPIRED,
// overdue INFLIGHT → UNCERTAIN, tombstones past their TTL removed. It never
// touches a PENDING group that is not overdue.
func (r *Registry) Sweep(now time.Time) (SweepReport, []Decision) {
	keys := make([]string, 0, len(r.groups))
	for k, g := range r.groups {
		if _, due := g.Due(now); due {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var rep SweepReport
	var ds []Decision
	for _, k := range keys {
		d, err := r.Update(k, func(g *Group) (Decision, error) {
			d, ok, err := g.Tick(now, r.policy)
			if err == nil && !ok {
				err = errors.New("correlation: nothing due")
			}
			return d, err
		})
		if err != nil {
			continue
		}
		ds = append(ds, d)
		rep.Add(d)
	}
	return rep, ds
}

// Counts reports state counts and capacity use.
func (r *Registry) Counts() Counts {
	c := Counts{
		ByState:            make(map[State]int, len(r.byState)),
		LiveGroups:         r.liveGroups,
		LiveCalls:          r.liveCalls,
		ReservedGroups:     len(r.reservations),
		ReservedCalls:      r.resCalls,
		CacheBytes:         r.cacheBytes,
		MaxGroups:          r.limits.MaxGroups,
		MaxCalls:           r.limits.MaxCalls,
		ResponseCacheBytes: r.limits.ResponseCacheBytes,
	}
	c.GroupsPerKey, c.CallsPerKey = r.limits.Share()
	for s, n := range r.byState {
		if n != 0 {
			c.ByState[s] = n
		}
	}
	return c
}

// Keys returns every stored group key, sorted.
func (r *Registry) Keys() []string {
	keys := make([]string, 0, len(r.groups))
	for k := range r.groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Submit runs one continuation submission for the group with key: the group
// is looked up, classified and transitioned atomically (with respect to this
// registry). A key that no longer exists is answered from REMOVED.
func (r *Registry) Submit(key string, now time.Time, sub Submission, attemptID string) (Decision, error) {
	if _, ok := r.groups[key]; !ok {
		return SubmitUnknown(), nil
	}
	return r.Update(key, func(g *Group) (Decision, error) {
		return g.Submit(now, r.policy, sub, attemptID)
	})
}

// Apply runs a typed transition (Complete, NotSent, Ambiguous,
// Cancel) on the group with key.
func (r *Registry) Apply(key string, fn func(g *Group) (Decision, error)) (Decision, error) {
	return r.Update(key, fn)
}
