package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/keyring"
)

const (
	editorKey = "pmg-editor-key-0123456789abcdef"
	routerKey = "pmg-router-key-0123456789abcdef"
)

func slotOf(id, key string, models []string, maxConcurrent int) keyring.Slot {
	return keyring.Slot{ID: id, Digest: sha256.Sum256([]byte(key)), Models: models, MaxConcurrent: maxConcurrent}
}

func withKeyring(k *httpapi.Keyring) func(*httpapi.Config) {
	return func(c *httpapi.Config) { c.Keys, c.APIKeys = k, nil }
}

func requestAs(key, body string) *http.Request {
	r := chatRequest(body)
	r.Header.Set("Authorization", "Bearer "+key)
	return r
}

func modelsAs(t *testing.T, h http.Handler, key string) []string {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
	r.Header.Set("Authorization", "Bearer "+key)
	rec := serve(h, r)
	if rec.Code != http.StatusOK {
		t.Fatalf("models: %d %s", rec.Code, rec.Body)
	}
	var list struct{ Data []struct{ ID string } }
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids
}

func TestEachSlotIsItsOwnPrincipal(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	k := httpapi.NewKeyring(principalKey, []keyring.Slot{slotOf("editor", editorKey, nil, 0), slotOf("router", routerKey, nil, 0)})
	h, _ := newServer(t, svc, withKeyring(k))
	is.Equal(serve(h, requestAs(editorKey, withFields(""))).Code, http.StatusOK)
	pe, _ := svc.Last()
	is.Equal(serve(h, requestAs(routerKey, withFields(""))).Code, http.StatusOK)
	pr, _ := svc.Last()
	is.Equal(pe.Slot, "editor") // the slot id is reported, never the key
	is.Equal(pr.Slot, "router")
	is.True(pe.ID != pr.ID) // two slots, two trust domains
}

func TestARotatedKeyIsANewPrincipalUnderTheSameSlotID(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	old := httpapi.SlotPrincipal(principalKey, "editor", sha256.Sum256([]byte(editorKey)))
	rotated := httpapi.SlotPrincipal(principalKey, "editor", sha256.Sum256([]byte(routerKey)))
	is.True(old != rotated) // pending tool calls of the old key are unknown to the new one
}

func TestAModelOutsideTheAllowlistIsRefusedLikeAnUnknownModel(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	k := httpapi.NewKeyring(principalKey, []keyring.Slot{slotOf("editor", editorKey, []string{"pm-other"}, 0), slotOf("router", routerKey, nil, 0)})
	h, _ := newServer(t, svc, withKeyring(k))

	is.Equal(modelsAs(t, h, editorKey), []string{"pm-other"})        // /v1/models lists only the slot's models
	is.Equal(modelsAs(t, h, routerKey), []string{model, "pm-other"}) // a slot without allowlist sees every model

	outside := serve(h, requestAs(editorKey, withFields("")))
	unknown := serve(h, requestAs(editorKey, `{"model":"no-such-model","messages":`+basicMsg+`}`))
	is.Equal(outside.Code, http.StatusNotFound)
	is.Equal(decodeError(t, outside.Body.Bytes()).Code, "model_not_found")
	is.Equal(outside.Body.String(), unknown.Body.String()) // the same answer as a model that does not exist
	is.Equal(svc.Calls(), 0)                               // nothing reached the service
	is.Equal(serve(h, requestAs(routerKey, withFields(""))).Code, http.StatusOK)
}

func TestASlotsConcurrencyLimitAppliesOnTopOfTheGlobalOne(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	svc := &fakeService{ChatFn: func(ctx context.Context, p app.Principal, req chat.Request) (app.Turn, error) {
		if p.Slot == "editor" {
			started <- struct{}{}
			<-release
		}
		return script(app.Delta{Text: "ok"}, app.Delta{Finish: app.FinishStop}), nil
	}}
	k := httpapi.NewKeyring(principalKey, []keyring.Slot{slotOf("editor", editorKey, nil, 1), slotOf("router", routerKey, nil, 0)})
	h, _ := newServer(t, svc, withKeyring(k))
	var wg sync.WaitGroup
	wg.Add(1)
	var first int
	go func() { defer wg.Done(); first = serve(h, requestAs(editorKey, withFields(""))).Code }()
	<-started
	second := serve(h, requestAs(editorKey, withFields("")))
	is.Equal(second.Code, http.StatusTooManyRequests) // the slot's one request is running
	is.Equal(decodeError(t, second.Body.Bytes()).Code, "concurrency_limit_exceeded")
	is.True(second.Header().Get("retry-after") != "")
	is.Equal(serve(h, requestAs(routerKey, withFields(""))).Code, http.StatusOK) // another slot is not held up
	close(release)
	wg.Wait()
	is.Equal(first, http.StatusOK)
	is.Equal(serve(h, requestAs(editorKey, withFields(""))).Code, http.StatusOK) // the slot is free again
}

func TestReplacingTheKeyringRevokesAndAddsSlots(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	k := httpapi.NewKeyring(principalKey, []keyring.Slot{slotOf("editor", editorKey, nil, 0)})
	h, _ := newServer(t, svc, withKeyring(k))
	is.Equal(serve(h, requestAs(editorKey, withFields(""))).Code, http.StatusOK)
	is.Equal(serve(h, requestAs(routerKey, withFields(""))).Code, http.StatusUnauthorized)

	k.Replace([]keyring.Slot{slotOf("router", routerKey, nil, 0)})
	revoked := serve(h, requestAs(editorKey, withFields("")))
	is.Equal(revoked.Code, http.StatusUnauthorized) // a revoked slot is refused on its next request
	is.Equal(decodeError(t, revoked.Body.Bytes()).Code, "invalid_api_key")
	is.Equal(serve(h, requestAs(routerKey, withFields(""))).Code, http.StatusOK) // a new slot works at once

	k.Replace(nil)
	is.Equal(k.Len(), 0)
	is.Equal(serve(h, requestAs(routerKey, withFields(""))).Code, http.StatusUnauthorized) // no slot: every key refused
}

// holdEditor returns a service that blocks the editor slot's turns until
// release is closed, signalling each start.
func holdEditor() (svc *fakeService, started chan struct{}, release chan struct{}) {
	release = make(chan struct{})
	started = make(chan struct{}, 8)
	svc = &fakeService{ChatFn: func(ctx context.Context, p app.Principal, req chat.Request) (app.Turn, error) {
		if p.Slot == "editor" {
			started <- struct{}{}
			<-release
		}
		return script(app.Delta{Text: "ok"}, app.Delta{Finish: app.FinishStop}), nil
	}}
	return svc, started, release
}

// refusedAtOnce serves r and fails unless it is answered 429 within a few
// seconds (an admitted editor request would block until release).
func refusedAtOnce(t *testing.T, h http.Handler, r *http.Request) {
	t.Helper()
	codes := make(chan int, 1)
	go func() { codes <- serve(h, r).Code }()
	select {
	case c := <-codes:
		if c != http.StatusTooManyRequests {
			t.Fatalf("got %d, want 429", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("admitted over the slot's limit")
	}
}

func TestAReloadCarriesTheSlotsInFlightCountToItsNewLimit(t *testing.T) {
	t.Parallel()
	svc, started, release := holdEditor()
	defer close(release)
	k := httpapi.NewKeyring(principalKey, []keyring.Slot{slotOf("editor", editorKey, nil, 3)})
	h, _ := newServer(t, svc, withKeyring(k))
	for range 2 {
		go serve(h, requestAs(editorKey, withFields("")))
		<-started
	}
	k.Replace([]keyring.Slot{slotOf("editor", editorKey, nil, 2)}) // two are running: the new limit is reached
	refusedAtOnce(t, h, requestAs(editorKey, withFields("")))
	k.Replace([]keyring.Slot{slotOf("editor", editorKey, nil, 3)}) // raised: one more place
	go serve(h, requestAs(editorKey, withFields("")))
	<-started
	refusedAtOnce(t, h, requestAs(editorKey, withFields("")))
}

func TestARaisedLimitAdmitsAtOnceWhileARequestIsHeld(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc, started, release := holdEditor()
	k := httpapi.NewKeyring(principalKey, []keyring.Slot{slotOf("editor", editorKey, nil, 1)})
	h, _ := newServer(t, svc, withKeyring(k))
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	go serve(h, requestAs(editorKey, withFields("")))
	<-started
	k.Replace([]keyring.Slot{slotOf("editor", editorKey, nil, 2)})
	codes := make(chan int, 1)
	go func() { codes <- serve(h, requestAs(editorKey, withFields(""))).Code }()
	select {
	case <-started: // the second is admitted under the new limit
	case c := <-codes:
		t.Fatalf("a second request under max_concurrent 2 got %d", c)
	}
	refusedAtOnce(t, h, requestAs(editorKey, withFields(""))) // the first still counts: not a third
	close(release)
	is.Equal(<-codes, http.StatusOK)
}

func TestASlotsRefusalGivesBackItsGlobalPlace(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc, started, release := holdEditor()
	k := httpapi.NewKeyring(principalKey, []keyring.Slot{slotOf("editor", editorKey, nil, 1), slotOf("router", routerKey, nil, 0)})
	h, _ := newServer(t, svc, withKeyring(k), func(c *httpapi.Config) { c.MaxConcurrent = 2 })
	defer close(release)
	go serve(h, requestAs(editorKey, withFields("")))
	<-started
	for range 3 { // each refusal of the editor's slot must give its global place back
		refusedAtOnce(t, h, requestAs(editorKey, withFields("")))
	}
	is.Equal(serve(h, requestAs(routerKey, withFields(""))).Code, http.StatusOK) // the second global place is free
}

func TestAKeyRevokedWhileItsBodyArrivesIsRefusedBeforeDispatch(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	k := httpapi.NewKeyring(principalKey, []keyring.Slot{slotOf("editor", editorKey, nil, 0), slotOf("router", routerKey, nil, 0)})
	h, _ := newServer(t, svc, withKeyring(k))
	pr, pw := io.Pipe()
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", pr)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+editorKey)
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() { done <- serve(h, r) }()
	body := withFields("")
	_, _ = pw.Write([]byte(body[:5])) // authenticated at the headers, the body still arriving
	k.Replace([]keyring.Slot{slotOf("router", routerKey, nil, 0)})
	_, _ = pw.Write([]byte(body[5:]))
	pw.Close()
	rec := <-done
	is.Equal(rec.Code, http.StatusUnauthorized) // revoked before dispatch: refused
	is.Equal(decodeError(t, rec.Body.Bytes()).Code, "invalid_api_key")
	is.Equal(svc.Calls(), 0) // nothing reached the service

	// A rotated key under the same slot id is a revocation too.
	pr, pw = io.Pipe()
	r = httptest.NewRequest(http.MethodPost, "/v1/chat/completions", pr)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+routerKey)
	go func() { done <- serve(h, r) }()
	_, _ = pw.Write([]byte(body[:5]))
	k.Replace([]keyring.Slot{slotOf("router", editorKey, nil, 0)})
	_, _ = pw.Write([]byte(body[5:]))
	pw.Close()
	is.Equal((<-done).Code, http.StatusUnauthorized)
	is.Equal(svc.Calls(), 0)
}

func TestRetainDropsTheSlotsARefusedFileNoLongerLists(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	k := httpapi.NewKeyring(principalKey, []keyring.Slot{slotOf("editor", editorKey, nil, 0), slotOf("router", routerKey, nil, 0)})
	h, _ := newServer(t, &fakeService{}, withKeyring(k))
	is.Equal(k.Retain(func(id string, _ [32]byte) bool { return id == "router" }), 1)
	is.Equal(serve(h, requestAs(editorKey, withFields(""))).Code, http.StatusUnauthorized)
	is.Equal(serve(h, requestAs(routerKey, withFields(""))).Code, http.StatusOK)
}
