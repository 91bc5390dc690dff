package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
)

// Monitor is what the operator can see of a running gateway: the Prometheus
// metrics served at /metrics and the recent activity the /admin page shows.
// The wiring creates one per process, hands ObserveDecision to the app and
// ObserveExchange to the upstream adapter, and passes it to NewServer, which
// records every request in it.
//
// Every label value comes from a closed set: route templates, HTTP statuses,
// stable codes, strategies, rule and row ids, machine states. The recent lists
// hold request ids and model ids for the control page (behind the API key),
// never content, keys or upstream ids.
type Monitor struct {
	reg *prometheus.Registry

	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	ttft      *prometheus.HistogramVec
	upstream  *prometheus.CounterVec
	outcomes  *prometheus.CounterVec
	trans     *prometheus.CounterVec
	storeErrs prometheus.Counter
	bySlot    *prometheus.CounterVec
	slots     sync.Map // slot id -> prometheus.Counter, resolved once per slot
	// byRoute holds the resolved series of every route template; it is
	// written only in NewMonitor, so the request path reads it without a lock.
	byRoute map[string]*routeSeries

	mu          sync.Mutex
	recent      [recentRequests]listedRequest
	recentN     int // records written so far
	transitions [recentTransitions]TransitionRecord
	transN      int
	now         func() time.Time
}

// Sizes of the recent lists shown on the control page.
const (
	recentRequests    = 100
	recentTransitions = 50
)

// RequestRecord is one finished request as the control page lists it.
type RequestRecord struct {
	Time       time.Time `json:"time"`
	RequestID  string    `json:"request_id"`
	Route      string    `json:"route"`
	Status     int       `json:"status"`
	Code       string    `json:"code"`
	Model      string    `json:"model"`
	Slot       string    `json:"slot"` // the API key slot's id ("" before authentication), never the key
	Stream     bool      `json:"stream"`
	ToolCalls  int       `json:"tool_calls"`
	DurationMS float64   `json:"duration_ms"`
	TTFTMS     *float64  `json:"ttft_ms"` // null when no token was produced
}

// listedRequest is a RequestRecord as the ring keeps it: the time to first
// token by value, so that recording allocates nothing.
type listedRequest struct {
	RequestRecord
	ttft    float64
	hasTTFT bool
}

// TransitionRecord is one applied row of the correlation machine.
type TransitionRecord struct {
	Time   time.Time `json:"time"`
	Row    string    `json:"row"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	Code   string    `json:"code"`
	Count  int       `json:"count"`  // how many groups took the row at once (sweeps)
	Source string    `json:"source"` // "request" or "sweep"
}

// MonitorConfig names the constant facts of the process.
type MonitorConfig struct {
	Version  string
	Strategy string
	// Counts reads the correlation store for the group and live-call gauges;
	// nil leaves those gauges out.
	Counts func(ctx context.Context) (correlation.Counts, error)
	// Now is the clock of the recent lists (time.Now when nil).
	Now func() time.Time
}

// routeSeries are the series of one route template, resolved once: the
// histograms, the counter of plain successes (200, no code) and, for the other
// status and code pairs, a cache filled on first use.
type routeSeries struct {
	duration, ttft prometheus.Observer
	ok             prometheus.Counter
	other          sync.Map // answerKey -> prometheus.Counter
}

type answerKey struct {
	status int
	code   errs.Code
}

// routeTemplates is every value routeOf can return.
var routeTemplates = []string{pathChat, pathResponses, pathMessages, pathCount, pathModels, pathHealth, pathMetrics, pathAdmin, pathAdminStatic + "*",
	pathAdminOverview, pathAdminLive, "unmatched"}

// Latency buckets in seconds: from a fast local refusal to a long upstream turn.
var latencyBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// NewMonitor registers every pmgate metric and the Go runtime and process
// collectors in a registry of its own.
func NewMonitor(cfg MonitorConfig) *Monitor {
	m := &Monitor{reg: prometheus.NewRegistry(), now: cfg.Now}
	if m.now == nil {
		m.now = time.Now
	}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pmgate_http_requests_total",
		Help: "HTTP requests answered, by route template, status and stable code (none on success)."},
		[]string{"route", "status", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pmgate_http_request_duration_seconds",
		Help: "Time from the request's arrival to the end of its answer, by route template.", Buckets: latencyBuckets},
		[]string{"route"})
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "pmgate_http_time_to_first_token_seconds",
		Help: "Time from the request's arrival to its first text or tool-call delta, by route template.", Buckets: latencyBuckets},
		[]string{"route"})
	m.upstream = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pmgate_upstream_requests_total",
		Help: "Upstream exchanges by strategy and outcome (completed, or the stable code of the failure)."},
		[]string{"strategy", "outcome"})
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pmgate_completion_outcomes_total",
		Help: "Upstream streams by completion rule and the declared row that decided their outcome."},
		[]string{"rule", "row"})
	m.trans = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pmgate_correlation_transitions_total",
		Help: "Rows of the correlation group machine applied by requests, by row id and states."},
		[]string{"row", "from", "to"})
	m.bySlot = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pmgate_key_requests_total",
		Help: "Authenticated requests by API key slot id (the configured slot ids; never a key)."}, []string{"slot"})
	m.storeErrs = prometheus.NewCounter(prometheus.CounterOpts{Name: "pmgate_correlation_store_errors_total",
		Help: "Correlation store failures: requests answered correlation_store_unavailable and failed reads of the gauges."})
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pmgate_build_info",
		Help: "Always 1; the labels name the version and the upstream strategy."}, []string{"version", "strategy"})
	build.WithLabelValues(cfg.Version, cfg.Strategy).Set(1)
	m.reg.MustRegister(m.bySlot, m.requests, m.duration, m.ttft, m.upstream, m.outcomes, m.trans, m.storeErrs, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.Counts != nil {
		m.reg.MustRegister(&storeCollector{counts: cfg.Counts, errs: m.storeErrs})
	}
	m.byRoute = make(map[string]*routeSeries, len(routeTemplates))
	for _, r := range routeTemplates {
		m.byRoute[r] = &routeSeries{duration: m.duration.WithLabelValues(r), ttft: m.ttft.WithLabelValues(r),
			ok: m.requests.WithLabelValues(r, "200", "none")}
	}
	return m
}

// Registry returns the registry /metrics serves (tests gather from it).
func (m *Monitor) Registry() *prometheus.Registry { return m.reg }

// ObserveDecision records one applied row of the correlation machine.
func (m *Monitor) ObserveDecision(d correlation.Decision) {
	m.transition(TransitionRecord{Row: d.Row, From: string(d.From), To: string(d.To), Code: string(d.Code),
		Count: 1, Source: "request"})
}

// ObserveSweep records the rows a sweep of the store applied (expiry, the
// in-flight deadline, tombstone removal), in row order.
func (m *Monitor) ObserveSweep(rep correlation.SweepReport) {
	for _, r := range correlation.Table().Rows {
		if n := rep.Rows[r.ID]; n > 0 {
			m.transition(TransitionRecord{Row: r.ID, From: r.From, To: r.To, Count: n, Source: "sweep"})
		}
	}
}

func (m *Monitor) transition(t TransitionRecord) {
	m.trans.WithLabelValues(t.Row, t.From, t.To).Add(float64(t.Count))
	t.Time = m.now()
	m.mu.Lock()
	m.transitions[m.transN%recentTransitions] = t
	m.transN++
	m.mu.Unlock()
}

// ObserveExchange records how one upstream exchange ended: strategy and
// outcome always, rule and row when a stream reached an outcome.
func (m *Monitor) ObserveExchange(strategy, outcome, rule, row string) {
	m.upstream.WithLabelValues(strategy, outcome).Inc()
	if row != "" {
		m.outcomes.WithLabelValues(rule, row).Inc()
	}
}

// observeRequest records one finished request. It is on every request's
// path, so the label lookups are cached: one sync.Map load per metric.
func (m *Monitor) observeRequest(rec RequestRecord, code errs.Code, start, firstToken time.Time, end time.Time) {
	rs := m.byRoute[rec.Route]
	if rs == nil { // unreachable: routeOf returns only templates
		rs = m.byRoute["unmatched"]
	}
	if rec.Status == http.StatusOK && code == "" {
		rs.ok.Inc()
	} else {
		k := answerKey{status: rec.Status, code: code}
		c, ok := rs.other.Load(k)
		if !ok {
			label := string(code)
			if label == "" {
				label = "none"
			}
			c, _ = rs.other.LoadOrStore(k, m.requests.WithLabelValues(rec.Route, strconv.Itoa(rec.Status), label))
		}
		c.(prometheus.Counter).Inc()
	}
	d := end.Sub(start)
	rs.duration.Observe(d.Seconds())
	rec.DurationMS = float64(d.Microseconds()) / 1000
	entry := listedRequest{RequestRecord: rec}
	if !firstToken.IsZero() {
		t := firstToken.Sub(start)
		rs.ttft.Observe(t.Seconds())
		entry.ttft, entry.hasTTFT = float64(t.Microseconds())/1000, true
	}
	if code == errs.CorrelationStoreUnavailable {
		m.storeErrs.Inc()
	}
	if rec.Slot != "" {
		c, ok := m.slots.Load(rec.Slot)
		if !ok {
			c, _ = m.slots.LoadOrStore(rec.Slot, m.bySlot.WithLabelValues(rec.Slot))
		}
		c.(prometheus.Counter).Inc()
	}
	if !listed(rec.Route) {
		return
	}
	m.mu.Lock()
	m.recent[m.recentN%recentRequests] = entry
	m.recentN++
	m.mu.Unlock()
}

// listed says which routes the recent list shows: the API and /health, not
// the control page's own polling or the scrapes, which would push every
// client request out of the list within two minutes. Metrics count them all.
func listed(route string) bool {
	return route != pathMetrics && !strings.HasPrefix(route, pathAdmin)
}

// Recent returns the last requests and transitions, newest first.
func (m *Monitor) Recent() ([]RequestRecord, []TransitionRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	listed := newestFirst(m.recent[:], m.recentN)
	reqs := make([]RequestRecord, len(listed))
	for i, l := range listed {
		reqs[i] = l.RequestRecord
		if l.hasTTFT {
			reqs[i].TTFTMS = &listed[i].ttft
		}
	}
	return reqs, newestFirst(m.transitions[:], m.transN)
}

func newestFirst[T any](ring []T, written int) []T {
	n := min(written, len(ring))
	out := make([]T, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, ring[(written-i)%len(ring)])
	}
	return out
}

// storeCollector reads the correlation store at each scrape for the gauges of
// groups per state and live calls. Every declared state is reported, zero
// included, so that a query never sees a series vanish.
type storeCollector struct {
	counts func(ctx context.Context) (correlation.Counts, error)
	errs   prometheus.Counter
}

var (
	descGroups = prometheus.NewDesc("pmgate_correlation_groups", "Stored tool-call groups by state.", []string{"state"}, nil)
	descLiveG  = prometheus.NewDesc("pmgate_correlation_live_groups", "Groups holding capacity (pending and in flight).", nil, nil)
	descLiveC  = prometheus.NewDesc("pmgate_correlation_live_calls", "Tool calls of the live groups.", nil, nil)
	descMaxG   = prometheus.NewDesc("pmgate_correlation_max_groups", "The live-group capacity (CORRELATION_MAX_GROUPS).", nil, nil)
	descMaxC   = prometheus.NewDesc("pmgate_correlation_max_calls", "The live-call capacity (CORRELATION_MAX_CALLS).", nil, nil)
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descGroups, descLiveG, descLiveC, descMaxG, descMaxC} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.counts(ctx)
	if err != nil {
		c.errs.Inc()
		return // the gauges are absent for this scrape; the error counter moved
	}
	for _, s := range correlation.States {
		if s == correlation.Removed {
			continue // never stored
		}
		ch <- prometheus.MustNewConstMetric(descGroups, prometheus.GaugeValue, float64(counts.ByState[s]), string(s))
	}
	ch <- prometheus.MustNewConstMetric(descLiveG, prometheus.GaugeValue, float64(counts.LiveGroups))
	ch <- prometheus.MustNewConstMetric(descLiveC, prometheus.GaugeValue, float64(counts.LiveCalls))
	ch <- prometheus.MustNewConstMetric(descMaxG, prometheus.GaugeValue, float64(counts.MaxGroups))
	ch <- prometheus.MustNewConstMetric(descMaxC, prometheus.GaugeValue, float64(counts.MaxCalls))
}
