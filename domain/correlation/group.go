// Package correlation is the pure core of native tool-call correlation (design
// CORRELATION): the group record, the declared group machine, continuation
// validation and the capacity/expiry rules over many groups. Time is always an
// argument; nothing here reads a clock, locks, or performs I/O.
package correlation

import (
	"time"

	"github.com/pmgate/pmgate/domain/canon"
)

// State is a group's lifecycle state (docs/CORRELATION.md).
type State string

// SafeValue marks states as safe for logs.
func (State) SafeValue() {}

// The six states of docs/CORRELATION.md, plus Removed, the pseudo-state of a record that no
// longer exists (never stored; lookups of it answer unknown_tool_call).
const (
	Pending   State = "PENDING"
	Inflight  State = "INFLIGHT"
	Consumed  State = "CONSUMED"
	Expired   State = "EXPIRED"
	Cancelled State = "CANCELLED"
	Uncertain State = "UNCERTAIN"
	Removed   State = "REMOVED"
)

// Terminal reports whether s is a terminal tombstone state.
func (s State) Terminal() bool {
	return s == Consumed || s == Expired || s == Cancelled || s == Uncertain
}

// Live reports whether a group in s counts against live capacity.
func (s State) Live() bool { return s == Pending || s == Inflight }

// Call is one tool call of a group (its call record in docs/CORRELATION.md).
type Call struct {
	PublicID        string // call_pmn_… issued to the client
	UpstreamID      string // private; never leaves the gateway
	UpstreamGroupID string // private; empty when the upstream sent none
	Index           int
	OriginalName    string // the client's tool name
	ArgumentsJSON   string // exact upstream argument string
	ArgumentsHash   string
	SchemaHash      string
}

// Group is the record of one upstream tool-call group (its group record in docs/CORRELATION.md).
// Stores keep values; only Apply-style methods change a group, inside a store's
// update closure.
type Group struct {
	Key               string // random internal identifier
	PrincipalID       string
	WorkspaceID       string
	Model             string
	ConversationID    string // private
	UpstreamGroupID   string // private; empty for a synthetic group of one ungrouped call
	State             State
	IssuedAt          time.Time
	PendingExpiresAt  time.Time
	InflightExpiresAt time.Time // zero unless INFLIGHT (hard deadline of the claim)
	TerminalExpiresAt time.Time // zero unless terminal
	// TranscriptHash binds the transcript the client must echo: a value-form
	// hash (canon.TranscriptHashV2) for groups this build admits; an exact-form
	// one (canon.TranscriptHash) in records stored by earlier builds.
	TranscriptHash   string
	TranscriptLength int // number of messages in the stored prefix
	ToolsHash        string
	Calls            []Call
	// AcceptedResultsHash is set on the PENDING→INFLIGHT claim.
	AcceptedResultsHash string
	// DispatchAttemptID is the random id of the one dispatch claim; empty otherwise.
	DispatchAttemptID string
	// TerminalResponseDigest is the digest of the cached terminal response, if any.
	TerminalResponseDigest string
	// CachedResponse is the retained terminal response for idempotent replay; nil
	// when it was not retained (over the cache budget) or not yet known.
	CachedResponse []byte
}

// IssuedCalls returns the calls as the gateway showed them: public id, tool
// name and the exact argument string, in call order.
func (g Group) IssuedCalls() []canon.IssuedCall {
	out := make([]canon.IssuedCall, len(g.Calls))
	for i, c := range g.Calls {
		out[i] = canon.IssuedCall{ID: c.PublicID, Name: c.OriginalName, Arguments: c.ArgumentsJSON}
	}
	return out
}

// Clone returns a deep copy, so that a store can hand out values nobody can mutate.
func (g Group) Clone() Group {
	c := g
	c.Calls = append([]Call(nil), g.Calls...)
	if g.CachedResponse != nil {
		c.CachedResponse = append(make([]byte, 0, len(g.CachedResponse)), g.CachedResponse...)
	}
	return c
}

// Bytes is the accounted size of a group: a fixed overhead plus every variable
// string it keeps. Stores use it for byte accounting before admission.
func (g Group) Bytes() int {
	n := groupOverhead + len(g.Key) + len(g.PrincipalID) + len(g.WorkspaceID) + len(g.Model) +
		len(g.ConversationID) + len(g.UpstreamGroupID) + len(g.TranscriptHash) + len(g.ToolsHash) +
		len(g.AcceptedResultsHash) + len(g.DispatchAttemptID) + len(g.TerminalResponseDigest)
	for _, c := range g.Calls {
		n += callOverhead + len(c.PublicID) + len(c.UpstreamID) + len(c.UpstreamGroupID) +
			len(c.OriginalName) + len(c.ArgumentsJSON) + len(c.ArgumentsHash) + len(c.SchemaHash)
	}
	return n
}

const (
	groupOverhead = 256
	callOverhead  = 128
)
