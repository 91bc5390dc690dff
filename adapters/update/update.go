// Package update tells the owner whether a newer release exists, and only
// when the owner asked: it reads a release manifest from the URL the owner
// set (UPDATE_MANIFEST_URL; unset, nothing is fetched — a local gateway does
// not phone home) and compares its version with the running one. It never
// downloads or installs anything: the manifest's link is shown, no more.
//
// The manifest is JSON: {"version": "1.2.3", "url": "https://…"} (url: the
// release's page). A check is bounded (maxManifestBytes, checkTimeout); its
// failure is shown as "could not check" with the reason, never as "up to
// date".
package update

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

const (
	maxManifestBytes = 64 << 10
	checkTimeout     = 10 * time.Second
	// Interval is how often a running gateway checks again.
	Interval = 24 * time.Hour
)

// ParseURL checks a manifest URL: https, or http to a loopback host (a
// manifest served on the same machine, and tests).
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("must be an absolute https URL without credentials")
	}
	switch u.Scheme {
	case "https":
		return u, nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return u, nil
		}
	}
	return nil, fmt.Errorf("must be an https URL (http only to a loopback host)")
}

// Status is the outcome of the latest check.
type Status struct {
	Current   string    `json:"current"`
	State     string    `json:"state"`            // "newer", "current", "could_not_check" or "not_checked_yet"
	Latest    string    `json:"latest,omitempty"` // the manifest's version
	URL       string    `json:"url,omitempty"`    // the manifest's link to the release
	Reason    string    `json:"reason,omitempty"` // why a check failed
	CheckedAt time.Time `json:"checked_at,omitzero"`
}

// Checker checks one manifest URL for one running version.
type Checker struct {
	manifest string
	current  string
	client   *http.Client
	now      func() time.Time
	status   atomic.Pointer[Status]
}

// New is a checker of manifest (checked by ParseURL) for the running version.
func New(manifest *url.URL, current string, client *http.Client, now func() time.Time) *Checker {
	if client == nil {
		client = &http.Client{}
	}
	c := &Checker{manifest: manifest.String(), current: current, client: client, now: now}
	c.status.Store(&Status{Current: current, State: "not_checked_yet"})
	return c
}

// Status is the latest check's outcome (safe from any goroutine).
func (c *Checker) Status() Status { return *c.status.Load() }

// Run checks now and then every interval until ctx ends.
func (c *Checker) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		c.Check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Check fetches the manifest once and records the outcome.
func (c *Checker) Check(ctx context.Context) Status {
	s := Status{Current: c.current, CheckedAt: c.now().UTC()}
	m, err := c.fetch(ctx)
	switch {
	case err != nil:
		s.State, s.Reason = "could_not_check", err.Error()
	default:
		s.Latest, s.URL = m.Version, m.URL
		s.State = "current"
		if Compare(m.Version, c.current) > 0 {
			s.State = "newer"
		}
	}
	c.status.Store(&s)
	return s
}

type manifest struct {
	Version string `json:"version"`
	URL     string `json:"url"`
}

func (c *Checker) fetch(ctx context.Context) (manifest, error) {
	var m manifest
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.manifest, nil)
	if err != nil {
		return m, fmt.Errorf("the manifest URL: %v", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return m, fmt.Errorf("no answer within %s", checkTimeout)
		}
		return m, fmt.Errorf("the manifest could not be fetched")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("the manifest answered HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestBytes+1))
	if err != nil {
		return m, fmt.Errorf("the manifest could not be read")
	}
	if len(body) > maxManifestBytes {
		return m, fmt.Errorf("the manifest is over %d KiB", maxManifestBytes>>10)
	}
	if json.Unmarshal(body, &m) != nil {
		return m, fmt.Errorf(`the manifest is not JSON {"version": "…", "url": "…"}`)
	}
	if _, ok := parse(m.Version); !ok {
		return m, fmt.Errorf("the manifest's version is not a semantic version")
	}
	if u, err := url.Parse(m.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return m, fmt.Errorf("the manifest's url is not an http(s) link")
	}
	return m, nil
}

var semverRE = regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z.-]+)?$`)

type semver struct {
	core [3]uint64
	pre  []string
}

func parse(v string) (semver, bool) {
	m := semverRE.FindStringSubmatch(v)
	if m == nil {
		return semver{}, false
	}
	var s semver
	for i := range 3 {
		n, err := strconv.ParseUint(m[i+1], 10, 64)
		if err != nil {
			return semver{}, false
		}
		s.core[i] = n
	}
	if m[4] != "" {
		s.pre = strings.Split(m[4], ".")
	}
	return s, true
}

// Compare orders two semantic versions by semver 2.0.0 precedence (a leading
// v allowed, build metadata ignored): -1, 0 or 1. A version that does not
// parse is older than any that does.
func Compare(a, b string) int {
	x, okA := parse(a)
	y, okB := parse(b)
	switch {
	case !okA && !okB:
		return 0
	case !okA:
		return -1
	case !okB:
		return 1
	}
	for i := range 3 {
		if x.core[i] != y.core[i] {
			return cmp(x.core[i] < y.core[i])
		}
	}
	switch {
	case len(x.pre) == 0 && len(y.pre) == 0:
		return 0
	case len(x.pre) == 0: // a release is newer than its pre-releases
		return 1
	case len(y.pre) == 0:
		return -1
	}
	for i := 0; i < len(x.pre) && i < len(y.pre); i++ {
		p, q := x.pre[i], y.pre[i]
		if p == q {
			continue
		}
		pn, pErr := strconv.ParseUint(p, 10, 64)
		qn, qErr := strconv.ParseUint(q, 10, 64)
		switch {
		case pErr == nil && qErr == nil:
			return cmp(pn < qn)
		case pErr == nil: // numeric identifiers are lower than alphanumeric ones
			return -1
		case qErr == nil:
			return 1
		}
		return cmp(p < q)
	}
	switch {
	case len(x.pre) < len(y.pre):
		return -1
	case len(x.pre) > len(y.pre):
		return 1
	}
	return 0
}

func cmp(less bool) int {
	if less {
		return -1
	}
	return 1
}
