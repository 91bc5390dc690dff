package ops

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// Monitor is what the operator can see of a running gateway: the Prometheus
// metrics served at /metrics and the recent activity the /admin page shows.
// The wiring creates one per process, subscribes it to the gateway's one
// observer (app.Observers: the rows the machines applied, the upstream
// exchanges), and hands it to the ingress (adapters/httpapi's Config.Monitor),
// which reports every answered request to it.
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
	convTrans *prometheus.CounterVec
	storeErrs prometheus.Counter
	bySlot    *prometheus.CounterVec
	slots     sync.Map // slot id -> prometheus.Counter, resolved once per slot
	slotDisp  *prometheus.CounterVec
	slotRef   *prometheus.CounterVec
	// byRoute holds the resolved series of every route template (string ->
	// *routeSeries): the ingress's templates are resolved when it starts
	// (Watch), so the request path only loads them.
	byRoute sync.Map
	// usage and keySlots are MonitorConfig's Usage and Slots.
	usage    *app.Usage
	keySlots func() []ports.KeySlot

	mu          sync.Mutex
	recent      [recentRequests]listedRequest
	recentN     int // records written so far
	transitions [recentTransitions]TransitionRecord
	transN      int
	now         func() time.Time
	// minutes are the failed answers of the last hour by cause, one bucket
	// per minute (the control page's "last hour").
	minutes [60]causeMinute
	// quotaN and quotaLast count the upstream's quota refusals.
	quotaN    int64
	quotaLast time.Time
	// window is MonitorConfig.RateWindow (nil: none).
	window func() ports.RateWindow
	// credits is MonitorConfig.Credits (nil: none).
	credits func() ports.CreditReport
}

// causeMinute is one minute of failed answers by cause.
type causeMinute struct {
	minute int64 // Unix minute; a bucket of an older minute is stale
	counts map[string]int
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

// TransitionRecord is one applied row of the correlation or the
// conversation machine.
type TransitionRecord struct {
	Time    time.Time `json:"time"`
	Machine string    `json:"machine"` // "correlation" or "conversation"
	Row     string    `json:"row"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Code    string    `json:"code"`   // the stable code (correlation) or the reason of a fresh conversation
	Count   int       `json:"count"`  // how many records took the row at once (sweeps)
	Source  string    `json:"source"` // "request" or "sweep"
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
	// Events is the gateway's fan-out: NewMonitor subscribes the monitor to
	// it inline (as "metrics": it counts in the observing goroutine, so a
	// scrape or a read of the control page's live list finds every event
	// observed before it without waiting), and /metrics reports every
	// subscriber's losses. Nil in tests that feed Observe directly.
	Events *app.Observers
	// RateWindow reads the upstream's rate-limit window as its last answer
	// announced it (the Postman adapter's RateWindow); nil leaves its gauges
	// and the control page's entry out.
	RateWindow func() ports.RateWindow
	// Credits reads the owner's plan as the service's last usage event
	// reported it (the Postman adapter's Credits); nil leaves its gauges and
	// the views' entry out.
	Credits func() ports.CreditReport
	// Usage is the usage ledger (nil: none): each slot's dispatches today and
	// this month on the control page and /metrics, and the control page's
	// usage report.
	Usage *app.Usage
	// Slots reads the current API key slots (the ingress's keyring); nil:
	// none shown.
	Slots func() []ports.KeySlot
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

// Latency buckets in seconds: from a fast local refusal to a long upstream turn.
var latencyBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// NewMonitor registers every pmgate metric and the Go runtime and process
// collectors in a registry of its own.
func NewMonitor(cfg MonitorConfig) *Monitor {
	m := &Monitor{reg: prometheus.NewRegistry(), now: cfg.Now, window: cfg.RateWindow, credits: cfg.Credits,
		usage: cfg.Usage, keySlots: cfg.Slots}
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
		Help: "Rows of the correlation group machine applied by requests and sweeps, by row id and states."},
		[]string{"row", "from", "to"})
	m.convTrans = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pmgate_conversation_transitions_total",
		Help: "Rows of the conversation anchor machine applied by requests and sweeps, by row id and states."},
		[]string{"row", "from", "to"})
	m.bySlot = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pmgate_key_requests_total",
		Help: "Authenticated requests by API key slot id (the configured slot ids; never a key)."}, []string{"slot"})
	m.slotDisp = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pmgate_key_dispatches_total",
		Help: "Upstream dispatches (the unit that costs credits) by API key slot id."}, []string{"slot"})
	m.slotRef = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pmgate_key_refusals_total",
		Help: "Requests refused by a limit, by API key slot id and stable code (key_rate_limited, key_quota_exhausted, concurrency_limit_exceeded, upstream_rate_limited, upstream_quota_exhausted)."},
		[]string{"slot", "code"})
	m.storeErrs = prometheus.NewCounter(prometheus.CounterOpts{Name: "pmgate_correlation_store_errors_total",
		Help: "Correlation store failures: requests answered correlation_store_unavailable and failed reads of the gauges."})
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pmgate_build_info",
		Help: "Always 1; the labels name the version and the upstream strategy."}, []string{"version", "strategy"})
	build.WithLabelValues(cfg.Version, cfg.Strategy).Set(1)
	m.reg.MustRegister(m.bySlot, m.slotDisp, m.slotRef, m.requests, m.duration, m.ttft, m.upstream, m.outcomes, m.trans, m.convTrans, m.storeErrs, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.Counts != nil {
		m.reg.MustRegister(&storeCollector{counts: cfg.Counts, errs: m.storeErrs})
	}
	if cfg.RateWindow != nil {
		m.reg.MustRegister(&windowCollector{m: m})
	}
	if cfg.Credits != nil {
		m.reg.MustRegister(&creditsCollector{m: m})
	}
	if cfg.Events != nil {
		m.reg.MustRegister(&observerCollector{events: cfg.Events})
		cfg.Events.SubscribeInline("metrics", m)
	}
	m.reg.MustRegister(&budgetCollector{m: m})
	return m
}

// Watch is called once by each ingress that reports to the monitor: the
// route templates it reports requests under, resolved now (every one shows in
// /metrics from the start, and the request path only loads them), and its chat
// concurrency slots, read at scrape time. A monitor watching several ingresses
// (tests) keeps the first one's slots.
func (m *Monitor) Watch(routes []string, inFlight func() int, limit int) {
	for _, r := range routes {
		m.route(r)
	}
	_ = m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pmgate_chat_requests_in_flight",
		Help: "Chat requests holding a concurrency slot now."}, func() float64 { return float64(inFlight()) }))
	_ = m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pmgate_chat_concurrency_limit",
		Help: "The concurrency limit of chat requests (MAX_CONCURRENT_REQUESTS)."}, func() float64 { return float64(limit) }))
}

// route returns the series of a route template, resolving them on first use.
func (m *Monitor) route(r string) *routeSeries {
	if rs, ok := m.byRoute.Load(r); ok {
		return rs.(*routeSeries)
	}
	rs, _ := m.byRoute.LoadOrStore(r, &routeSeries{duration: m.duration.WithLabelValues(r), ttft: m.ttft.WithLabelValues(r),
		ok: m.requests.WithLabelValues(r, "200", "none")})
	return rs.(*routeSeries)
}

// Registry returns the registry /metrics serves (tests gather from it).
func (m *Monitor) Registry() *prometheus.Registry { return m.reg }

// Observe implements ports.Observer: the monitor's (inline) subscription to
// the gateway's events, called from the requests' goroutines at once. It
// counts the rows of both machines and the upstream exchanges, and lists the
// rows on the control page.
func (m *Monitor) Observe(_ context.Context, e ports.Event) {
	switch e.Kind {
	case ports.EventTransition, ports.EventSweep:
		vec := m.trans
		if e.Machine == conversation.MachineName {
			vec = m.convTrans
		} else if e.Machine != correlation.MachineName {
			return
		}
		vec.WithLabelValues(e.Row, e.From, e.To).Add(float64(e.Count))
		t := TransitionRecord{Time: m.now(), Machine: e.Machine, Row: e.Row, From: e.From, To: e.To, Code: e.Code,
			Count: e.Count, Source: "request"}
		if e.Kind == ports.EventSweep {
			t.Source = "sweep"
		}
		m.mu.Lock()
		m.transitions[m.transN%recentTransitions] = t
		m.transN++
		m.mu.Unlock()
	case ports.EventExchange:
		x := e.Exchange
		m.upstream.WithLabelValues(x.Strategy, x.Outcome).Inc()
		if x.Row != "" {
			m.outcomes.WithLabelValues(x.Rule, x.Row).Inc()
		}
	}
}

// ObserveRequest records one answered request. It is on every request's
// path, so the label lookups are cached: one sync.Map load per metric.
func (m *Monitor) ObserveRequest(a ports.AnsweredRequest) {
	rec := RequestRecord{Time: a.Start, RequestID: a.RequestID, Route: a.Route, Status: a.Status, Code: string(a.Code),
		Model: a.Model, Slot: a.Slot, Stream: a.Stream, ToolCalls: a.ToolCalls}
	code, start, firstToken, end := a.Code, a.Start, a.FirstToken, a.End
	rs := m.route(rec.Route)
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
	// The recent list shows the API and /health, not the operator's views
	// (the control page's own polling, the scrapes), which would push every
	// client request out of the list within two minutes. Metrics count them all.
	if a.Operator {
		return
	}
	m.mu.Lock()
	m.recent[m.recentN%recentRequests] = entry
	m.recentN++
	if rec.Status >= 400 || code != "" { // a stream that failed after its 200 has a code
		minute := end.Unix() / 60
		b := &m.minutes[minute%60]
		if b.minute != minute || b.counts == nil {
			b.minute, b.counts = minute, map[string]int{}
		}
		b.counts[causeOf(rec.Status, rec.Code)]++
	}
	if code == errs.UpstreamQuotaExhausted {
		m.quotaN++
		m.quotaLast = end
	}
	m.mu.Unlock()
}

// ObserveSlot counts a finished chat request's dispatches and, when a limit
// refused it, the refusal, by slot.
func (m *Monitor) ObserveSlot(slot string, dispatches int, code errs.Code) {
	if slot == "" {
		return
	}
	if dispatches > 0 {
		m.slotDisp.WithLabelValues(slot).Add(float64(dispatches))
	}
	if refusalCodes[code] {
		m.slotRef.WithLabelValues(slot, string(code)).Inc()
	}
}

// lastHour returns the failed answers of the last 60 minutes by cause.
func (m *Monitor) lastHour() map[string]int {
	now := m.now().Unix() / 60
	out := map[string]int{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, b := range m.minutes {
		if b.counts != nil && now-b.minute < 60 {
			for k, v := range b.counts {
				out[k] += v
			}
		}
	}
	return out
}

// UpstreamQuota is how often the upstream answered that the credential's
// quota is exhausted since the process started, and when it last did.
type UpstreamQuota struct {
	Count int64      `json:"count"`
	Last  *time.Time `json:"last"` // null: never
}

func (m *Monitor) upstreamQuota() UpstreamQuota {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := UpstreamQuota{Count: m.quotaN}
	if m.quotaN > 0 {
		t := m.quotaLast.UTC()
		q.Last = &t
	}
	return q
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

// observerCollector reports, at each scrape, what every subscriber of the
// gateway's events lost: events dropped because it fell behind, and
// deliveries that panicked.
type observerCollector struct{ events *app.Observers }

var (
	descObsDropped = prometheus.NewDesc("pmgate_observer_events_dropped_total",
		"Events a subscriber of the gateway's events (metrics, log, probe) lost because its queue was full.", []string{"observer"}, nil)
	descObsPanics = prometheus.NewDesc("pmgate_observer_panics_total",
		"Deliveries to a subscriber of the gateway's events that panicked (the event is lost; nothing else is).", []string{"observer"}, nil)
)

func (c *observerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descObsDropped
	ch <- descObsPanics
}

func (c *observerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.events.Stats() {
		ch <- prometheus.MustNewConstMetric(descObsDropped, prometheus.CounterValue, float64(st.Dropped), st.Name)
		ch <- prometheus.MustNewConstMetric(descObsPanics, prometheus.CounterValue, float64(st.Panicked), st.Name)
	}
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

// UpstreamRateWindow is the upstream's rate-limit window as the control page
// shows it: what the service's last answer that carried the headers said,
// and whether fresh turns are held until its reset (tool results never are).
type UpstreamRateWindow struct {
	Known     bool       `json:"known"`
	Limit     int        `json:"limit"`
	Remaining int        `json:"remaining"`
	Reset     *time.Time `json:"reset"`      // null: the service gave none
	ResetInS  float64    `json:"reset_in_s"` // seconds until the reset, 0 once past
	WindowS   float64    `json:"window_s"`   // RateLimit-Policy's window; 0: unknown
	Seen      *time.Time `json:"seen"`       // when the answer arrived; null: none yet
	HeldForS  float64    `json:"held_for_s"` // how long fresh turns are held; 0: not held
}

// rateWindow reads the window for the control page; nil without one.
func (m *Monitor) rateWindow() *UpstreamRateWindow {
	if m.window == nil {
		return nil
	}
	w, now := m.window(), m.now()
	out := &UpstreamRateWindow{Known: w.Known}
	if !w.Known {
		return out
	}
	out.Limit, out.Remaining, out.WindowS = w.Limit, w.Remaining, w.Window.Seconds()
	seen := w.Seen.UTC()
	out.Seen = &seen
	if !w.Reset.IsZero() {
		r := w.Reset.UTC()
		out.Reset, out.ResetInS = &r, max(w.Reset.Sub(now), 0).Seconds()
	}
	out.HeldForS = w.HeldFor(now).Seconds()
	return out
}

// windowCollector reports the upstream's rate-limit window at each scrape,
// once an answer announced one.
type windowCollector struct{ m *Monitor }

var (
	descWindowRemaining = prometheus.NewDesc("pmgate_upstream_ratelimit_remaining",
		"Requests the upstream's last answer said remain in its rate-limit window (X-RateLimit-Remaining).", nil, nil)
	descWindowLimit = prometheus.NewDesc("pmgate_upstream_ratelimit_limit",
		"The upstream's rate-limit window size in requests (X-RateLimit-Limit; 0 when not sent).", nil, nil)
	descWindowReset = prometheus.NewDesc("pmgate_upstream_ratelimit_reset_seconds",
		"Seconds until the upstream's rate-limit window resets (X-RateLimit-Reset; 0 once past or when not sent).", nil, nil)
	descWindowHeld = prometheus.NewDesc("pmgate_upstream_ratelimit_held_seconds",
		"Seconds fresh turns are still refused before sending because the upstream said none remain (0: not held).", nil, nil)
)

func (c *windowCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descWindowRemaining, descWindowLimit, descWindowReset, descWindowHeld} {
		ch <- d
	}
}

func (c *windowCollector) Collect(ch chan<- prometheus.Metric) {
	w := c.m.rateWindow()
	if w == nil || !w.Known {
		return // no answer announced a window yet
	}
	ch <- prometheus.MustNewConstMetric(descWindowRemaining, prometheus.GaugeValue, float64(w.Remaining))
	ch <- prometheus.MustNewConstMetric(descWindowLimit, prometheus.GaugeValue, float64(w.Limit))
	ch <- prometheus.MustNewConstMetric(descWindowReset, prometheus.GaugeValue, w.ResetInS)
	ch <- prometheus.MustNewConstMetric(descWindowHeld, prometheus.GaugeValue, w.HeldForS)
}
