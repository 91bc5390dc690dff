package main

import (
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseIntList(t *testing.T) {
	got, err := parseIntList("1, 4,16,64")
	if err != nil || !slices.Equal(got, []int{1, 4, 16, 64}) {
		t.Fatalf("parseIntList = %v, %v", got, err)
	}
	if got, err := parseIntList(""); err != nil || len(got) != 0 {
		t.Fatalf(`parseIntList("") = %v, %v; want none`, got, err)
	}
	for _, bad := range []string{"0", "1025", "x", "4,4", "1,,2", "-1"} {
		if _, err := parseIntList(bad); err == nil {
			t.Errorf("parseIntList(%q) accepted", bad)
		}
	}
}

func TestParseFlags(t *testing.T) {
	s, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.sweep, []int{1, 4, 16, 64}) || !slices.Equal(s.sweepOther, []int{16}) || s.longEvents != 50 || s.burstTime != 500*time.Millisecond {
		t.Fatalf("defaults: %+v", s)
	}
	// Every paired figure gets one repetition per round: 15 by default, the
	// least a CPU ratio needs; the cold pass is on, its gap in 5–10 ms and the
	// upstream's events 2 ms apart.
	if s.rounds < minPairs || s.cold == 0 || s.coldGap < 5*time.Millisecond || s.coldGap > 10*time.Millisecond || s.coldEventGap != 2*time.Millisecond {
		t.Fatalf("defaults: rounds %d, cold %d, gap %s, event gap %s", s.rounds, s.cold, s.coldGap, s.coldEventGap)
	}
	if s.maxConcurrency() != 64 || s.gwMaxConcurrent() != 128 {
		t.Fatalf("maxConcurrency %d, gwMaxConcurrent %d; want 64, 128", s.maxConcurrency(), s.gwMaxConcurrent())
	}
	s, err = parseFlags([]string{"-quick", "-rounds", "3", "-sweep", "2", "-sweep-other", ""}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s.rounds != 3 || s.seq != 20 || s.burstTime != 200*time.Millisecond || len(s.sweepOther) != 0 || s.gwMaxConcurrent() != 16 {
		t.Fatalf("-quick with explicit flags: %+v", s)
	}
	for _, bad := range [][]string{
		{"-check", "-sweep", "1,4"},         // the check's concurrency is not swept
		{"-check", "-check-cpu-ratio", "1"}, // a ratio of 1 fails on noise alone
		{"-sweep", ""},                      // nothing to sweep
		{"-long-events", "6"},               // no longer than the short stream
		{"-burst-time", "1ms"},              // too short to read a CPU tick
		{"-cold-gap", "0s"},                 // no idle gap: not cold
		{"-cold-event-gap", "0s"},           // the emulator would take its 200 ms default
		{"-cold", "-1"},                     // a count
		{"-check", "-check-cold-us", "0"},   // every cold turn would fail
		{"extra"},                           // no arguments
	} {
		if _, err := parseFlags(bad, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("parseFlags(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestModulePath(t *testing.T) {
	for gomod, want := range map[string]string{
		"module github.com/pmgate/pmgate\n\ngo 1.26.0\n":    modulePMGate,
		"// comment\nmodule \"github.com/pmgate/pmgate\"\n": modulePMGate,
		"module pmgate\n": "pmgate",
		"go 1.26\n":       "",
	} {
		if got := modulePath([]byte(gomod)); got != want {
			t.Errorf("modulePath(%q) = %q, want %q", gomod, got, want)
		}
	}
}

func TestStreamConstants(t *testing.T) {
	// The short stream is the "hi" turn: 44 bytes of reply in chunks of 24.
	if chunks := (len(replyPrefix+seqQuery) + chunkBytes - 1) / chunkBytes; chunks+framingEvents != shortEvents {
		t.Fatalf("the short turn has %d text chunks, so %d events, not %d", chunks, chunks+framingEvents, shortEvents)
	}
	if got := longQuery(50); got != "hi #text_chunks=46" {
		t.Fatalf("longQuery(50) = %q", got)
	}
}

func TestPairedAndSummarizeSkipMissingRounds(t *testing.T) {
	nan := math.NaN()
	a := []float64{10, nan, 30, 40}
	b := []float64{1, 2, nan}
	d := paired(a, b, minus)
	if len(d) != 4 || d[0] != 9 || !math.IsNaN(d[1]) || !math.IsNaN(d[2]) || !math.IsNaN(d[3]) {
		t.Fatalf("paired = %v; want [9 NaN NaN NaN]", d)
	}
	s := summarize([]float64{nan, 3, 1, nan, 2})
	if s.n != 3 || s.med != 2 || s.q1 != 1.5 || s.q3 != 2.5 {
		t.Fatalf("summarize = %+v; want the median of 1, 2, 3 over 3 rounds", s)
	}
	if s := summarize([]float64{nan}); s.n != 0 || !math.IsNaN(s.med) {
		t.Fatalf("summarize(NaN) = %+v", s)
	}
}

func TestResultsSetPadsMissingRounds(t *testing.T) {
	res := &results{values: map[string]map[string][]float64{}}
	res.set("m", "hop", 2, 5)
	res.set("m", "hop", 0, 1)
	got := res.get("m", "hop")
	if len(got) != 3 || got[0] != 1 || !math.IsNaN(got[1]) || got[2] != 5 {
		t.Fatalf("values = %v; want [1 NaN 5]", got)
	}
}

func TestDeriveMarginalCost(t *testing.T) {
	res := &results{s: settings{longEvents: 50}, names: []string{nameHop}, values: map[string]map[string][]float64{}}
	res.set(streamKey(streamShort, fLast), nameHop, 0, 600)
	res.set(streamKey(streamLong, fLast), nameHop, 0, 1040)
	res.set(streamKey(streamShort, fLast), nameHop, 1, 700) // round 2 has no long stream
	res.derive()
	got := res.get(streamKey(streamLong, fMarginal), nameHop)
	if len(got) != 2 || got[0] != 10 || !math.IsNaN(got[1]) {
		t.Fatalf("marginal = %v; want [10 NaN]: (1040 − 600) ÷ 44", got)
	}
}

func TestParseAnswerUpstream(t *testing.T) {
	stream := strings.Join([]string{
		`data: {"eventType":"conversation","data":{"id":"conv-1"}}`, "",
		`data: {"eventType":"thinkingChunk","data":{"thinkingContent":"x"}}`, "",
		`data: {"eventType":"toolCallChunk","data":{"toolCallGroupId":"grp-1","toolCalls":[{"id":"tc-1","index":0,"toolCallGroupId":"grp-1","function":{"name":"get_weather","arguments":"{\"ci"}}]}}`, "",
		`data: {"eventType":"toolCallChunk","data":{"toolCallGroupId":"grp-1","toolCalls":[{"id":"tc-1","index":0,"toolCallGroupId":"grp-1","function":{"name":"get_weather","arguments":"ty\":\"x\"}"}}]}}`, "",
		`data: {"eventType":"usage","data":{}}`, "",
		"data: [DONE]", "", "",
	}, "\n")
	a, err := parseAnswer(protoUpstream, []byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	if a.convID != "conv-1" || a.groupID != "grp-1" || a.callID != "tc-1" || a.callName != "get_weather" || a.callArgs != `{"city":"x"}` {
		t.Fatalf("got %+v", a)
	}
	text := "data: {\"eventType\":\"textChunk\",\"data\":{\"textContent\":\"ab\"}}\n\ndata: {\"eventType\":\"textChunk\",\"data\":{\"textContent\":\"c\"}}\n\ndata: [DONE]\n\n"
	if a, err := parseAnswer(protoUpstream, []byte(text)); err != nil || a.text != "abc" {
		t.Fatalf("text answer: %+v, %v", a, err)
	}
	for name, bad := range map[string]string{
		"no [DONE]":     strings.TrimSuffix(text, "data: [DONE]\n\n"),
		"failure event": "data: {\"eventType\":\"failure\",\"data\":{}}\n\ndata: [DONE]\n\n",
		"bad JSON":      "data: {\"eventType\":\n\ndata: [DONE]\n\n",
	} {
		if _, err := parseAnswer(protoUpstream, []byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseAnswerOpenAI(t *testing.T) {
	call := `{"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,` +
		`"tool_calls":[{"id":"call_pmn_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"x\"}"}}]}}]}`
	a, err := parseAnswer(protoOpenAI, []byte(call))
	if err != nil || a.callID != "call_pmn_1" || a.callName != "get_weather" || a.callArgs != `{"city":"x"}` || a.text != "" {
		t.Fatalf("tool call: %+v, %v", a, err)
	}
	stop := `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hello"}}]}`
	if a, err := parseAnswer(protoOpenAI, []byte(stop)); err != nil || a.text != "hello" {
		t.Fatalf("text: %+v, %v", a, err)
	}
	for _, bad := range []string{
		`{"choices":[{"finish_reason":"length","message":{"content":"hel"}}]}`, // cut short
		`{"choices":[]}`, `{"error":{"message":"no"}}`, `not json`,
	} {
		if _, err := parseAnswer(protoOpenAI, []byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// checkResults is one round where the gateway costs gwCPU per request against
// the hop's 100 µs and adds seqAdded µs to a sequential turn.
func checkResults(gwCPU, seqAdded float64, fails int) *results {
	res := &results{s: settings{checkC: 16, checkCPU: 2.5, checkSeqUS: 500}, names: []string{nameHop, nameHopB, nameGateway},
		values: map[string]map[string][]float64{}, failures: map[string]int{}}
	for name, cpu := range map[string]float64{nameHop: 100, nameHopB: 105, nameGateway: gwCPU} {
		res.set(sweepKey(turnFresh, 16, fCPU), name, 0, cpu)
	}
	for name, lat := range map[string]float64{nameHop: 700, nameHopB: 690, nameGateway: 700 + seqAdded} {
		res.set(seqKey(turnFresh), name, 0, lat)
	}
	res.fail(nameGateway, fails, errors.New("status 500"))
	return res
}

func TestJudgeCheck(t *testing.T) {
	if failed := failedChecks(judgeCheck(checkResults(240, 450, 0))); len(failed) != 0 {
		t.Fatalf("a healthy run failed: %v", failed)
	}
	for name, c := range map[string]struct {
		res  *results
		want string
	}{
		"CPU":      {checkResults(260, 0, 0), "CPU per fresh turn at c=16"},
		"latency":  {checkResults(100, 501, 0), "sequential fresh turn"},
		"failures": {checkResults(100, 0, 1), "failed exchanges"},
		"no value": {checkResults(math.NaN(), 0, 0), "CPU per fresh turn at c=16"},
	} {
		failed := failedChecks(judgeCheck(c.res))
		if len(failed) != 1 || !strings.HasPrefix(failed[0], c.want) {
			t.Errorf("%s: failed checks %v, want exactly %q", name, failed, c.want)
		}
	}
	// With a cold pass the check judges its sequential turn too, grossly.
	cold := func(added float64) *results {
		res := checkResults(100, 0, 0)
		res.s.cold, res.s.checkColdUS = 10, 1000
		for name, lat := range map[string]float64{nameHop: 14000, nameHopB: 14100, nameGateway: 14000 + added} {
			res.set(coldKey(cSeq), name, 0, lat)
		}
		return res
	}
	if failed := failedChecks(judgeCheck(cold(900))); len(failed) != 0 {
		t.Errorf("a cold turn within the gross limit failed: %v", failed)
	}
	if failed := failedChecks(judgeCheck(cold(1001))); len(failed) != 1 || !strings.HasPrefix(failed[0], "cold: sequential fresh turn") {
		t.Errorf("a cold turn 1001 µs slower than the hop's: failed checks %v", failed)
	}
	if n := len(judgeCheck(checkResults(100, 0, 0))); n != 3 {
		t.Errorf("without a cold pass the check has %d rows, want 3", n)
	}
	rows := judgeCheck(checkResults(250, 0, 0))
	if rows[0].measured != "2.50×" || rows[0].floor != "1.05×" || rows[0].result() != "PASS" {
		t.Errorf("CPU row %+v: want 2.50× against the A/A 1.05×, a pass at the limit", rows[0])
	}
}

// TestHotColdTablePairsEachSideWithItsOwnRounds: the hot and cold cells are
// each paired against the hop of their own round, and the pairs column
// counts the rounds each side had.
func TestHotColdTablePairsEachSideWithItsOwnRounds(t *testing.T) {
	res := &results{s: settings{cold: 5}, names: []string{nameHop, nameHopB, nameGateway}, values: map[string]map[string][]float64{}}
	for round, v := range [][3]float64{{700, 710, 730}, {800, 790, 840}} { // hop, hop-b, gateway
		for i, name := range res.names {
			res.set(seqKey(turnFresh), name, round, v[i])
			res.set(coldKey(cSeq), name, round, 2*v[i]) // cold: twice as far apart
		}
	}
	res.set(coldKey(cSeq), nameGateway, 2, 1) // a round the hop lacks is no pair
	var b strings.Builder
	view{res}.writeHotCold(&b, []hotColdRow{{label: "seq", hot: seqKey(turnFresh), cold: coldKey(cSeq)}})
	want := "| seq | +35.00 [32.50 – 37.50] µs | +0.00 [-5.00 – 5.00] µs | +70.00 [65.00 – 75.00] µs | +0.00 [-10.00 – 10.00] µs | 2 / 2 |"
	if !strings.Contains(b.String(), want) {
		t.Fatalf("table:\n%s\nwant the row\n%s", b.String(), want)
	}
}

func TestParseVoluntarySwitches(t *testing.T) {
	status := "Name:\tgateway\nvoluntary_ctxt_switches:\t1234\nnonvoluntary_ctxt_switches:\t56\n"
	if got, err := parseVoluntarySwitches([]byte(status)); err != nil || got != 1234 {
		t.Fatalf("parseVoluntarySwitches = %d, %v; want 1234", got, err)
	}
	if _, err := parseVoluntarySwitches([]byte("Name:\tx\n")); err == nil {
		t.Fatal("no error without the line")
	}
}
