package httpapi_test

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
)

func TestBearerKeyIsAccepted(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	rec := post(h, withFields(""))
	is.Equal(rec.Code, http.StatusOK) // a valid bearer key is accepted
	p, _ := svc.Last()
	is.Equal(p.Slot, "default")                                                                   // the matched slot is passed on
	is.Equal(p.ID, httpapi.SlotPrincipal(principalKey, "default", sha256.Sum256([]byte(apiKey)))) // derived from the slot and its key
}

func TestLowercaseBearerSchemeIsAccepted(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	r := chatRequest(withFields(""))
	r.Header.Set("Authorization", "bearer "+apiKey)
	is.Equal(serve(h, r).Code, http.StatusOK) // the auth scheme is case-insensitive
}

func TestXAPIKeyHeaderIsAccepted(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	r := chatRequest(withFields(""))
	r.Header.Del("Authorization")
	r.Header.Set("x-api-key", apiKey)
	is.Equal(serve(h, r).Code, http.StatusOK) // x-api-key works without Authorization
}

func TestWrongKeyIsRefusedWith401(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	r := chatRequest(withFields(""))
	r.Header.Set("Authorization", "Bearer "+apiKey+"x")
	rec := serve(h, r)
	is.Equal(rec.Code, http.StatusUnauthorized) // a wrong key is 401
	e := decodeError(t, rec.Body.Bytes())
	is.Equal(e.Code, "invalid_api_key")                   // with the stable code
	is.Equal(e.Type, "authentication_error")              // and the catalog type
	is.Equal(rec.Header().Get("x-should-retry"), "false") // a retry cannot help
	is.Equal(svc.Calls(), 0)                              // the service is never called
}

func TestMissingKeyIsRefusedWith401(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	r := chatRequest(withFields(""))
	r.Header.Del("Authorization")
	rec := serve(h, r)
	is.Equal(rec.Code, http.StatusUnauthorized)                        // no key is 401
	is.Equal(decodeError(t, rec.Body.Bytes()).Code, "invalid_api_key") // with the stable code
	is.Equal(svc.Calls(), 0)                                           // the service is never called
}

func TestNonBearerAuthorizationIsRefused(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	r := chatRequest(withFields(""))
	r.Header.Set("Authorization", "Basic "+apiKey)
	r.Header.Set("x-api-key", apiKey)
	is.Equal(serve(h, r).Code, http.StatusUnauthorized) // Authorization wins and must be Bearer
}

func TestModelsNeedsAKey(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	rec := serve(h, httptest.NewRequest(http.MethodGet, "/v1/models", nil))
	is.Equal(rec.Code, http.StatusUnauthorized) // /v1/models is authenticated
}

// Not parallel: it swaps the package's comparison function.
func TestEveryKeySlotIsComparedInConstantTime(t *testing.T) {
	is := is.New(t)
	is.True(httpapi.CompareIsConstantTime()) // the comparison is crypto/subtle's

	compares := 0
	restore := httpapi.SwapCompare(func(a, b []byte) int {
		compares++
		is.Equal(len(a), len(b)) // digests of equal length: the key length does not leak
		return subtle.ConstantTimeCompare(a, b)
	})
	defer restore()
	svc := &fakeService{}
	h, _ := newServer(t, svc, func(c *httpapi.Config) {
		c.APIKeys = map[string]string{"a-first": apiKey, "b-second": "another-key-0123456789", "c-third": "third-key-0123456789"}
	})
	rec := post(h, withFields(""))
	is.Equal(rec.Code, http.StatusOK) // the first slot's key is accepted
	is.Equal(compares, 3)             // every slot is compared, with no early exit on a match
	p, _ := svc.Last()
	is.Equal(p.Slot, "a-first") // the matching slot is the one reported
}

func TestSecondSlotKeyGivesItsOwnPrincipal(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc, func(c *httpapi.Config) {
		c.APIKeys = map[string]string{"default": apiKey, "team-b": "team-b-key-0123456789"}
	})
	r := chatRequest(withFields(""))
	r.Header.Set("Authorization", "Bearer team-b-key-0123456789")
	is.Equal(serve(h, r).Code, http.StatusOK) // the second slot's key is accepted
	p, _ := svc.Last()
	is.Equal(p.Slot, "team-b")                                                                                    // its slot is reported
	is.Equal(p.ID, httpapi.SlotPrincipal(principalKey, "team-b", sha256.Sum256([]byte("team-b-key-0123456789")))) // with its own principal
	is.True(p.ID != httpapi.SlotPrincipal(principalKey, "default", sha256.Sum256([]byte(apiKey))))                // distinct from the other slot's
}

func TestPrincipalIsStableForTheSameSlot(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	a := httpapi.Principal(principalKey, "default")
	b := httpapi.Principal(append([]byte(nil), principalKey...), "default")
	is.Equal(a, b)       // same key and slot, same principal
	is.Equal(len(a), 43) // base64url without padding of 32 bytes
}

func TestPrincipalDependsOnTheKey(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	other := []byte("another-principal-key-of-32-bytes!!!")
	is.True(httpapi.Principal(principalKey, "default") != httpapi.Principal(other, "default"))  // another key, another principal
	is.True(httpapi.Principal(principalKey, "default") != httpapi.Principal(principalKey, "x")) // another slot, another principal
}

func TestPrincipalIsBase64URLOfHMACSHA256(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	// RFC 4231 test case 2 (key "Jefe"), HMAC-SHA-256 of "what do ya want for nothing?".
	got := httpapi.Principal([]byte("Jefe"), "what do ya want for nothing?")
	is.Equal(got, "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM") // 5bdcc146…3843 in base64url
}
