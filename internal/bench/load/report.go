package main

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// The targets, each judged on the median of the per-round paired
// values (gateway against the hop of the same round).
const (
	limitSeqAddedUS      = 50.0  // sequential fresh turn, gateway − hop
	limitFirstAddedUS    = 40.0  // short stream, first content
	limitLastAddedUS     = 100.0 // short stream, last byte
	limitPerEventAddedUS = 10.0  // long stream, each further event
	limitCPURatio        = 1.3   // CPU per request, at every concurrency of targetCPUAt
	limitRPSRatio        = 0.9   // throughput, at every concurrency of targetRPSAt
	limitRSSRatio        = 1.5   // RSS idle and peak
	limitColdAddedUS     = 100.0 // cold pass: sequential fresh turn and first content, gateway − hop
	// minPairs is how many paired repetitions (rounds) a ratio needs before
	// the report stops calling it indicative: single runs of the CPU ratio
	// scatter 1.14–1.48× on a shared 2-core machine.
	minPairs = 15
)

var (
	targetCPUAt = []int{1, 4, 16, 64}
	targetRPSAt = []int{4, 64}
)

func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "–"
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func fmtSigned(v float64) string {
	s := fmtNum(v)
	if v >= 0 && !math.IsNaN(v) {
		s = "+" + s
	}
	return s
}

// fmtSummary is "median [Q1 – Q3]".
func fmtSummary(s summary, signed bool) string {
	if s.n == 0 {
		return "–"
	}
	f := fmtNum
	if signed {
		f = fmtSigned
	}
	if s.n == 1 {
		return f(s.med)
	}
	return fmt.Sprintf("%s [%s – %s]", f(s.med), fmtNum(s.q1), fmtNum(s.q3))
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// view answers the report's questions about one run's values.
type view struct{ res *results }

func (v view) sum(metric, target string) summary { return summarize(v.res.get(metric, target)) }

// vs pairs target against the hop per round with f.
func (v view) vs(metric, target string, f func(x, y float64) float64) summary {
	return v.between(metric, target, nameHop, f)
}

// between pairs target against other per round with f.
func (v view) between(metric, target, other string, f func(x, y float64) float64) summary {
	return summarize(paired(v.res.get(metric, target), v.res.get(metric, other), f))
}

func (v view) hasBase() bool { return slices.Contains(v.res.names, nameBase) }

// hotColdRow is one line of the hot and cold table: a figure of the rounds'
// back-to-back measurements beside the same figure of the cold pass.
type hotColdRow struct {
	label     string
	hot, cold string // metric keys; "" when the figure has no such side
	ratio     bool   // ÷ the hop instead of − the hop
	unit      string // of a difference; " µs" when empty
}

func (v view) writeHotCold(b *strings.Builder, rows []hotColdRow) {
	cols := []string{nameGateway, nameHopB}
	heads := []string{"gateway", "A/A: hop-b"}
	if v.hasBase() {
		cols, heads = append(cols, nameBase), append(heads, "base")
	}
	fmt.Fprintf(b, "| figure |")
	for _, side := range []string{"hot", "cold"} {
		for _, h := range heads {
			fmt.Fprintf(b, " %s: %s vs hop |", side, h)
		}
	}
	perSide := len(cols)
	if v.hasBase() {
		// The two gateways paired directly: the hop's own noise drops out.
		fmt.Fprintf(b, " hot: gateway vs base | cold: gateway vs base |")
		perSide++
	}
	fmt.Fprintf(b, " pairs hot / cold |\n|---|%s---|\n", strings.Repeat("---|", 2*perSide))
	for _, row := range rows {
		f, unit, signed := minus, " µs", true
		if row.unit != "" {
			unit = row.unit
		}
		if row.ratio {
			f, unit, signed = over, "×", false
		}
		fmt.Fprintf(b, "| %s |", row.label)
		n := [2]int{}
		for i, key := range []string{row.hot, row.cold} {
			for _, name := range cols {
				if key == "" {
					fmt.Fprintf(b, " – |")
					continue
				}
				sm := v.vs(key, name, f)
				if name == nameGateway {
					n[i] = sm.n
				}
				cell := fmtSummary(sm, signed)
				if sm.n > 0 {
					cell += unit
				}
				fmt.Fprintf(b, " %s |", cell)
			}
		}
		if v.hasBase() {
			for _, key := range []string{row.hot, row.cold} {
				cell := "–"
				if sm := v.between(key, nameGateway, nameBase, f); key != "" && sm.n > 0 {
					cell = fmtSummary(sm, signed) + unit
				}
				fmt.Fprintf(b, " %s |", cell)
			}
		}
		fmt.Fprintf(b, " %d / %d |\n", n[0], n[1])
	}
}

// judged is one row of a verdict table.
type judged struct {
	label     string
	gateway   string // the gateway's own figure
	hop       string
	measured  string // gateway against the hop
	floor     string // hop-b against the hop (A/A)
	limit     string
	value     float64 // what is compared; NaN: not measured
	ok        bool
	unmeasure bool // nothing to judge (not in this run's sweep)
}

func (j judged) result() string {
	switch {
	case j.unmeasure:
		return "not measured"
	case math.IsNaN(j.value):
		return "**FAIL** (no value)"
	case j.ok:
		return "PASS"
	default:
		return "**FAIL**"
	}
}

// diffRow judges gateway − hop ≤ limit (µs).
func (v view) diffRow(label, metric string, limit float64) judged {
	d := v.vs(metric, nameGateway, minus)
	return judged{label: label, gateway: fmtNum(v.sum(metric, nameGateway).med) + " µs", hop: fmtNum(v.sum(metric, nameHop).med) + " µs",
		measured: fmtSummary(d, true) + " µs", floor: fmtSummary(v.vs(metric, nameHopB, minus), true) + " µs",
		limit: fmt.Sprintf("≤ +%.0f µs", limit), value: d.med, ok: d.med <= limit}
}

// ratioRow judges gateway ÷ hop against limit: at most (atMost) or at least.
func (v view) ratioRow(label, metric, unit string, limit float64, atMost bool) judged {
	q := v.vs(metric, nameGateway, over)
	j := judged{label: label, gateway: fmtNum(v.sum(metric, nameGateway).med) + " " + unit, hop: fmtNum(v.sum(metric, nameHop).med) + " " + unit,
		measured: fmtSummary(q, false) + "×", floor: fmtSummary(v.vs(metric, nameHopB, over), false) + "×", value: q.med}
	if atMost {
		j.limit, j.ok = fmt.Sprintf("≤ %.1f×", limit), q.med <= limit
	} else {
		j.limit, j.ok = fmt.Sprintf("≥ %.1f×", limit), q.med >= limit
	}
	return j
}

func (v view) rssRow(label string, kib map[string]int64) judged {
	gw, hop, hopB := float64(kib[nameGateway]), float64(kib[nameHop]), float64(kib[nameHopB])
	q := gw / hop
	return judged{label: label, gateway: fmt.Sprintf("%.1f MiB", gw/1024), hop: fmt.Sprintf("%.1f MiB", hop/1024),
		measured: fmtNum(q) + "×", floor: fmtNum(hopB/hop) + "×", limit: fmt.Sprintf("≤ %.1f×", limitRSSRatio),
		value: q, ok: q <= limitRSSRatio}
}

// judgeTargets is the target table.
func judgeTargets(res *results) []judged {
	v := view{res}
	rows := []judged{
		v.diffRow("sequential fresh turn: added latency", seqKey(turnFresh), limitSeqAddedUS),
		v.diffRow(fmt.Sprintf("streamed turn, %d events: first content, added", shortEvents), streamKey(streamShort, fFirst), limitFirstAddedUS),
		v.diffRow(fmt.Sprintf("streamed turn, %d events: last byte, added", shortEvents), streamKey(streamShort, fLast), limitLastAddedUS),
		v.diffRow(fmt.Sprintf("streamed turn, %d events: each further event, added", res.s.longEvents), streamKey(streamLong, fPerEvent), limitPerEventAddedUS),
		v.diffRow(fmt.Sprintf("the same, marginal: (last byte at %d − at %d events) ÷ %d, added", res.s.longEvents, shortEvents, res.s.longEvents-shortEvents),
			streamKey(streamLong, fMarginal), limitPerEventAddedUS),
	}
	for _, c := range targetCPUAt {
		row := v.ratioRow(fmt.Sprintf("CPU per request at c=%d", c), sweepKey(turnFresh, c, fCPU), "µs", limitCPURatio, true)
		row.unmeasure = !slices.Contains(res.s.sweep, c)
		rows = append(rows, row)
	}
	for _, c := range targetRPSAt {
		row := v.ratioRow(fmt.Sprintf("throughput at c=%d", c), sweepKey(turnFresh, c, fRPS), "req/s", limitRPSRatio, false)
		row.unmeasure = !slices.Contains(res.s.sweep, c)
		rows = append(rows, row)
	}
	for _, c := range []struct {
		label, key string
	}{
		{"cold: sequential fresh turn, added latency", coldKey(cSeq)},
		{"cold: streamed turn, first content, added", coldKey(cFirst)},
	} {
		row := v.diffRow(c.label, c.key, limitColdAddedUS)
		row.unmeasure = res.s.cold == 0
		rows = append(rows, row)
	}
	return append(rows,
		v.rssRow("RSS idle (VmRSS after start, before load)", res.idleRSS),
		v.rssRow("RSS peak (VmHWM at the end)", res.peakRSS))
}

// judgeCheck is the gross-regression check of -check (make bench-check):
// every row must pass, or the run exits 1.
func judgeCheck(res *results) []judged {
	v := view{res}
	s := res.s
	cpu := v.ratioRow(fmt.Sprintf("CPU per fresh turn at c=%d", s.checkC), sweepKey(turnFresh, s.checkC, fCPU), "µs", s.checkCPU, true)
	cpu.limit = fmt.Sprintf("≤ %.1f×", s.checkCPU)
	seq := v.diffRow("sequential fresh turn: added latency", seqKey(turnFresh), s.checkSeqUS)
	n := res.totalFailures()
	var per []string
	for _, name := range res.names {
		per = append(per, fmt.Sprintf("%s %d", name, res.failures[name]))
	}
	fails := judged{label: "failed exchanges (warm-up included)", gateway: fmt.Sprint(res.failures[nameGateway]),
		hop: fmt.Sprint(res.failures[nameHop]), measured: fmt.Sprintf("%d (%s)", n, strings.Join(per, ", ")),
		floor: fmt.Sprint(res.failures[nameHopB]), limit: "0", value: float64(n), ok: n == 0}
	rows := []judged{cpu, seq}
	if s.cold > 0 {
		rows = append(rows, v.diffRow("cold: sequential fresh turn: added latency", coldKey(cSeq), s.checkColdUS))
	}
	return append(rows, fails)
}

// failedChecks names the rows that did not pass.
func failedChecks(rows []judged) []string {
	var out []string
	for _, r := range rows {
		if r.unmeasure || (r.ok && !math.IsNaN(r.value)) {
			continue
		}
		out = append(out, r.label+" "+r.measured+" (limit "+r.limit+")")
	}
	return out
}

func writeJudged(b *strings.Builder, rows []judged) {
	fmt.Fprintf(b, "| target | gateway | hop | gateway vs hop | A/A: hop-b vs hop | limit | result |\n|---|---|---|---|---|---|---|\n")
	for _, j := range rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", j.label, j.gateway, j.hop, j.measured, j.floor, j.limit, j.result())
	}
}

// metricRow is one line of the detail tables.
type metricRow struct {
	label, unit, key string
}

func (v view) writeMetrics(b *strings.Builder, rows []metricRow) {
	names := v.res.names
	fmt.Fprintf(b, "| figure | unit |")
	for _, n := range names {
		fmt.Fprintf(b, " %s |", n)
	}
	fmt.Fprintf(b, " gateway − hop | A/A: hop-b − hop | gateway ÷ hop | A/A: hop-b ÷ hop |")
	extra := 4
	if v.hasBase() {
		fmt.Fprintf(b, " base − hop | base ÷ hop |")
		extra += 2
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(names)+extra) + "\n")
	for _, m := range rows {
		if _, ok := v.res.values[m.key]; !ok {
			continue
		}
		fmt.Fprintf(b, "| %s | %s |", m.label, m.unit)
		for _, n := range names {
			fmt.Fprintf(b, " %s |", fmtSummary(v.sum(m.key, n), false))
		}
		fmt.Fprintf(b, " %s | %s | %s | %s |",
			fmtSummary(v.vs(m.key, nameGateway, minus), true), fmtSummary(v.vs(m.key, nameHopB, minus), true),
			fmtSummary(v.vs(m.key, nameGateway, over), false), fmtSummary(v.vs(m.key, nameHopB, over), false))
		if v.hasBase() {
			fmt.Fprintf(b, " %s | %s |", fmtSummary(v.vs(m.key, nameBase, minus), true), fmtSummary(v.vs(m.key, nameBase, over), false))
		}
		b.WriteString("\n")
	}
}

func renderReport(res *results) string {
	var b strings.Builder
	cpu, ncpu, kernel := machine()
	s := res.s
	v := view{res}

	title := "report"
	if s.check {
		title = "regression check"
	}
	fmt.Fprintf(&b, "# pmgate load rig — %s\n\n", title)
	fmt.Fprintf(&b, "- run: %s, %s · %s %s/%s\n", res.started.UTC().Format("2006-01-02 15:04 UTC"),
		res.elapsed.Round(time.Second), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "- machine: %s × %d CPUs · Linux %s\n", cpu, ncpu, kernel)
	gw := res.gwRoot
	if res.gwRev != "" {
		gw += " @ " + res.gwRev
	}
	fmt.Fprintf(&b, "- gateway under test built from %s; emulator and hops from %s\n", gw, res.selfRoot)
	if res.baseRoot != "" {
		base := res.baseRoot
		if res.baseRev != "" {
			base += " @ " + res.baseRev
		}
		fmt.Fprintf(&b, "- base: a second gateway built from %s, measured in the same rounds (columns base − hop, base ÷ hop)\n", base)
	}
	fmt.Fprintf(&b, "- load average (1/5/15 min): before %s · after %s (the rig itself is most of \"after\")\n", res.loadPre, res.loadPost)
	fmt.Fprintf(&b, "- settings: %s; gateway MAX_CONCURRENT_REQUESTS=%d; CLK_TCK %d (%s)\n", settingsLine(s), s.gwMaxConcurrent(), res.clkTck, res.clkSrc)
	fmt.Fprintf(&b, "- streams: data events per turn (short / long):")
	for _, n := range res.names {
		fmt.Fprintf(&b, " %s %d / %d;", n, res.shortEvts[n], res.longEvts[n])
	}
	fmt.Fprintf(&b, " the hops pass the upstream's %d / %d\n", shortEvents, s.longEvents)
	if len(res.foreignPct) > 0 {
		fmt.Fprintf(&b, "- other load during the rounds: median %.1f%%, max %.1f%% of all CPUs (see Rounds)\n",
			median(res.foreignPct), slices.Max(res.foreignPct))
	}
	fmt.Fprintf(&b, "- values: median of the per-round values [Q1 – Q3 of the per-round values]; differences and ratios against the hop are paired per round before the median; the A/A column (hop-b, an identical second hop) is the floor: what pure noise looks like\n")
	if n := res.totalFailures(); n > 0 {
		fmt.Fprintf(&b, "- **%d exchanges failed** (see Failures); the figures include only the ones that succeeded\n", n)
	}
	if s.rounds < minPairs {
		fmt.Fprintf(&b, "- %d rounds: every paired figure has %d repetitions, fewer than the %d a CPU ratio needs to be more than indicative (single runs scatter by a third)\n", s.rounds, s.rounds, minPairs)
	}
	for _, n := range res.notes {
		fmt.Fprintf(&b, "- note: %s\n", n)
	}

	if s.check {
		fmt.Fprintf(&b, "\n## Regression check (gross regressions only; exits 1 on a FAIL)\n\n")
		writeJudged(&b, judgeCheck(res))
	}
	fmt.Fprintf(&b, "\n## Targets (gateway against the bare hop, with the A/A floor)\n\n")
	if s.check {
		fmt.Fprintf(&b, "Informative here: a short run on a shared machine; the check above is what fails.\n\n")
	}
	writeJudged(&b, judgeTargets(res))

	if s.cold > 0 {
		fmt.Fprintf(&b, "\n## Hot and cold, side by side\n\n")
		fmt.Fprintf(&b, "Hot: the rounds' measurements, requests back to back, the upstream's events back to back. "+
			"Cold: the cold pass, %d fresh and %d streamed turns per target and round, each after %s idle, the targets interleaved "+
			"(a fresh random order for each request), the upstream's events %s apart (the emulator's slow_stream scenario, %q). "+
			"Each cell is the figure against the hop of the same round, median of the per-round values [Q1 – Q3]; "+
			"the A/A column is the noise floor. CPU is of the process under test: hot from the sweep's bursts at c=1, "+
			"cold over the whole pass (idle gaps included) ÷ its requests. Thread sleeps: voluntary context switches of all "+
			"the process's threads over the pass ÷ its requests, the wake-ups it needed; unlike latency, other load hardly moves them.\n\n",
			s.cold, s.cold, s.coldGap, s.coldEventGap, coldQuery)
		v.writeHotCold(&b, []hotColdRow{
			{label: "sequential fresh turn: added latency", hot: seqKey(turnFresh), cold: coldKey(cSeq)},
			{label: "streamed turn: first content, added", hot: streamKey(streamShort, fFirst), cold: coldKey(cFirst)},
			{label: "streamed turn: last byte, added", hot: streamKey(streamShort, fLast), cold: coldKey(cLast)},
			{label: "CPU per fresh turn", hot: sweepKey(turnFresh, 1, fCPU), cold: coldKey(cCPUSeq), ratio: true},
			{label: "CPU per streamed turn", cold: coldKey(cCPUStream), ratio: true},
			{label: "thread sleeps per fresh turn, added", cold: coldKey(cSleepSeq), unit: " "},
			{label: "thread sleeps per streamed turn, added", cold: coldKey(cSleepStrm), unit: " "},
		})
	}

	fmt.Fprintf(&b, "\n## Latency: sequential exchanges and streams (µs)\n\n")
	fmt.Fprintf(&b, "Fresh: one small text turn. Tool: the tool turn and its continuation with the result, both timed. "+
		"Continued: the follow-up turn of a conversation whose opening turn (not timed) came just before. "+
		"Streams: request start → first event carrying text, → end of the body; per further event = (last − first) ÷ (upstream events − 1).\n\n")
	lat := []metricRow{
		{"sequential fresh turn", "µs", seqKey(turnFresh)},
		{"sequential tool round trip (both legs)", "µs", seqKey(turnTool)},
		{"sequential continued turn (the follow-up)", "µs", seqKey(turnContinued)},
	}
	for _, st := range []struct {
		which  string
		events int
	}{{streamShort, shortEvents}, {streamLong, s.longEvents}} {
		lat = append(lat,
			metricRow{fmt.Sprintf("stream, %d events: first content", st.events), "µs", streamKey(st.which, fFirst)},
			metricRow{fmt.Sprintf("stream, %d events: last byte", st.events), "µs", streamKey(st.which, fLast)},
			metricRow{fmt.Sprintf("stream, %d events: per further event", st.events), "µs", streamKey(st.which, fPerEvent)})
	}
	lat = append(lat, metricRow{fmt.Sprintf("streams: marginal cost of an event, (last byte at %d − at %d) ÷ %d", s.longEvents, shortEvents, s.longEvents-shortEvents),
		"µs", streamKey(streamLong, fMarginal)},
		metricRow{"cold: sequential fresh turn", "µs", coldKey(cSeq)},
		metricRow{"cold: stream, first content", "µs", coldKey(cFirst)},
		metricRow{"cold: stream, last byte", "µs", coldKey(cLast)},
		metricRow{"cold: CPU of the process under test per fresh turn", "µs", coldKey(cCPUSeq)},
		metricRow{"cold: CPU of the process under test per streamed turn", "µs", coldKey(cCPUStream)},
		metricRow{"cold: thread sleeps (voluntary context switches) of the process under test per fresh turn", "", coldKey(cSleepSeq)},
		metricRow{"cold: the same per streamed turn", "", coldKey(cSleepStrm)})
	v.writeMetrics(&b, lat)

	fmt.Fprintf(&b, "\n## Closed-loop sweep\n\n")
	fmt.Fprintf(&b, "Per burst of %s: c workers, each sending exchanges back to back. An exchange is one request (fresh) or two "+
		"(tool: turn + result; continued: opening + follow-up), so CPU and throughput of those kinds are per pair; their latency is as above. "+
		"CPU is the process's CPU time from its CPU-time clock (exact, all threads); everything shares %d CPUs, so throughput and latency are whole-box figures.\n\n",
		s.burstTime, runtime.NumCPU())
	var sweep []metricRow
	add := func(kind, c int) {
		k := turnNames[kind]
		sweep = append(sweep,
			metricRow{fmt.Sprintf("%s c=%d: throughput", k, c), "/s", sweepKey(kind, c, fRPS)},
			metricRow{fmt.Sprintf("%s c=%d: CPU of the process under test", k, c), "µs", sweepKey(kind, c, fCPU)},
			metricRow{fmt.Sprintf("%s c=%d: latency p50", k, c), "µs", sweepKey(kind, c, fP50)},
			metricRow{fmt.Sprintf("%s c=%d: latency p99", k, c), "µs", sweepKey(kind, c, fP99)},
			metricRow{fmt.Sprintf("%s c=%d: emulator CPU", k, c), "µs", sweepKey(kind, c, fCPUEmu)},
			metricRow{fmt.Sprintf("%s c=%d: load-driver CPU", k, c), "µs", sweepKey(kind, c, fCPURig)},
			metricRow{fmt.Sprintf("%s c=%d: CPU time of the process under test in the burst", k, c), "ms", sweepKey(kind, c, fCPUms)})
	}
	for _, c := range s.sweep {
		add(turnFresh, c)
	}
	for _, c := range s.sweepOther {
		add(turnTool, c)
		add(turnContinued, c)
	}
	v.writeMetrics(&b, sweep)

	fmt.Fprintf(&b, "\n## Memory (MiB)\n\n| process | idle VmRSS | peak VmHWM | VmRSS at the end | idle ÷ hop | peak ÷ hop |\n|---|---|---|---|---|---|\n")
	mem := []string{nameGateway, nameHop, nameHopB, "emulator"}
	if v.hasBase() {
		mem = append(mem, nameBase)
	}
	for _, name := range mem {
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %s | %s |\n", name, mib(res.idleRSS[name]), mib(res.peakRSS[name]), mib(res.endRSS[name]),
			fmtNum(float64(res.idleRSS[name])/float64(res.idleRSS[nameHop])), fmtNum(float64(res.peakRSS[name])/float64(res.peakRSS[nameHop])))
	}

	if n := res.totalFailures(); n > 0 {
		fmt.Fprintf(&b, "\n## Failures\n\n%d exchanges failed:", n)
		for _, name := range res.names {
			fmt.Fprintf(&b, " %s %d;", name, res.failures[name])
		}
		fmt.Fprintf(&b, " the first of them:\n\n")
		for _, m := range res.failMsgs {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(m, "\n", " "))
		}
	}

	fmt.Fprintf(&b, "\n## Rounds\n\nOther load: CPU used by processes other than the rig's (load driver, emulator, hops, gateway), "+
		"from /proc/stat, as a share of all %d CPUs (tick-sampled: a quiet machine reads slightly below zero, shown as 0); steal is CPU taken by the hypervisor. "+
		"Order: the targets of each measurement in the order they ran (h hop, b hop-b, g gateway, B base, d direct; the cold pass, whose order changes with every request, runs first), measurements in the order of the tables above.\n\n", runtime.NumCPU())
	fmt.Fprintf(&b, "| round | wall | other load | steal | order |\n|---|---|---|---|---|\n")
	for i, o := range res.orders {
		fmt.Fprintf(&b, "| %d | %s | %.1f%% | %.1f%% | %s |\n", i+1, res.roundWall[i].Round(time.Millisecond), res.foreignPct[i], res.stealPct[i], strings.Join(o, " "))
	}
	return b.String()
}

func settingsLine(s settings) string {
	line := fmt.Sprintf("-rounds %d -seq %d -seq-pairs %d -stream %d -long-events %d -sweep %s -sweep-other %s -burst-time %s -warmup %d",
		s.rounds, s.seq, s.seqPairs, s.stream, s.longEvents, intList{&s.sweep}, intList{&s.sweepOther}, s.burstTime, s.warmup)
	if s.quick {
		line += " -quick"
	}
	if s.direct {
		line += " -direct"
	}
	if s.cold > 0 {
		line += fmt.Sprintf(" -cold %d -cold-gap %s -cold-event-gap %s", s.cold, s.coldGap, s.coldEventGap)
	} else {
		line += " -cold 0"
	}
	if s.base != "" {
		line += " -base " + s.base
	}
	if s.hopMaxIdle > 0 {
		line += fmt.Sprintf(" -hop-max-idle %d", s.hopMaxIdle)
	}
	if s.check {
		line += fmt.Sprintf(" -check -check-cpu-ratio %g -check-seq-us %g -check-cold-us %g -check-concurrency %d", s.checkCPU, s.checkSeqUS, s.checkColdUS, s.checkC)
	}
	return line
}
