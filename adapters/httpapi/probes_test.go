package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/domain/keyring"
)

func getAs(h http.Handler, path, key string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	return serve(h, r)
}

func errorOf(t *testing.T, rec *httptest.ResponseRecorder) (code, message string) {
	t.Helper()
	var b struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatalf("not an error body: %v", err)
	}
	return b.Error.Code, b.Error.Message
}

// TestAModelCanBeRetrievedByID: GET /v1/models/{id} is the SDKs'
// models.retrieve: the model object for a configured id, model_not_found
// (naming the ids that work) otherwise, and a key is required.
func TestAModelCanBeRetrievedByID(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	rec := getAs(h, "/v1/models/"+model, apiKey)
	is.Equal(rec.Code, http.StatusOK)
	var m map[string]any
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &m))
	is.Equal(m["id"], model)
	is.Equal(m["object"], "model")
	rec = getAs(h, "/v1/models/gpt-4o", apiKey)
	is.Equal(rec.Code, http.StatusNotFound)
	code, msg := errorOf(t, rec)
	is.Equal(code, "model_not_found")
	is.True(strings.Contains(msg, "Use one of pm-test, pm-other.")) // the remedy: the configured ids
	is.Equal(getAs(h, "/v1/models/"+model, "").Code, http.StatusUnauthorized)
}

// TestModelNotFoundNamesOnlyTheCallersModels: a slot with an allowlist learns
// only its own models, so it cannot tell an unknown model from one it may not
// use.
func TestModelNotFoundNamesOnlyTheCallersModels(t *testing.T) {
	is := is.New(t)
	k := httpapi.NewKeyring(principalKey, []keyring.Slot{slotOf("editor", editorKey, []string{"pm-other"}, 0)})
	h, _ := newServer(t, &fakeService{}, withKeyring(k))
	rec := serve(h, requestAs(editorKey, withFields("")))
	is.Equal(rec.Code, http.StatusNotFound)
	_, msg := errorOf(t, rec)
	is.True(strings.Contains(msg, "Use one of pm-other."))
	is.True(!strings.Contains(msg, model)) // the model outside the allowlist is not named
	rec = getAs(h, "/v1/models/"+model, editorKey)
	is.Equal(rec.Code, http.StatusNotFound)
}

// TestTheHostRefusalNamesALLOWED_HOSTS: everyone behind a proxy or on a LAN
// name meets the 421; it names the setting that fixes it.
func TestTheHostRefusalNamesALLOWED_HOSTS(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, &fakeService{})
	r := httptest.NewRequest(http.MethodGet, "/health", nil)
	r.Host = "gateway.lan"
	rec := serve(h, r)
	is.Equal(rec.Code, http.StatusMisdirectedRequest)
	code, msg := errorOf(t, rec)
	is.Equal(code, "host_not_allowed")
	is.True(strings.Contains(msg, "ALLOWED_HOSTS"))
	r = httptest.NewRequest(http.MethodGet, "/health", nil)
	r.Header.Set("Origin", "https://evil.example")
	code, msg = errorOf(t, serve(h, r))
	is.Equal(code, "origin_not_allowed")
	is.True(strings.Contains(msg, "ALLOWED_HOSTS"))
}

// TestLivezAndReadyz: /livez answers while the process serves; /readyz
// follows Config.Readiness (503 with the failing check named), both without a
// key, and reports upstream_verified without requiring it.
func TestLivezAndReadyz(t *testing.T) {
	is := is.New(t)
	var ready atomic.Bool
	h, _ := newServer(t, &fakeService{}, func(c *httpapi.Config) {
		c.Readiness = func(context.Context) httpapi.Readiness {
			if ready.Load() {
				return httpapi.Readiness{Ready: true, Checks: map[string]string{"store": "ok"}}
			}
			return httpapi.Readiness{Checks: map[string]string{"store": "unreachable"}}
		}
	})
	rec := getAs(h, "/livez", "")
	is.Equal(rec.Code, http.StatusOK)
	is.Equal(strings.TrimSpace(rec.Body.String()), `{"status":"ok"}`)
	rec = getAs(h, "/readyz", "")
	is.Equal(rec.Code, http.StatusServiceUnavailable)
	var body map[string]any
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &body))
	is.Equal(body["status"], "not_ready")
	is.Equal(body["checks"], map[string]any{"store": "unreachable"})
	is.Equal(body["upstream_verified"], false)
	ready.Store(true)
	rec = getAs(h, "/readyz", "")
	is.Equal(rec.Code, http.StatusOK)
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &body))
	is.Equal(body["status"], "ready")
	r := httptest.NewRequest(http.MethodPost, "/readyz", nil)
	is.Equal(serve(h, r).Code, http.StatusMethodNotAllowed)
}

// TestAnUnknownKeyAsksTheKeyringToRefreshOnce: a key created a moment ago is
// served at once: the refused key triggers one refresh and is matched against
// the new set; a key still unknown after it is refused.
func TestAnUnknownKeyAsksTheKeyringToRefreshOnce(t *testing.T) {
	is := is.New(t)
	k := httpapi.NewKeyring(principalKey, []keyring.Slot{slotOf("router", routerKey, nil, 0)})
	var calls atomic.Int32
	k.SetRefresh(func() bool {
		calls.Add(1)
		k.Replace([]keyring.Slot{slotOf("router", routerKey, nil, 0), slotOf("editor", editorKey, nil, 0)})
		return true
	})
	h, _ := newServer(t, &fakeService{}, withKeyring(k))
	is.Equal(serve(h, requestAs(routerKey, withFields(""))).Code, http.StatusOK)
	is.Equal(calls.Load(), int32(0)) // a known key costs no refresh
	is.Equal(serve(h, requestAs(editorKey, withFields(""))).Code, http.StatusOK)
	is.Equal(calls.Load(), int32(1))
	is.Equal(serve(h, requestAs("pmg-nobody-0123456789abcdef", withFields(""))).Code, http.StatusUnauthorized)
	is.Equal(calls.Load(), int32(2)) // one refresh per refused request, no loop
}
