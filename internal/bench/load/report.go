package main

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Targets of the issue, judged on the median of the per-round paired values.
const (
	limitSeqAddedUS   = 100.0
	limitCPURatio     = 1.3
	limitFirstAddedUS = 150.0
	limitChunkAddedUS = 10.0
	limitIdleRSSMiB   = 20.0
	limitPeakRSSMiB   = 50.0
)

type metricInfo struct {
	key   string
	label string
	unit  string
}

var reportMetrics = []metricInfo{
	{mSeq, "sequential small text turn, latency", "µs"},
	{mFirst, "streamed turn, first data event", "µs"},
	{mFirstText, "streamed turn, first text chunk", "µs"},
	{mPerChunk, "streamed turn, per further text chunk", "µs"},
	{mLast, "streamed turn, last event ([DONE])", "µs"},
	{mBurstRPS, "burst, throughput (whole box)", "req/s"},
	{mBurstP50, "burst, latency p50", "µs"},
	{mBurstP99, "burst, latency p99", "µs"},
	{mCPUServer, "burst, CPU of the process under test per request", "µs"},
	{mCPUTicks, "burst, CPU ticks of the process under test", "ticks"},
	{mCPUEmu, "burst, emulator CPU per request", "µs"},
	{mCPURig, "burst, load-driver (client) CPU per request", "µs"},
}

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

// fmtSummary is "median [Q1–Q3]".
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

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "**FAIL**"
}

func renderReport(res *results) string {
	var b strings.Builder
	cpu, ncpu, kernel := machine()
	s := res.s
	get := func(metric, target string) []float64 { return res.values[metric][target] }
	sum := func(metric, target string) summary { return summarize(get(metric, target)) }
	diff := func(metric string) summary {
		return summarize(paired(get(metric, nameGateway), get(metric, nameHop), func(g, h float64) float64 { return g - h }))
	}
	ratio := func(metric string) summary {
		return summarize(paired(get(metric, nameGateway), get(metric, nameHop), func(g, h float64) float64 { return g / h }))
	}

	fmt.Fprintf(&b, "# pmgate load rig — report\n\n")
	fmt.Fprintf(&b, "- run: %s, %s · %s %s/%s\n", res.started.UTC().Format("2006-01-02 15:04 UTC"),
		res.elapsed.Round(time.Second), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "- machine: %s × %d CPUs · Linux %s\n", cpu, ncpu, kernel)
	fmt.Fprintf(&b, "- load average (1/5/15 min): before %s · after %s (the rig itself is most of \"after\")\n", res.loadPre, res.loadPost)
	extra := ""
	if s.quick {
		extra += " -quick"
	}
	if s.hopMaxIdle > 0 {
		extra += fmt.Sprintf(" -hop-max-idle %d", s.hopMaxIdle)
	}
	fmt.Fprintf(&b, "- settings: -rounds %d -seq %d -stream %d -burst %d -concurrency %d -warmup %d%s; CLK_TCK %d (%s)\n",
		s.rounds, s.seq, s.stream, s.burst, s.concurrency, s.warmup, extra, res.clkTck, res.clkSrc)
	fmt.Fprintf(&b, "- streamed turn: %d-byte prompt → %d text chunks of ≤ 24 bytes; data events per turn: direct %d, hop %d, gateway %d\n",
		len(streamQuery), res.textChunks, res.streamEvts[nameDirect], res.streamEvts[nameHop], res.streamEvts[nameGateway])
	fmt.Fprintf(&b, "- other load during the rounds: median %.1f%%, max %.1f%% of all CPUs (see Rounds)\n",
		median(res.foreignPct), slices.Max(res.foreignPct))
	fmt.Fprintf(&b, "- values: median of the per-round medians [Q1 – Q3 of the per-round medians]; gateway−hop differences and ratios are paired per round before the median\n")
	for _, n := range res.notes {
		fmt.Fprintf(&b, "- note: %s\n", n)
	}

	// Targets.
	fmt.Fprintf(&b, "\n## Targets (gateway against the bare hop)\n\n")
	fmt.Fprintf(&b, "| target | gateway | hop | measured | limit | result |\n|---|---|---|---|---|---|\n")
	row := func(label, gw, hop, measured, limit string, ok bool) {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", label, gw, hop, measured, limit, passFail(ok))
	}
	seqD := diff(mSeq)
	row("sequential small text turn: added latency", fmtNum(sum(mSeq, nameGateway).med)+" µs", fmtNum(sum(mSeq, nameHop).med)+" µs",
		fmtSummary(seqD, true)+" µs", fmt.Sprintf("≤ +%.0f µs", limitSeqAddedUS), seqD.med <= limitSeqAddedUS)
	cpuR := ratio(mCPUServer)
	row(fmt.Sprintf("CPU per request at concurrency %d", s.concurrency), fmtNum(sum(mCPUServer, nameGateway).med)+" µs",
		fmtNum(sum(mCPUServer, nameHop).med)+" µs", fmtSummary(cpuR, false)+" ×", fmt.Sprintf("≤ %.1f×", limitCPURatio), cpuR.med <= limitCPURatio)
	firstD := diff(mFirst)
	row("streamed turn: first data event, added", fmtNum(sum(mFirst, nameGateway).med)+" µs", fmtNum(sum(mFirst, nameHop).med)+" µs",
		fmtSummary(firstD, true)+" µs", fmt.Sprintf("≤ +%.0f µs", limitFirstAddedUS), firstD.med <= limitFirstAddedUS)
	chunkD := diff(mPerChunk)
	row("streamed turn: each further chunk, added", fmtNum(sum(mPerChunk, nameGateway).med)+" µs", fmtNum(sum(mPerChunk, nameHop).med)+" µs",
		fmtSummary(chunkD, true)+" µs", fmt.Sprintf("≤ +%.0f µs", limitChunkAddedUS), chunkD.med <= limitChunkAddedUS)
	idle, peak := mib(res.idleRSS[nameGateway]), mib(res.peakRSS[nameGateway])
	row("RSS idle (VmRSS after start, before load)", fmt.Sprintf("%.1f MiB", idle), fmt.Sprintf("%.1f MiB", mib(res.idleRSS[nameHop])),
		fmt.Sprintf("%.1f MiB", idle), fmt.Sprintf("≤ %.0f MiB", limitIdleRSSMiB), idle <= limitIdleRSSMiB)
	row("RSS peak (VmHWM after the rounds)", fmt.Sprintf("%.1f MiB", peak), fmt.Sprintf("%.1f MiB", mib(res.peakRSS[nameHop])),
		fmt.Sprintf("%.1f MiB", peak), fmt.Sprintf("≤ %.0f MiB", limitPeakRSSMiB), peak <= limitPeakRSSMiB)
	ftD := diff(mFirstText)
	fmt.Fprintf(&b, "\nNot a target, for reference: first *text* chunk, gateway − hop: %s µs.\n", fmtSummary(ftD, true))

	// All metrics.
	fmt.Fprintf(&b, "\n## All metrics\n\n| metric | unit | direct | hop | gateway | hop − direct | gateway − hop | gateway ÷ hop |\n|---|---|---|---|---|---|---|---|\n")
	for _, m := range reportMetrics {
		hd := summarize(paired(get(m.key, nameHop), get(m.key, nameDirect), func(h, d float64) float64 { return h - d }))
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", m.label, m.unit,
			fmtSummary(sum(m.key, nameDirect), false), fmtSummary(sum(m.key, nameHop), false), fmtSummary(sum(m.key, nameGateway), false),
			fmtSummary(hd, true), fmtSummary(diff(m.key), true), fmtSummary(ratio(m.key), false))
	}

	// Memory.
	fmt.Fprintf(&b, "\n## Memory (MiB)\n\n| process | idle VmRSS | peak VmHWM | VmRSS after the rounds |\n|---|---|---|---|\n")
	for _, name := range []string{nameGateway, nameHop, "emulator"} {
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f |\n", name, mib(res.idleRSS[name]), mib(res.peakRSS[name]), mib(res.endRSS[name]))
	}

	fmt.Fprintf(&b, "\n## Rounds\n\nOther load: CPU used by processes other than the rig's four (load driver, emulator, hop, gateway), "+
		"from /proc/stat, as a share of all %d CPUs (tick-sampled: a quiet machine reads slightly below zero, shown as 0); steal is CPU taken by the hypervisor.\n\n", runtime.NumCPU())
	fmt.Fprintf(&b, "| round | order | wall | other load | steal |\n|---|---|---|---|---|\n")
	for i, o := range res.orders {
		fmt.Fprintf(&b, "| %d | %s | %s | %.1f%% | %.1f%% |\n", i+1, strings.Join(o, " → "),
			res.roundWall[i].Round(time.Millisecond), res.foreignPct[i], res.stealPct[i])
	}
	return b.String()
}
