package update

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"
)

func manifestServer(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func checker(t *testing.T, raw, current string) *Checker {
	u, err := ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return New(u, current, nil, func() time.Time { return time.Unix(1_800_000_000, 0) })
}

// TestCheckSaysWhetherANewerReleaseExists: a loopback manifest with a newer
// version is "newer" with its link; the same or an older one is "current";
// a development build of a release is older than the release.
func TestCheckSaysWhetherANewerReleaseExists(t *testing.T) {
	is := is.New(t)
	for _, c := range []struct{ manifest, current, state string }{
		{"0.11.0", "0.10.0", "newer"},
		{"0.10.0", "0.10.0-dev+0123456789ab", "newer"},
		{"0.10.0", "0.10.0", "current"},
		{"0.9.9", "0.10.0", "current"},
		{"v1.0.0", "1.0.0-rc.2", "newer"},
	} {
		srv, hits := manifestServer(t, 200, `{"version":"`+c.manifest+`","url":"https://example.com/releases/`+c.manifest+`"}`)
		ck := checker(t, srv.URL+"/manifest.json", c.current)
		is.Equal(ck.Status().State, "not_checked_yet") // nothing fetched before a check
		is.Equal(hits.Load(), int64(0))
		s := ck.Check(context.Background())
		is.Equal(s.State, c.state)
		is.Equal(s.Latest, c.manifest)
		is.Equal(s.URL, "https://example.com/releases/"+c.manifest)
		is.Equal(ck.Status(), s)
		is.Equal(hits.Load(), int64(1))
	}
}

// TestAFailedCheckIsCouldNotCheck: an error status, a body that is not the
// manifest, an over-long body, a bad version and no server are each
// "could_not_check" with a reason — never "current".
func TestAFailedCheckIsCouldNotCheck(t *testing.T) {
	is := is.New(t)
	for name, c := range map[string]struct {
		status int
		body   string
		reason string
	}{
		"404":         {404, "", "HTTP 404"},
		"not json":    {200, "<html>", "not JSON"},
		"too large":   {200, `{"version":"9.9.9","url":"https://x/","pad":"` + strings.Repeat("x", maxManifestBytes) + `"}`, "over 64 KiB"},
		"bad version": {200, `{"version":"latest","url":"https://x/"}`, "not a semantic version"},
		"bad url":     {200, `{"version":"9.9.9","url":"file:///etc/passwd"}`, "not an http(s) link"},
	} {
		srv, _ := manifestServer(t, c.status, c.body)
		s := checker(t, srv.URL, "0.10.0").Check(context.Background())
		is.Equal(s.State, "could_not_check") // name
		is.True(strings.Contains(s.Reason, c.reason))
		_ = name
	}
	srv, _ := manifestServer(t, 200, "")
	srv.Close()
	s := checker(t, srv.URL, "0.10.0").Check(context.Background())
	is.Equal(s.State, "could_not_check")
}

// TestParseURLAllowsHTTPSOrLoopbackHTTPOnly.
func TestParseURLAllowsHTTPSOrLoopbackHTTPOnly(t *testing.T) {
	is := is.New(t)
	for _, ok := range []string{"https://example.com/m.json", "http://127.0.0.1:9/m.json", "http://localhost/m", "http://[::1]:8/m"} {
		_, err := ParseURL(ok)
		is.NoErr(err)
	}
	for _, bad := range []string{"http://example.com/m.json", "ftp://example.com/m", "example.com/m", "https://u:p@example.com/m", ""} {
		_, err := ParseURL(bad)
		is.True(err != nil)
	}
}

func TestCompareFollowsSemverPrecedence(t *testing.T) {
	is := is.New(t)
	order := []string{"0.9.0", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0", "2.0.0"}
	for i := range order {
		for j := range order {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			is.Equal(Compare(order[i], order[j]), want)
		}
	}
	is.Equal(Compare("1.0.0+abc", "1.0.0"), 0) // build metadata ignored
	is.Equal(Compare("nonsense", "0.0.1"), -1)
}
