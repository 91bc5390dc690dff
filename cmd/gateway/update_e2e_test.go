package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/pmgate/pmgate/adapters/update"
)

// updateOf is the update notice of /admin/api/live, or nil.
func updateOf(t *testing.T, body string) *update.Status {
	t.Helper()
	var v struct {
		Update *update.Status `json:"update"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return v.Update
}

// TestTheControlPageSaysWhenANewerReleaseExists: with UPDATE_MANIFEST_URL
// set (a loopback manifest here), the control page's live data says a newer
// release exists, with the manifest's link, and the page shows it; unset,
// nothing is fetched and there is no notice. A manifest that cannot be read
// is "could_not_check", never "up to date".
func TestTheControlPageSaysWhenANewerReleaseExists(t *testing.T) {
	is := is.New(t)
	var hits atomic.Int64
	body := atomic.Value{}
	body.Store(`{"version":"99.0.0","url":"https://example.com/pmgate/releases/v99.0.0"}`)
	manifest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(body.Load().(string)))
	}))
	defer manifest.Close()

	off := serve(t, "access_token", nil)
	is.True(updateOf(t, off.get(t, "/admin/api/live")) == nil) // no setting, no notice
	is.Equal(hits.Load(), int64(0))                            // and nothing fetched

	s := serve(t, "access_token", map[string]string{"UPDATE_MANIFEST_URL": manifest.URL + "/manifest.json"})
	var u *update.Status
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if u = updateOf(t, s.get(t, "/admin/api/live")); u != nil && u.State != "not_checked_yet" {
			break
		}
	}
	is.True(u != nil)
	is.Equal(u.State, "newer")
	is.Equal(u.Latest, "99.0.0")
	is.Equal(u.URL, "https://example.com/pmgate/releases/v99.0.0")
	is.Equal(u.Current, version)
	is.Equal(hits.Load(), int64(1)) // one check at start, none per request
	app := s.get(t, "/admin/static/app.js")
	is.True(strings.Contains(app, "l.update")) // the page renders it

	body.Store("not a manifest")
	stale := serve(t, "access_token", map[string]string{"UPDATE_MANIFEST_URL": manifest.URL})
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if u = updateOf(t, stale.get(t, "/admin/api/live")); u != nil && u.State != "not_checked_yet" {
			break
		}
	}
	is.Equal(u.State, "could_not_check")
	is.True(strings.Contains(u.Reason, "not JSON"))
}

// TestUpdateManifestURLMustBeHTTPS: a plain-http manifest on another host is
// refused at start-up, naming the setting.
func TestUpdateManifestURLMustBeHTTPS(t *testing.T) {
	is := is.New(t)
	_, err := loadConfig(func(k string) string {
		return map[string]string{"PROVIDER_API_KEY": "sk-0123456789abcdef0123", "PROVIDER_MODELS": "m", "POSTMAN_MODEL_MAP": "m=GPT_55",
			"POSTMAN_ACCESS_TOKEN": "t", "POSTMAN_WORKSPACE_ID": "w", "POSTMAN_TRANSPORT_STRATEGY": "access_token",
			"UPDATE_MANIFEST_URL": "http://example.com/manifest.json"}[k]
	})
	is.True(err != nil && strings.Contains(err.Error(), "UPDATE_MANIFEST_URL: must be an https URL"))
}
