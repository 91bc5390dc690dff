package postman_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/completion"
)

// Fuzz limits: small, so that the fuzzer reaches them.
const (
	fuzzMaxEvent  = 4096
	fuzzMaxOutput = 8192
	fuzzMaxArgs   = 1024
)

var fuzzRules = []completion.Rule{completion.RuleLegacyDone, completion.RuleExplicitOnly, completion.RuleUsageAfterOutput}

func fuzzConfig(rule uint8, tools bool) postman.ReaderConfig {
	c := postman.ReaderConfig{
		Rule:                 fuzzRules[int(rule)%len(fuzzRules)],
		MaxEventBytes:        fuzzMaxEvent,
		MaxOutputBytes:       fuzzMaxOutput,
		MaxToolArgumentBytes: fuzzMaxArgs,
		Observed:             []string{upstreamModel},
	}
	if tools {
		c.Tools = []string{"get_weather", "get_time"}
	}
	return c
}

// completionProvable is an oracle independent of the decoder: it reports
// whether the raw input could possibly be proven complete under rule. It is a
// necessary condition only (the decoder may still refuse, never the reverse).
func completionProvable(input []byte, rule completion.Rule) bool {
	if len(input) == 0 || input[len(input)-1] != '\n' {
		return false // a partial last line is never a clean end
	}
	var data [][]byte
	for _, l := range bytes.Split(input[:len(input)-1], []byte("\n")) {
		l = bytes.TrimSuffix(l, []byte("\r"))
		if p, ok := bytes.CutPrefix(l, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(p, []byte(" ")))
		}
	}
	if len(data) == 0 {
		return false
	}
	dones := 0
	for _, p := range data {
		if string(p) == "[DONE]" {
			dones++
		}
	}
	last := data[len(data)-1]
	if dones == 1 && string(last) == "[DONE]" {
		return true // the explicit end: every rule
	}
	if !rule.Web() || dones != 0 {
		return false
	}
	var env struct {
		EventType string `json:"eventType"`
		Type      string `json:"type"`
	}
	if json.Unmarshal(last, &env) != nil {
		return false
	}
	typ := env.EventType
	if typ == "" {
		typ = env.Type
	}
	// web_session: the last event is a done event after some output, or
	// (usage_after_output_v1) a usage event after some output.
	if typ != "done" && (rule != completion.RuleUsageAfterOutput || typ != "usage") {
		return false
	}
	for _, p := range data[:len(data)-1] {
		if bytes.Contains(p, []byte("Chunk")) {
			return true
		}
	}
	return false
}

func FuzzDecoder(f *testing.F) {
	for _, path := range goldenFiles(f) {
		g := readGolden(f, path)
		rule := uint8(0)
		for i, r := range fuzzRules {
			if string(r) == g.Rule {
				rule = uint8(i)
			}
		}
		f.Add(g.bytes(f), rule, g.Tools != nil, uint64(7))
	}
	f.Fuzz(func(t *testing.T, input []byte, rule uint8, tools bool, seed uint64) {
		cfg := fuzzConfig(rule, tools)
		whole := postman.NewReaderStream(&chunkReader{parts: chunks(input, 0)}, cfg)
		got := decodeAll(t, whole)
		cut := postman.NewReaderStream(&chunkReader{parts: chunks(input, seed%64)}, cfg)
		again := decodeAll(t, cut)

		if !equalResults(got, again) {
			t.Fatalf("chunking changed the result:\n%+v\n%+v", got, again)
		}
		if (got.End == "EOF") != (got.State == string(completion.CompleteExplicit) || got.State == string(completion.CompleteUsageAfterOutput)) {
			t.Fatalf("io.EOF without a completion outcome: %s %s", got.End, got.State)
		}
		if got.End == "EOF" && !completionProvable(input, cfg.Rule) {
			t.Fatalf("completion reported for an input the %s rule cannot prove complete", cfg.Rule)
		}
		out, args := 0, map[int]int{}
		for _, ev := range got.Events {
			out += len(ev.Text) + len(ev.Arguments)
			if ev.Index != nil {
				args[*ev.Index] += len(ev.Arguments)
				if args[*ev.Index] > fuzzMaxArgs {
					t.Fatalf("tool arguments exceed the limit: %d", args[*ev.Index])
				}
			}
		}
		if out > fuzzMaxOutput {
			t.Fatalf("output exceeds the limit: %d", out)
		}
		if fp := postman.Footprint(whole); fp > 64<<10+4*fuzzMaxEvent+2*fuzzMaxOutput {
			t.Fatalf("decoder retains %d bytes", fp)
		}
	})
}

func equalResults(a, b goldenResult) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
