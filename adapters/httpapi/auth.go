package httpapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/errs"
)

// Principal derives the principal id of a credential slot (docs/CORRELATION.md): base64url without padding of HMAC-SHA256(key, slot). The
// slot is the server-side name of the matched API key, never the key itself.
func Principal(key []byte, slot string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(slot))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// constantTimeCompare is subtle.ConstantTimeCompare; a variable so that a test
// can prove it is the comparison in use and that every slot is compared.
var constantTimeCompare = subtle.ConstantTimeCompare

// authenticate returns the principal of the presented key. The key comes from
// "Authorization: Bearer <key>" or, when there is no Authorization header,
// from "x-api-key". Its SHA-256 digest is compared in constant time with the
// digest of every slot, all of them, whatever matched first: neither the key
// length, nor the first differing byte, nor which slot matched shows in the
// timing.
func (s *server) authenticate(r *http.Request, a *api) (app.Principal, *authSlot, bool) {
	var presented string
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, key, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return app.Principal{}, nil, false
		}
		presented = strings.TrimSpace(key)
	} else if a.key != nil {
		presented = a.key(r)
	} else {
		presented = r.Header.Get("x-api-key")
	}
	if presented == "" {
		return app.Principal{}, nil, false
	}
	digest := sha256.Sum256([]byte(presented))
	sl := matchSlot(s.keys.cur.Load().slots, digest)
	if sl == nil && s.keys.refreshed() {
		// The key matched no slot, but the source had changed: a key created
		// a moment ago is served at once rather than at the next poll.
		sl = matchSlot(s.keys.cur.Load().slots, digest)
	}
	if sl == nil {
		return app.Principal{}, nil, false
	}
	return app.Principal{Slot: sl.id, ID: sl.principal}, sl, true
}

// matchSlot compares digest with every slot's, in constant time, and returns
// the first matching slot or nil.
func matchSlot(slots []authSlot, digest [sha256.Size]byte) *authSlot {
	found, matched := 0, 0
	for i := range slots {
		eq := constantTimeCompare(digest[:], slots[i].digest[:])
		// Keep the first match without branching on the comparison result.
		matched = subtle.ConstantTimeSelect(eq&^found, i, matched)
		found |= eq
	}
	if found == 0 {
		return nil
	}
	return &slots[matched]
}

// principalKey is the context key of the authenticated principal.
type principalKey struct{}

// authed is what authentication puts into a request's context.
type authed struct {
	p    app.Principal
	slot *authSlot
}

func principalFrom(ctx context.Context) app.Principal {
	a, _ := ctx.Value(principalKey{}).(authed)
	return a.p
}

// slotFrom is the matched slot of an authenticated request (nil outside one).
func slotFrom(ctx context.Context) *authSlot {
	a, _ := ctx.Value(principalKey{}).(authed)
	return a.slot
}

// scopePrincipal narrows the authenticated principal of ctx to a scope (a
// Claude Code subagent): its id is HMAC(principal id, scope), so tool-call
// groups and conversation anchors of one scope are never found from
// another, while the slot (limits, allowlist, logs) stays the same.
func scopePrincipal(ctx context.Context, scope string) context.Context {
	a, ok := ctx.Value(principalKey{}).(authed)
	if !ok {
		return ctx
	}
	a.p.ID = Principal([]byte(a.p.ID), scope)
	return context.WithValue(ctx, principalKey{}, a)
}

// limiter is the slot's own concurrency limiter (nil: none).
func (a *authSlot) limiter() *limiter {
	if a == nil {
		return nil
	}
	return a.limit
}

// allowsModel reports whether the slot may use a configured public model.
func (a *authSlot) allowsModel(m string) bool {
	return a == nil || a.models == nil || a.models[m]
}

// checkKey refuses a request of API a that presents no configured key (401
// invalid_api_key, saying which form a's routes accept); otherwise it
// returns the request with the principal in its context.
func (s *server) checkKey(a *api, r *http.Request) (*http.Request, error) {
	p, sl, ok := s.authenticate(r, a)
	if !ok {
		if a.problem != nil {
			return r, rules.Refuse(errs.InvalidAPIKey, "", a.problem(r))
		}
		return r, rules.Refuse(errs.InvalidAPIKey, "", authProblem(r.Header))
	}
	p.Limits = sl.limits // the slot's own budget, enforced by the app (docs/USAGE.md)
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, authed{p: p, slot: sl})), nil
}

// authProblem says why a request's credentials were refused, from the shape
// of its headers only (never a key, never whether a key is close to one):
// the commonest client mistakes each get the form that is accepted.
func authProblem(h http.Header) string {
	const accepted = "send Authorization: Bearer <key> (or x-api-key: <key>)."
	auth := h.Get("Authorization")
	if auth == "" {
		switch {
		case h.Get("x-api-key") != "":
			return "The key matches none of this gateway's keys."
		case h.Get("api-key") != "":
			return "The key is in an api-key header, which this gateway does not read: " + accepted
		}
		return "No key was sent: " + accepted
	}
	scheme, key, ok := strings.Cut(strings.TrimSpace(auth), " ")
	switch {
	case !ok && strings.EqualFold(scheme, "Bearer"):
		return "The Authorization header holds no key after Bearer: " + accepted
	case !ok:
		return "The Authorization header has no scheme: send Authorization: Bearer <key>, the word Bearer, a space, then the key."
	case !strings.EqualFold(scheme, "Bearer"):
		return "The Authorization header's scheme is not Bearer: send Authorization: Bearer <key>."
	case strings.TrimSpace(key) == "":
		return "The Authorization header holds no key after Bearer: " + accepted
	case h.Get("x-api-key") != "":
		return "The key of the Authorization header matches none of this gateway's keys; " +
			"an x-api-key header is read only when there is no Authorization header."
	}
	return "The key matches none of this gateway's keys."
}
