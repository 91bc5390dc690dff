// Package conversation is the pure core of conversation continuity: the anchor
// record that maps a transcript the gateway completed to the upstream
// conversation that holds it, the declared anchor machine, the rule that splits
// a fresh request into "anchored history + new user messages", and the
// capacity/expiry rules over many anchors (Registry). Time is always an
// argument; nothing here reads a clock, locks, or performs I/O.
//
// docs/CONVERSATIONS.md describes the record, the machine and the decisions.
package conversation

import (
	"time"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
)

// State is an anchor's lifecycle state.
type State string

// SafeValue marks states as safe for logs.
func (State) SafeValue() {}

// The states of an anchor (RETIRED is only read from records of earlier
// builds: a failed turn now leaves its anchor RESUMABLE), plus Removed, the pseudo-state of a record that
// does not exist (never stored; a lookup that finds nothing is answered from it).
const (
	Active   State = "ACTIVE"
	Claimed  State = "CLAIMED"
	Advanced State = "ADVANCED"
	Retired  State = "RETIRED"
	Expired  State = "EXPIRED"
	Removed  State = "REMOVED"
	// Resumable: a continued turn failed after it was sent (or its claim's
	// deadline passed); the upstream conversation may hold its message and a
	// partial answer. A later turn of the same history starts fresh when its
	// whole transcript fits one query, else resumes it, disclosed.
	Resumable State = "RESUMABLE"
	// Resuming: one request is continuing a RESUMABLE anchor, or an ADVANCED
	// one from its earlier point (claimed like CLAIMED, never dropped).
	Resuming State = "RESUMING"
)

// Terminal reports whether s is a tombstone state (kept until the terminal TTL,
// then removed).
func (s State) Terminal() bool {
	return s == Advanced || s == Retired || s == Expired || s == Resumable
}

// Anchor is the record of one transcript the gateway completed: who may
// continue it (principal, workspace, model, tools) and which upstream
// conversation holds it. It is keyed by (PrincipalID, TranscriptHash): nothing
// a client sends can name an anchor, and the conversation id never leaves the
// gateway.
type Anchor struct {
	PrincipalID string
	WorkspaceID string
	Model       string
	ToolsHash   string
	// InstructionsHash is InstructionsHash of the anchored request: its
	// system prompt and developer messages ("" for none).
	InstructionsHash string
	// TranscriptHash is the canonical hash (TranscriptHash) of the request's
	// messages plus the assistant message the gateway returned, as the client
	// will echo them.
	TranscriptHash   string
	TranscriptLength int    // number of messages it covers
	ConversationID   string // private upstream id; never logged, never shown
	State            State
	CreatedAt        time.Time
	ExpiresAt        time.Time // end of ACTIVE (CONVERSATION_TTL_MS after CreatedAt)
	// ClaimID is the random id of the one request continuing the anchor; set
	// while CLAIMED (and kept afterwards for diagnosis), empty before.
	ClaimID        string
	ClaimExpiresAt time.Time // hard deadline of the claim; zero unless CLAIMED
	// ClaimSent is what the claim's request sends after the history (its new
	// user messages); Sent is the ClaimSent of the last claim that failed
	// after it may have been sent (RESUMABLE): the upstream conversation may
	// hold those messages, so a resume does not send them again.
	ClaimSent         Sent
	Sent              Sent
	TerminalExpiresAt time.Time // zero unless a tombstone
}

// Sent identifies the new user messages a continued turn sent after the
// anchored history: their count and TranscriptHash.
type Sent struct {
	Count int
	Hash  string
}

// SentOf is the Sent of the new messages added. Every message counts, a
// system message at their start too (TranscriptHash would leave it out as
// instructions), so the hash is of the same form over all of them.
func SentOf(added []chat.Message) (Sent, error) {
	h, err := canon.TranscriptHashV2(added, nil, nil)
	return Sent{Count: len(added), Hash: h}, err
}

// Unsent returns the messages of added that the anchor's failed turn did not
// already send: added without its first Sent.Count messages when they are
// exactly the ones that turn sent and something follows them (a client that
// keeps the failed prompt in its history and adds the next one), else added.
func (a Anchor) Unsent(added []chat.Message) []chat.Message {
	n := a.Sent.Count
	if n == 0 || n >= len(added) {
		return added
	}
	if s, err := SentOf(added[:n]); err != nil || s != a.Sent {
		return added
	}
	return added[n:]
}

// Key is the lookup key of an anchor.
type Key struct{ PrincipalID, TranscriptHash string }

// Key returns a's lookup key.
func (a Anchor) Key() Key { return Key{a.PrincipalID, a.TranscriptHash} }

// Bytes is the accounted size of an anchor: a fixed overhead plus every
// variable string it keeps. Stores report the sum in their counts.
func (a Anchor) Bytes() int {
	return anchorOverhead + len(a.PrincipalID) + len(a.WorkspaceID) + len(a.Model) + len(a.ToolsHash) + len(a.InstructionsHash) +
		len(a.TranscriptHash) + len(a.ConversationID) + len(a.ClaimID) + len(a.ClaimSent.Hash) + len(a.Sent.Hash)
}

const anchorOverhead = 160
