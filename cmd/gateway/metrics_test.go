package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pmgate/pmgate/domain/errs"
)

// scrape reads /metrics with the Prometheus text parser.
func scrape(t *testing.T, s *served, header ...string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", s.base+"/metrics", nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the scrape is not valid Prometheus text: %v", err)
	}
	return fams
}

func scrapeWithKey(t *testing.T, s *served) map[string]*dto.MetricFamily {
	return scrape(t, s, "Authorization", "Bearer "+testKey)
}

// value returns the value of the series of family name whose labels include
// labels (0 when there is none); histograms give their sample count.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f, ok := fams[name]
	if !ok {
		return 0
	}
	total := 0.0
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

func TestMetricsMoveAsTurnsGoThrough(t *testing.T) {
	is := is.New(t)
	s := serve(t, "web_session", nil)
	const chat = "/v1/chat/completions"
	before := scrapeWithKey(t, s)
	is.Equal(value(before, "pmgate_chat_concurrency_limit"), 16.0)
	is.True(value(before, "go_goroutines") > 0)                 // Go runtime collector
	is.True(value(before, "process_resident_memory_bytes") > 0) // process collector

	// A text turn.
	resp := s.post(t, userBody("hello", false, ""))
	_, _ = io.Copy(io.Discard, resp.Body)
	is.Equal(resp.StatusCode, 200)
	m := scrapeWithKey(t, s)
	is.Equal(value(m, "pmgate_http_requests_total", "route", chat, "status", "200", "code", "none"), 1.0)
	is.Equal(value(m, "pmgate_upstream_requests_total", "strategy", "web_session", "outcome", "completed"), 1.0)
	is.Equal(value(m, "pmgate_completion_outcomes_total", "rule", "usage_after_output_v1"), 1.0)
	is.Equal(value(m, "pmgate_http_request_duration_seconds", "route", chat), 1.0)
	is.Equal(value(m, "pmgate_http_time_to_first_token_seconds", "route", chat), 1.0)

	// A failed stream: the error event's code is the request's code, and the
	// upstream outcome and the completion row that decided it are counted.
	resp = s.post(t, userBody("hello #scenario=ambiguous_eof", true, ""))
	events := sseEvents(t, resp.Body)
	var failure errorBody
	is.NoErr(json.Unmarshal([]byte(events[len(events)-1]), &failure))
	code := failure.Error.Code
	is.Equal(code, string(errs.UpstreamCompletionAmbiguous))
	m = scrapeWithKey(t, s)
	is.Equal(value(m, "pmgate_http_requests_total", "route", chat, "code", code), 1.0)
	is.Equal(value(m, "pmgate_upstream_requests_total", "outcome", code), 1.0)
	is.Equal(value(m, "pmgate_completion_outcomes_total", "rule", "usage_after_output_v1"), 2.0)
	is.Equal(value(m, "pmgate_http_requests_total", "route", chat), 2.0)

	// An upstream refusal before any stream: counted by its code, no completion row.
	resp = s.post(t, userBody("hello #scenario=rate_limited", false, ""))
	_, _ = io.Copy(io.Discard, resp.Body)
	is.Equal(resp.StatusCode, 429)
	m = scrapeWithKey(t, s)
	is.Equal(value(m, "pmgate_upstream_requests_total", "outcome", string(errs.UpstreamRateLimited)), 1.0)
	is.Equal(value(m, "pmgate_http_requests_total", "route", chat, "status", "429", "code", string(errs.UpstreamRateLimited)), 1.0)
	is.Equal(value(m, "pmgate_completion_outcomes_total"), 2.0) // unchanged: no stream, no row

	// A tool turn: one group PENDING; then its continuation: C01 (claim) and
	// C14 (consumed), the group CONSUMED.
	_, cont, tc := pending(t, s, "weather please")
	m = scrapeWithKey(t, s)
	is.Equal(value(m, "pmgate_correlation_groups", "state", "PENDING"), 1.0)
	is.Equal(value(m, "pmgate_correlation_live_groups"), 1.0)
	is.Equal(value(m, "pmgate_correlation_live_calls"), float64(len(tc.Choices[0].Message.ToolCalls))) // the group's calls
	status, _, _ := turnResult(t, s, chatBody(t, testModel, cont, toolsJSON, ""))
	is.Equal(status, 200)
	m = scrapeWithKey(t, s)
	is.Equal(value(m, "pmgate_correlation_transitions_total", "row", "C01", "from", "PENDING", "to", "INFLIGHT"), 1.0)
	is.Equal(value(m, "pmgate_correlation_transitions_total", "row", "C14", "from", "INFLIGHT", "to", "CONSUMED"), 1.0)
	is.Equal(value(m, "pmgate_correlation_groups", "state", "PENDING"), 0.0)
	is.Equal(value(m, "pmgate_correlation_groups", "state", "CONSUMED"), 1.0)
	is.Equal(value(m, "pmgate_upstream_requests_total", "outcome", "completed"), 3.0)

	// The same results again: replayed from the cache (C18), never dispatched.
	status, _, _ = turnResult(t, s, chatBody(t, testModel, cont, toolsJSON, ""))
	is.Equal(status, 200)
	m = scrapeWithKey(t, s)
	is.Equal(value(m, "pmgate_correlation_transitions_total", "row", "C18"), 1.0)
	is.Equal(value(m, "pmgate_upstream_requests_total"), 5.0) // text, failure, refusal, tool turn, one continuation

	// No label carries a key, a request id, a tool-call id or content.
	for name, f := range m {
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				v := l.GetValue()
				if strings.Contains(v, testKey) || strings.Contains(v, "call_pmn_") || strings.Contains(v, "weather") ||
					strings.Contains(v, "hello") || len(v) > 64 {
					t.Errorf("%s has label %s=%q", name, l.GetName(), v)
				}
			}
		}
	}
}

func TestMetricsNeedTheKeyUnlessOpenedOnLoopback(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", nil)
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong-key-0123456789"}} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", s.base+"/metrics", nil)
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		is.NoErr(err)
		var e errorBody
		is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
		resp.Body.Close()
		is.Equal(resp.StatusCode, 401)
		is.Equal(e.Error.Code, "invalid_api_key")
	}
	_ = scrape(t, s, "x-api-key", testKey) // the API's other key header works too

	open := serve(t, "access_token", map[string]string{"METRICS_AUTH": "none"})
	fams := scrape(t, open)
	is.Equal(value(fams, "pmgate_build_info", "strategy", "access_token"), 1.0)
}

func TestOperateSettingsAreValidated(t *testing.T) {
	base := map[string]string{"PROVIDER_API_KEY": testKey, "PROVIDER_MODELS": testModel, "POSTMAN_TRANSPORT_STRATEGY": "access_token",
		"POSTMAN_ACCESS_TOKEN": testToken, "POSTMAN_ORIGIN": "https://127.0.0.1:9", "POSTMAN_WORKSPACE_ID": testWorkspace,
		"POSTMAN_MODEL_MAP": testModel + "=GPT_55"}
	load := func(extra map[string]string) (config, error) {
		return loadConfig(func(k string) string {
			if v, ok := extra[k]; ok {
				return v
			}
			return base[k]
		})
	}
	for _, tc := range []struct {
		env          map[string]string
		admin, open  bool
		refusedField string
	}{
		{env: nil, admin: true},
		{env: map[string]string{"PROVIDER_HOST": "::1"}, admin: true},
		{env: map[string]string{"PROVIDER_HOST": "localhost", "METRICS_AUTH": "none"}, admin: true, open: true},
		{env: map[string]string{"PROVIDER_HOST": "0.0.0.0"}, admin: false},
		{env: map[string]string{"PROVIDER_HOST": "10.1.2.3", "ADMIN_ENABLED": "true"}, admin: true},
		{env: map[string]string{"ADMIN_ENABLED": "false", "METRICS_AUTH": "key"}, admin: false},
		{env: map[string]string{"PROVIDER_HOST": "0.0.0.0", "METRICS_AUTH": "none"}, refusedField: "METRICS_AUTH"},
		{env: map[string]string{"METRICS_AUTH": "basic"}, refusedField: "METRICS_AUTH"},
		{env: map[string]string{"ADMIN_ENABLED": "yes"}, refusedField: "ADMIN_ENABLED"},
	} {
		c, err := load(tc.env)
		if tc.refusedField != "" {
			if !errs.Has(err, errs.ConfigInvalid) || !strings.Contains(err.Error(), tc.refusedField) {
				t.Errorf("%v: got %v, want config_invalid naming %s", tc.env, err, tc.refusedField)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.env, err)
			continue
		}
		if c.adminEnabled != tc.admin || c.metricsOpen != tc.open {
			t.Errorf("%v: admin %v open %v, want %v %v", tc.env, c.adminEnabled, c.metricsOpen, tc.admin, tc.open)
		}
	}
}

func TestTheAdminPageIsNotServedWhenDisabled(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", map[string]string{"ADMIN_ENABLED": "false"})
	for _, p := range []string{"/admin", "/admin/api/overview"} {
		resp, err := http.Get(s.base + p)
		is.NoErr(err)
		resp.Body.Close()
		is.Equal(resp.StatusCode, 404)
	}
}

func TestSweepTransitionsAreCountedByRow(t *testing.T) {
	is := is.New(t)
	s := serve(t, "web_session", map[string]string{"CORRELATION_PENDING_TTL_MS": "1000", "CORRELATION_TERMINAL_TTL_MS": "1000"})
	_, _, _ = pending(t, s, "weather please")
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := scrapeWithKey(t, s)
		expired := value(m, "pmgate_correlation_transitions_total", "row", "C09", "from", "PENDING", "to", "EXPIRED")
		removed := value(m, "pmgate_correlation_transitions_total", "row", "C24", "from", "EXPIRED", "to", "REMOVED")
		if expired == 1 && removed == 1 {
			// A scrape gathers its collectors concurrently, so the gauges of
			// the scrape that first shows the removal may predate it; the
			// next scrape's may not.
			m = scrapeWithKey(t, s)
			is.Equal(value(m, "pmgate_correlation_groups", "state", "EXPIRED"), 0.0)
			is.Equal(value(m, "pmgate_correlation_live_groups"), 0.0)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sweep rows not counted: C09=%v C24=%v", expired, removed)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The conversation anchor machine's rows reach /metrics like the correlation
// machine's: a turn that continues the previous one's conversation claims its
// anchor (A01) and, proven complete, advances it (A08).
func TestConversationTransitionsAreCountedByRow(t *testing.T) {
	is := is.New(t)
	s := serve(t, "web_session", nil)
	resp := s.post(t, userBody("hello", false, ""))
	var first struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	is.NoErr(json.NewDecoder(resp.Body).Decode(&first))
	resp.Body.Close()
	is.Equal(resp.StatusCode, 200)
	answer := first.Choices[0].Message.Content
	resp = s.post(t, fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hello"},{"role":"assistant","content":%q},{"role":"user","content":"and then?"}]}`,
		testModel, answer))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	is.Equal(resp.StatusCode, 200)
	m := scrapeWithKey(t, s)
	is.Equal(value(m, "pmgate_conversation_transitions_total", "row", "A01", "from", "ACTIVE", "to", "CLAIMED"), 1.0)
	is.Equal(value(m, "pmgate_conversation_transitions_total", "row", "A08", "from", "CLAIMED", "to", "ADVANCED"), 1.0)
	for _, name := range []string{"pmgate_observer_events_dropped_total", "pmgate_observer_panics_total"} {
		is.Equal(len(m[name].GetMetric()), 2) // one series per subscriber: metrics, log
	}
	is.Equal(value(m, "pmgate_observer_events_dropped_total", "observer", "metrics"), 0.0)
	is.Equal(value(m, "pmgate_observer_panics_total", "observer", "log"), 0.0)
}
