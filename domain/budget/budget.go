// Package budget owns the service's two per-request budgets as a client sees
// them: how long one upstream query may be (UTF-16 code units) and how many
// tools one request may offer. It holds where each limit came from (the
// setting, a verified probe report's measurement, or the default), the client
// a request came from (by its User-Agent) and the one wording of a refusal, so
// every API (chat completions, responses, messages) says the same thing.
// docs/CLIENTS.md has each client's recipe; its anchors are named here.
package budget

import (
	"fmt"
	"strconv"
	"strings"
)

// Source is where a limit's value came from.
type Source string

// The sources of a limit.
const (
	SourceDefault  Source = "default"  // nothing set: the reported value of the service
	SourceSetting  Source = "setting"  // the environment variable
	SourceMeasured Source = "measured" // a verified probe report's --measure-limits result
)

// Limit is one budget's value and where it came from; Setting names the
// environment variable that overrides it.
type Limit struct {
	Value   int
	Source  Source
	Setting string
}

// String says the limit and its origin, e.g. "10000 (the default of
// POSTMAN_MAX_QUERY_CHARS)".
func (l Limit) String() string {
	switch l.Source {
	case SourceSetting:
		return fmt.Sprintf("%d (set by %s)", l.Value, l.Setting)
	case SourceMeasured:
		return fmt.Sprintf("%d (measured by the verified probe report; %s overrides it)", l.Value, l.Setting)
	}
	return fmt.Sprintf("%d (the default of %s)", l.Value, l.Setting)
}

// Part is one message of a request, as counted in the upstream query.
type Part struct {
	Index int    // its index in the request's messages (or input items)
	Role  string // its role
	Chars int    // its text in UTF-16 code units
}

// Request is what a refusal needs to know of one request.
type Request struct {
	QueryChars int   // the upstream query it would send
	Query      Limit // the query limit that applies
	Tools      int   // the tools it offers
	ToolsLimit Limit // the tool limit that applies
	// Continued: the query holds only the new messages of a continued
	// upstream conversation (the rest of the history is not resent).
	Continued bool
	Largest   Part   // its largest message among those sent; Chars 0 for none
	Client    Client // who sent it (ClientOf), ClientUnknown when unknown
	// Instructions is the length of its instructions (the leading system
	// and developer messages) in the query: when they take at most half of
	// the query limit the request already follows a recipe, and what is long
	// is its history.
	Instructions int
	// Lost: the service no longer has the upstream conversation that held
	// this history, so the whole transcript would have to be sent again.
	Lost bool
}

// OverQuery and OverTools say which budgets the request exceeds.
func (r Request) OverQuery() bool { return r.QueryChars > r.Query.Value }
func (r Request) OverTools() bool { return r.Tools > r.ToolsLimit.Value }

// Detail is the refusal's public text: every budget the request exceeds,
// with its size, the limit and its origin, the largest message of an
// oversized query, and where the sending client's recipe is. "" when the
// request fits.
func (r Request) Detail() string {
	var parts []string
	if r.OverTools() {
		parts = append(parts, fmt.Sprintf("The request offers %d tools; the upstream accepts at most %s.", r.Tools, r.ToolsLimit))
	}
	if r.OverQuery() {
		what := "The upstream query would be"
		if r.Continued {
			what = "The new messages of this continued conversation alone would be"
		}
		s := fmt.Sprintf("%s %d characters (UTF-16 code units); the upstream accepts at most %s.", what, r.QueryChars, r.Query)
		if r.Largest.Chars > 0 {
			s += fmt.Sprintf(" The largest part is messages[%d] (%s, %d characters).", r.Largest.Index, r.Largest.Role, r.Largest.Chars)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return ""
	}
	if r.Lost && r.OverQuery() {
		parts = append([]string{"The service no longer has this conversation (it answered that the conversation was not found), so the whole transcript would have to be sent again."}, parts...)
	}
	parts = append(parts, r.advice())
	return strings.Join(parts, " ")
}

// advice is the last sentence of a refusal: the client's recipe, unless the
// request already follows one (its instructions take at most half of the
// query limit and its tools fit) and what is long is the history of a fresh
// conversation (no one message takes half of the limit); then how to shorten
// that history.
func (r Request) advice() string {
	if r.OverQuery() && !r.OverTools() && !r.Continued && 2*r.Instructions <= r.Query.Value && 2*r.Largest.Chars <= r.Query.Value {
		return "What is long is the conversation's history: compact it (/compact in Claude Code, opencode and Codex) or start a new session."
	}
	return r.Client.advice()
}

// Param is the request field a refusal points at: the tools when only they
// are over, the message that alone is over the query limit, else the messages
// (also when both budgets are over).
func (r Request) Param(messages string) string {
	switch {
	case r.OverTools() && !r.OverQuery():
		return "tools"
	case !r.OverTools() && r.OverQuery() && r.Largest.Chars > r.Query.Value:
		return messages + "[" + strconv.Itoa(r.Largest.Index) + "]"
	}
	return messages
}
