package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/pmgate/pmgate/domain/keyring"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports"
)

// Keyring is the ingress's live set of API key slots. Replace swaps the whole
// set atomically (a reload of PROVIDER_KEYS_FILE); a request authenticates
// against the set that was current when it arrived. It is safe for concurrent
// use.
type Keyring struct {
	principalKey []byte
	mu           sync.Mutex // serializes Replace
	cur          atomic.Pointer[keySnapshot]
	limiters     map[string]*limiter // by slot id; one per slot id for as long as it has a limit
	slots        []keyring.Slot      // the current set as given (Retain rebuilds from it)
	// refresh, when set, is asked once by a request whose key matches no slot:
	// it brings the set up to date with its source (a key file just edited)
	// and reports whether the set changed. It must be cheap and bounded.
	refresh atomic.Pointer[func() bool]
}

// SetRefresh installs the check a request with an unknown key makes before it
// is refused (a key created a moment ago works at once); nil removes it.
func (k *Keyring) SetRefresh(fn func() bool) {
	if fn == nil {
		k.refresh.Store(nil)
		return
	}
	k.refresh.Store(&fn)
}

// refreshed runs the refresh check, if any, and reports whether the set
// changed.
func (k *Keyring) refreshed() bool {
	fn := k.refresh.Load()
	return fn != nil && (*fn)()
}

// keySnapshot is one immutable generation of the slots.
type keySnapshot struct {
	slots []authSlot
}

// authSlot is a slot as the authentication path needs it: the digest, the
// derived principal, the allowlist and the slot's own concurrency limiter.
type authSlot struct {
	id        string
	digest    [sha256.Size]byte
	principal string
	models    map[string]bool // nil: every configured model
	limit     *limiter        // nil: only the global limit
	admin     bool            // scope admin: the control page's data and /metrics
	limits    usage.Limits    // the slot's rate limit and quotas
}

// limiter is one slot's concurrency limit. A reload that changes the limit
// changes max on the same limiter, so the requests already running still
// count against the new limit.
type limiter struct {
	mu   sync.Mutex
	max  int
	held int
}

// take admits one more request unless the limit is reached.
func (l *limiter) take() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held >= l.max {
		return false
	}
	l.held++
	return true
}

func (l *limiter) give() {
	l.mu.Lock()
	l.held--
	l.mu.Unlock()
}

// NewKeyring returns a keyring holding slots. It panics on a principal key
// shorter than 32 bytes (mis-wiring).
func NewKeyring(principalKey []byte, slots []keyring.Slot) *Keyring {
	if len(principalKey) < minPrincipalKeyBytes {
		panic("httpapi: principal key shorter than 32 bytes")
	}
	k := &Keyring{principalKey: append([]byte(nil), principalKey...), limiters: map[string]*limiter{}}
	k.Replace(slots)
	return k
}

// StaticKeyring is the keyring of fixed keys by slot id (PROVIDER_API_KEY is
// the one-slot form, slot "default").
func StaticKeyring(principalKey []byte, keys map[string]string) *Keyring {
	ids := make([]string, 0, len(keys))
	for id := range keys {
		ids = append(ids, id)
	}
	sort.Strings(ids) // the first matching slot wins: make "first" deterministic
	slots := make([]keyring.Slot, 0, len(keys))
	for _, id := range ids {
		key := keys[id]
		if key == "" {
			panic("httpapi: empty API key in slot " + id)
		}
		// The fixed keys are the owner's own (PROVIDER_API_KEY): admin keys.
		slots = append(slots, keyring.Slot{ID: id, Digest: sha256.Sum256([]byte(key)), Scope: keyring.ScopeAdmin})
	}
	return NewKeyring(principalKey, slots)
}

// Replace makes slots the current set. Requests already running keep their
// principal and release their slot's limiter as they finish; the next request
// of a slot that is gone is refused with 401.
func (k *Keyring) Replace(slots []keyring.Slot) {
	k.mu.Lock()
	defer k.mu.Unlock()
	snap := &keySnapshot{slots: make([]authSlot, 0, len(slots))}
	limiters := make(map[string]*limiter, len(slots))
	for _, s := range slots {
		a := authSlot{id: s.ID, digest: s.Digest, principal: SlotPrincipal(k.principalKey, s.ID, s.Digest),
			admin: s.Admin(), limits: s.Limits}
		if len(s.Models) > 0 {
			a.models = make(map[string]bool, len(s.Models))
			for _, m := range s.Models {
				a.models[m] = true
			}
		}
		if s.MaxConcurrent > 0 {
			l := k.limiters[s.ID]
			if l == nil {
				l = &limiter{}
			}
			l.mu.Lock()
			l.max = s.MaxConcurrent
			l.mu.Unlock()
			limiters[s.ID], a.limit = l, l
		}
		snap.slots = append(snap.slots, a)
	}
	k.limiters = limiters
	k.slots = slices.Clone(slots)
	k.cur.Store(snap)
}

// Slots returns the current slots in file order, as the operator's views
// show them (adapters/ops reads them through the wiring).
func (k *Keyring) Slots() []ports.KeySlot {
	cur := k.cur.Load().slots
	out := make([]ports.KeySlot, len(cur))
	for i, a := range cur {
		out[i] = ports.KeySlot{ID: a.id, Admin: a.admin, Limits: a.limits}
	}
	return out
}

// current returns the slot of the current set with a's id and digest, or nil
// when a was revoked (or its key rotated) since a request authenticated with
// it: the check a request makes after its body is read, before it is
// dispatched.
func (k *Keyring) current(a *authSlot) *authSlot {
	if a == nil {
		return nil
	}
	slots := k.cur.Load().slots
	for i := range slots {
		if slots[i].id == a.id && slots[i].digest == a.digest {
			return &slots[i]
		}
	}
	return nil
}

// Retain drops the current slots for which kept is false (a revocation
// read from a key file that is otherwise refused); it returns how many.
func (k *Keyring) Retain(kept func(id string, digest [32]byte) bool) int {
	k.mu.Lock()
	next := make([]keyring.Slot, 0, len(k.slots))
	for _, s := range k.slots {
		if kept(s.ID, s.Digest) {
			next = append(next, s)
		}
	}
	dropped := len(k.slots) - len(next)
	k.mu.Unlock()
	if dropped > 0 {
		k.Replace(next)
	}
	return dropped
}

// Len is the number of current slots.
func (k *Keyring) Len() int { return len(k.cur.Load().slots) }

// SlotPrincipal derives the principal id of a slot: Principal over the slot id
// and its key's digest. Binding the digest makes a rotated key a new trust
// domain: tool calls issued to the old key are unknown to the new one, even
// under the same slot id.
func SlotPrincipal(principalKey []byte, id string, digest [sha256.Size]byte) string {
	return Principal(principalKey, "slot\x00"+id+"\x00"+hex.EncodeToString(digest[:]))
}
