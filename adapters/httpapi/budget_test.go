package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/adapters/ops"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/keyring"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports/porttest"
)

// scopedKeyring has an inference slot "editor" (allowed model only) and an
// admin slot "router" with limits.
func scopedKeyring() *httpapi.Keyring {
	editor := slotOf("editor", editorKey, []string{model}, 0)
	router := slotOf("router", routerKey, nil, 0)
	router.Scope = keyring.ScopeAdmin
	router.Limits = usage.Limits{RequestsPerMinute: 30, DispatchesPerDay: 500}
	return httpapi.NewKeyring(principalKey, []keyring.Slot{editor, router})
}

func TestAnInferenceKeyGets403OnTheOperatorViews(t *testing.T) {
	is := is.New(t)
	u := app.NewUsage(memstore.NewUsage(), porttest.NewClock(porttest.T0), slog.New(slog.DiscardHandler), 90)
	keys := scopedKeyring()
	mon := ops.NewMonitor(ops.MonitorConfig{Usage: u, Slots: keys.Slots})
	h, _ := newServer(t, fiveDeltas(), withAdmin(mon), withKeyring(keys), func(c *httpapi.Config) { c.Usage = u })
	// The editor's own traffic, so that there is something to leak.
	is.Equal(serve(h, requestAs(editorKey, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)).Code, 200)
	for _, path := range []string{"/admin/api/overview", "/admin/api/live", "/admin/api/usage", "/metrics"} {
		rec := get(h, path, "Authorization", "Bearer "+editorKey)
		is.Equal(rec.Code, http.StatusForbidden)
		e := decodeError(t, rec.Body.Bytes())
		is.Equal(e.Code, "insufficient_scope")
		is.Equal(e.Type, "permission_error")
		is.Equal(rec.Header().Get("x-should-retry"), "false")
		body := rec.Body.String()
		// What the operator views hold: models outside the editor's allowlist,
		// upstream enums, other slots, the recent requests.
		for _, leak := range []string{"pm-other", "GPT_55", "router", "editor", "chat/completions", "pmgate_"} {
			is.True(!strings.Contains(body, leak))
		}
	}
	// The admin key reads them.
	for _, path := range []string{"/admin/api/overview", "/admin/api/live", "/admin/api/usage", "/metrics"} {
		is.Equal(get(h, path, "Authorization", "Bearer "+routerKey).Code, 200)
	}
	// The fixed key (PROVIDER_API_KEY) is an admin key.
	h2, _ := newServer(t, fiveDeltas(), withAdmin(mon))
	is.Equal(get(h2, "/admin/api/live", "Authorization", "Bearer "+apiKey).Code, 200)
}

func TestTheLiveViewShowsEachKeysBudgetAndTheLastHourByCause(t *testing.T) {
	is := is.New(t)
	ledger := memstore.NewUsage()
	clock := porttest.NewClock(time.Now())
	u := app.NewUsage(ledger, clock, slog.New(slog.DiscardHandler), 90)
	keys := scopedKeyring()
	mon := ops.NewMonitor(ops.MonitorConfig{Usage: u, Slots: keys.Slots})
	for range 3 {
		is.NoErr(porttest.AdmitOnce(context.Background(), ledger, "router", usage.Limits{}, clock.Now()))
	}
	refuse := &fakeService{ChatFn: func(_ context.Context, p app.Principal, _ chat.Request) (app.Turn, error) {
		b := usage.Budget{}
		for b.Admit(clock.Now(), usage.Limits{DispatchesPerDay: 1}) == nil {
		}
		return nil, b.Admit(clock.Now(), usage.Limits{DispatchesPerDay: 1})
	}}
	h, _ := newServer(t, refuse, withAdmin(mon), withKeyring(keys), func(c *httpapi.Config) { c.Usage = u })
	for range 2 {
		rec := serve(h, requestAs(editorKey, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
		is.Equal(rec.Code, 429)
		is.Equal(decodeError(t, rec.Body.Bytes()).Code, "key_quota_exhausted")
		is.Equal(rec.Header().Get("x-should-retry"), "false") // hours away: no automatic retry
		secs, err := strconv.Atoi(rec.Header().Get("retry-after"))
		is.NoErr(err)
		now := time.Now().UTC()
		midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
		is.True(secs > 0 && time.Duration(secs)*time.Second >= midnight.Sub(now)-time.Second && time.Duration(secs)*time.Second <= midnight.Sub(now)+2*time.Second)
	}
	rec := get(h, "/admin/api/live", "Authorization", "Bearer "+routerKey)
	is.Equal(rec.Code, 200)
	var live struct {
		Keys     []ops.KeyBudget
		LastHour map[string]int `json:"last_hour"`
	}
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &live))
	is.Equal(live.Keys, []ops.KeyBudget{
		{Slot: "editor", Scope: "inference"},
		{Slot: "router", Scope: "admin", RequestsPerMinute: 30, DispatchesPerDay: 500, DispatchesToday: 3, DispatchesMonth: 3},
	})
	is.Equal(live.LastHour["key_quota_exhausted"], 2)
	// The ledger counts both refusals under the editor's slot.
	rec = get(h, "/admin/api/usage", "Authorization", "Bearer "+routerKey)
	is.Equal(rec.Code, 200)
	var rep ops.UsageReport
	is.NoErr(json.Unmarshal(rec.Body.Bytes(), &rep))
	is.Equal(len(rep.Rows), 1)
	is.Equal(rep.Rows[0].Slot, "editor")
	is.Equal(rep.Rows[0].Outcome, "key_quota_exhausted")
	is.Equal(rep.Rows[0].Requests, int64(2))
	is.Equal(rep.Rows[0].Dispatches, int64(0))
	// The metrics count the refusals per slot and show the budget gauges.
	metrics := get(h, "/metrics", "Authorization", "Bearer "+routerKey).Body.String()
	is.True(strings.Contains(metrics, `pmgate_key_refusals_total{code="key_quota_exhausted",slot="editor"} 2`))
	is.True(strings.Contains(metrics, `pmgate_key_dispatches{slot="router",window="day"} 3`))
	is.True(strings.Contains(metrics, `pmgate_key_dispatch_limit{slot="router",window="day"} 500`))
	is.True(!strings.Contains(metrics, `pmgate_key_dispatch_limit{slot="editor"`)) // unlimited: no series
	// A bad range is refused with the field named.
	rec = get(h, "/admin/api/usage?since=yesterday", "Authorization", "Bearer "+routerKey)
	is.Equal(rec.Code, 400)
	is.Equal(decodeError(t, rec.Body.Bytes()).param(), "since")
}

func TestARateLimitRefusalIsRetryableWithTheWaitForOneRequest(t *testing.T) {
	is := is.New(t)
	refuse := &fakeService{ChatFn: func(context.Context, app.Principal, chat.Request) (app.Turn, error) {
		b := usage.Budget{}
		lim := usage.Limits{RequestsPerMinute: 2}
		_ = b.Admit(porttest.T0, lim)
		_ = b.Admit(porttest.T0, lim)
		return nil, b.Admit(porttest.T0, lim)
	}}
	h, _ := newServer(t, refuse)
	rec := post(h, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`)
	is.Equal(rec.Code, 429)
	is.Equal(decodeError(t, rec.Body.Bytes()).Code, "key_rate_limited")
	is.Equal(rec.Header().Get("retry-after"), "30")
	is.Equal(rec.Header().Get("x-should-retry"), "")
}

// TestAKeysRefusalsHaveTheirRetryHeadersOnEveryAPI: a key limit's refusal
// answers 429 with retry-after (the wait for a token, or until the UTC day
// ends) on chat, Responses and Messages alike; key_quota_exhausted also says
// x-should-retry: false, key_rate_limited does not (it frees in seconds).
func TestAKeysRefusalsHaveTheirRetryHeadersOnEveryAPI(t *testing.T) {
	now := time.Date(2026, 1, 30, 23, 0, 0, 0, time.UTC) // an hour before the day ends
	refusal := func(lim usage.Limits) error {
		var b usage.Budget
		for b.Admit(now, lim) == nil {
		}
		return b.Admit(now, lim)
	}
	for _, c := range []struct {
		name, retryAfter, shouldRetry string
		err                           error
	}{
		{"key_quota_exhausted", "3600", "false", refusal(usage.Limits{DispatchesPerDay: 1})},
		{"key_rate_limited", "20", "", refusal(usage.Limits{RequestsPerMinute: 3})},
	} {
		svc := &fakeService{ChatFn: func(context.Context, app.Principal, chat.Request) (app.Turn, error) { return nil, c.err }}
		h, _ := newServer(t, svc)
		for api, r := range map[string]*http.Request{
			"chat":      chatRequest(withFields("")),
			"responses": respRequest(`{"model":"` + model + `","input":"hi"}`),
			"messages":  msgRequest(msgBody(userHi, "")),
		} {
			t.Run(c.name+" "+api, func(t *testing.T) {
				is := is.New(t)
				rec := serve(h, r)
				is.Equal(rec.Code, http.StatusTooManyRequests)
				is.True(strings.Contains(rec.Body.String(), `"`+c.name+`"`)) // the stable code, in the API's shape
				is.Equal(rec.Header().Get("retry-after"), c.retryAfter)
				is.Equal(rec.Header().Get("x-should-retry"), c.shouldRetry)
			})
		}
	}
}
