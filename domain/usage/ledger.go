package usage

import (
	"time"
	"unicode/utf8"

	"github.com/pmgate/pmgate/domain/chat"
)

// The APIs a request can come through.
const (
	APIChat      = "chat"
	APIResponses = "responses"
	APIMessages  = "messages"
	APIGemini    = "gemini"
)

// DefaultRetentionDays is how long the ledger keeps its daily rows
// (USAGE_RETENTION_DAYS).
const DefaultRetentionDays = 90

// Entry is one finished request as the ledger counts it. Nothing in it is
// content or an upstream id: the same fields a log line may hold.
type Entry struct {
	At       time.Time
	Slot     string // the key slot's id
	API      string // APIChat, APIResponses, APIMessages or APIGemini
	Model    string // the public model id; "" when the request was refused before it named a valid one
	Strategy string // the upstream strategy
	Outcome  string // "ok" or the stable error code
	// Dispatches is the number of upstream requests the request sent (0 or 1):
	// the unit that costs credits.
	Dispatches  int
	QueryChars  int64 // characters of content handed to the upstream
	OutputChars int64 // characters of text and tool-call arguments received
	// Reported is set when the upstream reported token counts; the two counts
	// are then its own.
	Reported         bool
	PromptTokens     int64
	CompletionTokens int64
	Duration         time.Duration
}

// Key is what the ledger aggregates by.
type Key struct {
	Day      string // "2006-01-02", UTC
	Slot     string
	API      string
	Model    string
	Strategy string
	Outcome  string
}

// Row is the ledger's aggregate of one Key.
type Row struct {
	Key
	Requests    int64
	Dispatches  int64
	QueryChars  int64
	OutputChars int64
	// Tokens the upstream reported, and how many requests they cover.
	ReportedRequests         int64
	ReportedPromptTokens     int64
	ReportedCompletionTokens int64
	// Estimates from characters (EstimateTokens), for every request: labelled
	// as estimates wherever they are shown, never mixed with reported counts.
	EstimatedInputTokens  int64
	EstimatedOutputTokens int64
	DurationMS            int64
}

// KeyOf is the row an entry belongs to.
func KeyOf(e Entry) Key {
	return Key{Day: Day(e.At), Slot: e.Slot, API: e.API, Model: e.Model, Strategy: e.Strategy, Outcome: e.Outcome}
}

// EstimateTokens is the token estimate of n characters: the one estimate
// formula of the APIs' usage (chat.EstimateTokens, docs/MESSAGES.md), applied
// to what the ledger counts — the characters sent upstream and received.
func EstimateTokens(chars int64) int64 { return chat.EstimateTokens(int(chars)) }

// Chars counts the characters of s.
func Chars(s string) int64 { return int64(utf8.RuneCountInString(s)) }

// Add counts one entry into the row.
func (r *Row) Add(e Entry) {
	r.Requests++
	r.Dispatches += int64(e.Dispatches)
	r.QueryChars += e.QueryChars
	r.OutputChars += e.OutputChars
	if e.Reported {
		r.ReportedRequests++
		r.ReportedPromptTokens += e.PromptTokens
		r.ReportedCompletionTokens += e.CompletionTokens
	}
	r.EstimatedInputTokens += EstimateTokens(e.QueryChars)
	r.EstimatedOutputTokens += EstimateTokens(e.OutputChars)
	r.DurationMS += e.Duration.Milliseconds()
}

// Merge adds the counts of o (same key) into r.
func (r *Row) Merge(o Row) {
	r.Requests += o.Requests
	r.Dispatches += o.Dispatches
	r.QueryChars += o.QueryChars
	r.OutputChars += o.OutputChars
	r.ReportedRequests += o.ReportedRequests
	r.ReportedPromptTokens += o.ReportedPromptTokens
	r.ReportedCompletionTokens += o.ReportedCompletionTokens
	r.EstimatedInputTokens += o.EstimatedInputTokens
	r.EstimatedOutputTokens += o.EstimatedOutputTokens
	r.DurationMS += o.DurationMS
}

// Oldest is the first day the ledger keeps at now: rows of earlier days are
// swept.
func Oldest(now time.Time, retentionDays int) string {
	return Day(now.UTC().AddDate(0, 0, -(retentionDays - 1)))
}
