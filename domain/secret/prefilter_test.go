package secret

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// slowString is String without the prefilters: every step always runs.
func slowString(r *Redactor, s string) string {
	if r != nil && r.exact != nil {
		s = r.exact.Replace(s)
	}
	for i, re := range patterns {
		repl := "${1}" + Redacted
		if i == len(patterns)-1 {
			repl += "@"
		}
		s = re.ReplaceAllString(s, repl)
	}
	return s
}

// The prefilters only skip steps that could not change the text: String
// equals the unfiltered redaction on text built from the patterns' pieces,
// the secrets, and letters the patterns fold (ſ, K).
func TestPrefiltersNeverChangeTheRedaction(t *testing.T) {
	pieces := []string{"bearer", "BeArEr", "postman.sid", "POSTMAN.SID", "x-access-token", "Cookie", "authorization",
		"AUTHORIZATION", "://", "https", "user:pw@", "@", " ", "\t", "=", ":", `"`, "'", ";", ",", "abc", "\u017f", "\u212a", "é",
		"sk-live-0001", "sk-live-0001x", "c%2Fv", "c/v", "Basic ", "po", "tman.sid", "coo", "ie", "x-acce", "-to", "ken"}
	r := NewRedactor("sk-live-0001", "c/v")
	for _, s := range []string{"po\u017ftman.sid=abc", "coo\u212aie: v", "x-acce\u017f\u017f-token=v", "Bearer t", "a://u:p@h"} {
		if got, want := r.String(s), slowString(r, s); got != want || got == s {
			t.Fatalf("%q: prefiltered %q, unfiltered %q", s, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom(pieces), 0, 12).Draw(t, "parts")
		s := strings.Join(parts, "")
		for _, red := range []*Redactor{r, nil, NewRedactor()} {
			if got, want := red.String(s), slowString(red, s); got != want {
				t.Fatalf("%q: prefiltered %q, unfiltered %q", s, got, want)
			}
		}
	})
}

func TestAValueWithoutCandidatesIsReturnedWithoutAllocating(t *testing.T) {
	r := NewRedactor("sk-live-0001")
	if n := testing.AllocsPerRun(100, func() { _ = r.String("/v1/chat/completions") }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
