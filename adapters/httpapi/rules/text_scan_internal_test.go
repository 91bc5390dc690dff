package rules

import (
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// validText agrees with the walk checkText falls back to, on every valid
// JSON body built from strings with escapes, surrogates and invalid bytes.
func TestValidTextAgreesWithTheWalk(t *testing.T) {
	pieces := []string{"a", "é", `\"`, `\\`, `\\u`, `\u0041`, `\ud83d`, `\ude00`, `\uD83D\uDE00`, `\udbff`, `\n`, `\/`,
		"\xff", "\xed\xa0\x80", "\xe2\x82", "u", "d83d", " "}
	str := rapid.Custom(func(t *rapid.T) string {
		return `"` + strings.Join(rapid.SliceOfN(rapid.SampledFrom(pieces), 0, 6).Draw(t, "s"), "") + `"`
	})
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		b.WriteString(`{"model":"m","messages":[`)
		for i, n := 0, rapid.IntRange(0, 4).Draw(t, "n"); i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{` + str.Draw(t, "key") + `:` + str.Draw(t, "value") + `, "n": [1, true, null]}`)
		}
		b.WriteString(`]}`)
		body := []byte(b.String())
		if !json.Valid(body) {
			t.Skip("not JSON")
		}
		w := textWalker{b: body}
		w.value("")
		if got, want := validText(body), w.err == nil; got != want {
			t.Fatalf("%q: validText %v, walk accepts %v", body, got, want)
		}
	})
}
