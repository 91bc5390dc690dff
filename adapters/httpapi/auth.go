package httpapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"

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
func (s *server) authenticate(r *http.Request) (app.Principal, *authSlot, bool) {
	var presented string
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, key, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return app.Principal{}, nil, false
		}
		presented = strings.TrimSpace(key)
	} else {
		presented = r.Header.Get("x-api-key")
	}
	if presented == "" {
		return app.Principal{}, nil, false
	}
	digest := sha256.Sum256([]byte(presented))
	slots := s.keys.cur.Load().slots
	found, matched := 0, 0
	for i := range slots {
		eq := constantTimeCompare(digest[:], slots[i].digest[:])
		// Keep the first match without branching on the comparison result.
		matched = subtle.ConstantTimeSelect(eq&^found, i, matched)
		found |= eq
	}
	if found == 0 {
		return app.Principal{}, nil, false
	}
	sl := &slots[matched]
	return app.Principal{Slot: sl.id, ID: sl.principal}, sl, true
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

// requireKey answers 401 invalid_api_key unless the request presents a
// configured key; otherwise it puts the principal into the context.
func (s *server) requireKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, sl, ok := s.authenticate(r)
		if !ok {
			s.writeError(w, r, errs.New(errs.InvalidAPIKey))
			return
		}
		infoFrom(r.Context()).slot = p.Slot
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, authed{p: p, slot: sl})))
	})
}
