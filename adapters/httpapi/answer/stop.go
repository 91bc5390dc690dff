package answer

import (
	"strings"
	"unicode/utf8"

	"github.com/pmgate/pmgate/app"
)

// StopScanner enforces stop_sequences on text that arrives in pieces: the
// text is cut before the first sequence to complete, and released only up
// to where no sequence can still begin, so a sequence split across upstream
// deltas is found as surely as one inside a delta. With no sequences it
// releases everything at once.
type StopScanner struct {
	stops   []string
	hold    int // longest sequence − 1: bytes that may begin a match
	pending string
	Matched *string // the sequence that cut the text
}

// NewStopScanner cuts text at stops (none: it releases everything at once).
func NewStopScanner(stops []string) *StopScanner {
	sc := &StopScanner{stops: stops}
	for _, s := range stops {
		sc.hold = max(sc.hold, len(s)-1)
	}
	return sc
}

// Feed adds text and returns what may be shown now; after a match it
// returns nothing more.
func (sc *StopScanner) Feed(t string) string {
	if sc.Matched != nil {
		return ""
	}
	if len(sc.stops) == 0 {
		return t
	}
	sc.pending += t
	// The sequence that completes first stops generation.
	cut, end := -1, -1
	for i, s := range sc.stops {
		if j := strings.Index(sc.pending, s); j >= 0 && (end < 0 || j+len(s) < end) {
			cut, end = j, j+len(s)
			sc.Matched = &sc.stops[i]
		}
	}
	if cut >= 0 {
		out := sc.pending[:cut]
		sc.pending = ""
		return out
	}
	n := len(sc.pending) - sc.hold
	for n > 0 && n < len(sc.pending) && !utf8.RuneStart(sc.pending[n]) {
		n--
	}
	if n <= 0 {
		return ""
	}
	out := sc.pending[:n]
	sc.pending = sc.pending[n:]
	return out
}

// Flush releases the held tail at the proven end (no sequence completed).
func (sc *StopScanner) Flush() string {
	out := sc.pending
	sc.pending = ""
	return out
}

// Step is a stream's step cut at the stop sequences: the text that may be
// shown now, and the step's tool-call fragment, or nil once a sequence
// stopped the turn (the turn ends there: no call after it is shown).
func (sc *StopScanner) Step(st Step) (text string, call *app.ToolCallDelta) {
	text = sc.Feed(st.Text)
	if sc.Matched != nil {
		return text, nil
	}
	return text, st.Call
}
