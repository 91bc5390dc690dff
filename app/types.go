// Package app holds pmgate's use cases: a chat turn (fresh or the native
// continuation of a tool-call group), wired from the ports. It has no HTTP and
// no wire formats; the ingress adapter renders what it returns.
package app

import (
	"context"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/usage"
)

// Principal is the authenticated caller: the credential slot that matched and
// the principal id derived from it (docs/CORRELATION.md).
type Principal struct {
	Slot string // server-side name of the matched API key slot, e.g. "default"
	ID   string // HMAC(principal key, slot), base64url
	// Limits are the slot's own rate limit and quotas (WithUsage enforces them).
	Limits usage.Limits
}

// FinishReason is the OpenAI finish_reason of a proven end.
type FinishReason string

// Finish reasons.
const (
	FinishStop      FinishReason = "stop"
	FinishToolCalls FinishReason = "tool_calls"
)

// ToolCallDelta is one client-facing tool-call fragment: ID and Name are set on
// the first delta of a call only; Arguments fragments concatenate byte-for-byte
// to the upstream argument string. Index is present on every delta.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// Delta is one step of a turn as the client sees it. Exactly one of Text,
// ToolCall is set on content deltas; the final delta carries Finish (and Usage
// when the upstream reported token counts). Delta is no stored format: the
// cached answer of a consumed group has its own versioned one (replay.go).
type Delta struct {
	Text     string
	ToolCall *ToolCallDelta
	Finish   FinishReason
	Usage    *chat.Usage
}

// Turn streams the deltas of one chat turn.
type Turn interface {
	// Next returns the next delta. After the delta with Finish set it returns
	// io.EOF. Any other error ends the turn with a stable code (package errs):
	// no finish was proven and none may be shown. A replayed continuation
	// returns its cached deltas.
	Next(ctx context.Context) (Delta, error)
	// Close releases the upstream; safe to call more than once.
	Close()
}

// TryTurn is implemented by a turn that can tell when its next delta is not
// at hand yet: TryNext returns what Next would (ok true) when that needs no
// wait for the upstream, and ok false, having waited for nothing, when Next
// would wait. The ingress writes what it holds between the two: what arrived
// in one upstream read then reaches the client in one write, and an event
// followed by silence is written before the silence. A turn that is not a
// TryTurn never waits for the upstream (a replayed answer).
type TryTurn interface {
	Turn
	TryNext(ctx context.Context) (d Delta, ok bool, err error)
}

// ChatService is what the ingress needs from the app.
type ChatService interface {
	// Chat starts one turn for an authenticated principal and a fully
	// validated, normalized request. Errors before any delta carry a stable
	// code; nothing reached the upstream unless the code says so. What the
	// request did comes back with it, for the caller's access line and
	// ledger: the turn's Summary once it was closed (Summarized), or the
	// refusal's (SummaryOf); the caller writes its notes. rep describes a
	// request a client may send again (an SDK's retry count, an
	// Idempotency-Key), or is nil.
	Chat(ctx context.Context, p Principal, req chat.Request, rep *Repeat) (Turn, error)
}
