package answer

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// cutAtFirst is the reference: the text before the sequence whose match
// completes first (ties: the earlier-listed), and that sequence.
func cutAtFirst(text string, stops []string) (string, *string) {
	for end := 1; end <= len(text); end++ {
		for i, s := range stops {
			if strings.HasSuffix(text[:end], s) {
				return text[:end-len(s)], &stops[i]
			}
		}
	}
	return text, nil
}

// The scanner gives the reference's answer however the text is split into
// deltas: a sequence split across deltas is found like one inside a delta,
// and nothing after it is ever released.
func TestStopScannerMatchesTheReferenceForAnySplit(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alpha := rapid.SampledFrom([]string{"a", "b", "<", "/", ">", "é", "\n"})
		word := func(min, max int) *rapid.Generator[string] {
			return rapid.Custom(func(t *rapid.T) string {
				return strings.Join(rapid.SliceOfN(alpha, min, max).Draw(t, "w"), "")
			})
		}
		stops := rapid.SliceOfNDistinct(word(1, 4), 0, 3, func(s string) string { return s }).Draw(t, "stops")
		pieces := rapid.SliceOfN(word(0, 6), 0, 8).Draw(t, "pieces")
		text := strings.Join(pieces, "")
		want, wantSeq := cutAtFirst(text, stops)

		sc := NewStopScanner(stops)
		var got strings.Builder
		for _, p := range pieces {
			out := sc.Feed(p)
			if !strings.HasPrefix(want, got.String()+out) {
				t.Fatalf("released %q beyond the cut %q", got.String()+out, want)
			}
			got.WriteString(out)
		}
		if sc.Matched == nil {
			got.WriteString(sc.Flush())
		}
		if got.String() != want {
			t.Fatalf("text %q stops %q: got %q, want %q", text, stops, got.String(), want)
		}
		if (sc.Matched == nil) != (wantSeq == nil) || (wantSeq != nil && *sc.Matched != *wantSeq) {
			t.Fatalf("text %q stops %q: matched %v, want %v", text, stops, sc.Matched, wantSeq)
		}
	})
}
