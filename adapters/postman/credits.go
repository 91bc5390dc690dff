package postman

import (
	"context"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/pmgate/pmgate/ports"
)

// The usage event's plan fields (docs/USAGE.md, "Postman credits as the
// service reports them"): ps2Api's captured-looking fixture
// (internal/provider/ossfunc_test.go:37) carries userType, usageState, limit,
// usage, overage, spillage, allowOverage, warningThresholds[{value,unit}],
// usageCycle{start,end} (RFC 3339) and isTeamPooled. Every field is read
// defensively and on its own: an absent or odd one is left out of the report
// and never fails the stream (the report only informs the owner; the state
// alone decides the stream, in usage).

// maxCreditNumber bounds the plan's numbers kept (larger ones are left out),
// so that the threshold rule's products cannot overflow.
const maxCreditNumber = 10_000_000_000_000

// creditWordRE is what an upstream word of the report (userType, a
// threshold's unit) must look like to be kept: a bounded identifier, so a
// report never carries free text into a log line or a page.
var creditWordRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,31}$`)

// readCredits reads the plan fields of the current usage event's data object
// into a report (Seen and Strategy are the holder's). state is usageState
// already read ("" when absent).
func (d *decoder) readCredits(state string) ports.CreditReport {
	r := ports.CreditReport{State: state}
	num := func(key string) (int64, bool) {
		m, err := d.get(d.data, key)
		if err != nil || m == nil || m.kind != kNumber {
			return 0, false
		}
		v, ok := parseUint(m.val)
		return v, ok && v <= maxCreditNumber
	}
	flag := func(key string) *bool {
		m, err := d.get(d.data, key)
		if err != nil || m == nil || (m.kind != kTrue && m.kind != kFalse) {
			return nil
		}
		v := m.kind == kTrue
		return &v
	}
	r.Limit, r.HasLimit = num("limit")
	r.Usage, r.HasUsage = num("usage")
	r.Overage, r.HasOverage = num("overage")
	r.Spillage, r.HasSpillage = num("spillage")
	r.AllowOverage, r.TeamPooled = flag("allowOverage"), flag("isTeamPooled")
	if m, err := d.get(d.data, "userType"); err == nil {
		if s, ok := str(m, &d.sbuf); ok && creditWordRE.Match(s) {
			r.UserType = string(s)
		}
	}
	r.Thresholds = d.creditThresholds()
	r.CycleStart, r.CycleEnd = d.usageCycle()
	r.Known = state != "" || r.HasLimit || r.HasUsage
	return r
}

// creditThresholds reads warningThresholds: the elements that are an object
// with a non-negative integer value and an identifier unit, at most
// ports.MaxCreditThresholds of them.
func (d *decoder) creditThresholds() []ports.CreditThreshold {
	m, err := d.get(d.data, "warningThresholds")
	if err != nil || m == nil || m.kind != kArray {
		return nil
	}
	var out []ports.CreditThreshold
	var ms []member
	_ = forEachElement(m.val, func(val []byte, kind jkind) error {
		if kind != kObject || len(out) >= ports.MaxCreditThresholds {
			return nil
		}
		if ms, err = parseObjectSpan(val, ms); err != nil {
			return nil
		}
		v, err := d.get(ms, "value")
		if err != nil || v == nil || v.kind != kNumber {
			return nil
		}
		n, ok := parseUint(v.val)
		if !ok || n > maxCreditNumber {
			return nil
		}
		u, err := d.get(ms, "unit")
		if err != nil {
			return nil
		}
		unit, ok := str(u, &d.sbuf)
		if !ok || !creditWordRE.Match(unit) {
			return nil
		}
		out = append(out, ports.CreditThreshold{Value: n, Unit: string(unit)})
		return nil
	})
	return out
}

// usageCycle reads usageCycle.start and .end (RFC 3339, in UTC); a missing or
// unreadable one is zero.
func (d *decoder) usageCycle() (start, end time.Time) {
	m, err := d.get(d.data, "usageCycle")
	if err != nil || m == nil || m.kind != kObject {
		return
	}
	ms, err := parseObjectSpan(m.val, nil)
	if err != nil {
		return
	}
	at := func(key string) time.Time {
		e, err := d.get(ms, key)
		if err != nil {
			return time.Time{}
		}
		v, ok := str(e, &d.sbuf)
		if !ok {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339, string(v))
		if err != nil {
			return time.Time{}
		}
		return t.UTC()
	}
	return at("start"), at("end")
}

// credits holds the plan report of the service's last usage event, and the
// warning thresholds already logged in its cycle. One per Client: the report
// is the credential's account, and a Client serves one credential.
type credits struct {
	mu     sync.Mutex
	r      ports.CreditReport
	cycle  time.Time      // the cycle (its end) whose crossings are logged
	logged map[int64]bool // the Percentage thresholds logged in that cycle
	log    *slog.Logger   // the Client's
	now    func() time.Time
	label  string // the strategy
}

// record keeps a report and logs, once per threshold and cycle, each warning
// threshold it shows crossed. A report that says nothing changes nothing.
func (c *credits) record(ctx context.Context, r ports.CreditReport) {
	if !r.Known {
		return
	}
	r.Strategy, r.Seen = c.label, c.now()
	crossed := r.Crossed()
	var fresh []ports.CreditThreshold
	c.mu.Lock()
	c.r = r
	if !r.CycleEnd.Equal(c.cycle) || c.logged == nil {
		// A new cycle (or none named): its thresholds are new again.
		c.cycle, c.logged = r.CycleEnd, map[int64]bool{}
	}
	for _, t := range crossed {
		if !c.logged[t.Value] {
			c.logged[t.Value] = true
			fresh = append(fresh, t)
		}
	}
	c.mu.Unlock()
	ratio, _ := r.UsedRatio()
	for _, t := range fresh {
		attrs := []slog.Attr{
			slog.String("strategy", r.Strategy),
			slog.Int64("threshold_percent", t.Value),
			slog.Float64("used_ratio", ratio),
			slog.String("usage_state", r.State),
			slog.String("reported_at", r.Seen.UTC().Format(time.RFC3339)),
		}
		if !r.CycleEnd.IsZero() {
			attrs = append(attrs, slog.String("cycle_end", r.CycleEnd.Format(time.RFC3339)))
		}
		c.log.LogAttrs(ctx, slog.LevelWarn, "upstream credit warning threshold crossed, as reported by the service", attrs...)
	}
}

// creditAttrs is what a request's access line says of the plan report its
// stream carried (its "upstream" group, "credit_report"): the plan's running
// totals as the service reported them during this request. The service
// reports no cost per request, so none is written, and no difference of two
// reports either: a pooled plan is spent by others in between, and the report
// may come before the turn's own cost.
func creditAttrs(r ports.CreditReport) slog.Attr {
	attrs := make([]slog.Attr, 0, 4)
	if r.State != "" {
		attrs = append(attrs, slog.String("usage_state", r.State))
	}
	if r.HasUsage {
		attrs = append(attrs, slog.Int64("plan_usage", r.Usage))
	}
	if r.HasLimit {
		attrs = append(attrs, slog.Int64("plan_limit", r.Limit))
	}
	if ratio, ok := r.UsedRatio(); ok {
		attrs = append(attrs, slog.Float64("plan_used_ratio", ratio))
	}
	return slog.Attr{Key: "credit_report", Value: slog.GroupValue(attrs...)}
}

func (c *credits) load() ports.CreditReport {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.r
	r.Thresholds = append([]ports.CreditThreshold(nil), r.Thresholds...)
	return r
}

// Credits returns the plan report of the service's last usage event (not
// Known before any stream carried one). A Client built again (a reload)
// starts without one, since a new credential may be another account.
func (c *Client) Credits() ports.CreditReport { return c.credits.load() }
