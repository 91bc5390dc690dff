// Package ports holds the small outbound interfaces the core needs: the upstream
// chat service, the correlation store, a clock and an id source. ("Ports" here are
// outbound only; the inbound HTTP API is an adapter, see docs/ARCHITECTURE.md.)
//
// Every method documents the stable error codes (package domain/errs) its errors
// may carry; test with errs.Has or errs.CodeOf.
package ports

import (
	"context"
	"time"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/usage"

	"github.com/cockroachdb/errors"
)

// ErrNotSent marks an upstream error that proves the request never reached the
// upstream (for example a refused connection or a body refused before sending).
// Only such errors may return a claimed continuation to PENDING; every other
// failure after a claim is UNCERTAIN.
var ErrNotSent = errors.New("ports: upstream request provably not sent")

// ErrNotAccepted marks an upstream error that proves the request was refused
// before any processing: the upstream answered with a redirect or a 4xx status
// (auth, rate limit, quota, request rejection) instead of a stream. Like
// ErrNotSent it allows a claimed continuation to return to PENDING (no bytes
// were accepted; see docs/CORRELATION.md); a 5xx, a lost connection or any
// failure inside a stream never does.
var ErrNotAccepted = errors.New("ports: upstream request provably not accepted")

// UpstreamRequest is what the core asks the upstream for: a fresh turn, or the
// native continuation of one stored group.
type UpstreamRequest struct {
	Chat chat.Request
	// Continuation is set for a TOOL_RESPONSE turn and nil for a fresh USER_QUERY.
	Continuation *Continuation
	// ConversationID, on a fresh USER_QUERY, continues that upstream
	// conversation (Chat.Messages then holds only the new user messages); empty
	// starts a new one. It comes only from a claimed conversation anchor.
	ConversationID string
	// HistoryMessages, on a continued conversation, is how many leading
	// messages of the client's request are history the upstream already has
	// (not resent), so a refusal can name a message by its index in the
	// request.
	HistoryMessages int
	// Instructions, on a continued conversation, is how many leading
	// messages of Chat.Messages are the request's own instructions (its
	// system prompt, sent again because the conversation began under other
	// ones); they keep their index in the request, and the messages after
	// them follow the HistoryMessages of history.
	Instructions int
	// ConversationLost, on a fresh USER_QUERY: the service lost the upstream
	// conversation that held this history (its anchor was retired), so a
	// refusal says why the whole transcript is sent.
	ConversationLost bool
	// Noted: the caller writes the stream's outcome (OutcomeNoter) in its
	// request's access line, so that the stream's own line of a completed
	// stream is a debug line (OwnLineLevel).
	Noted bool
}

// Continuation is built only from a validated, claimed group record.
type Continuation struct {
	ConversationID  string
	UpstreamGroupID string // empty for a single ungrouped call
	Results         []ContinuationResult
}

// ContinuationResult is one tool result in the group's call order.
type ContinuationResult struct {
	UpstreamCallID string
	OriginalName   string
	Content        string
	// PublicCallID is the tool_call_id the client answered (the gateway's
	// own id, never sent upstream): a refusal of the result names it.
	PublicCallID string
}

// Upstream is the chat service.
type Upstream interface {
	// Chat sends one request and returns its stream. The context reaches the
	// connection: cancelling it closes the upstream request.
	//
	// Errors carry the adapter's upstream_* codes (auth, redirect, rate limit with
	// retry-after, quota, rejection, server error, content type, timeout,
	// unavailable). An error marked ErrNotSent proves nothing was sent; one
	// marked ErrNotAccepted proves the upstream refused it before processing.
	Chat(ctx context.Context, req UpstreamRequest) (Stream, error)
}

// Stream yields decoded upstream events in order.
type Stream interface {
	// Next returns the next event. After a proven end (judged by the
	// completion-outcome machine) it returns io.EOF; a stream that cannot be
	// proven complete returns an error with a stable code such as
	// upstream_completion_ambiguous, upstream_incomplete_stream,
	// upstream_empty_stream, upstream_failure, upstream_model_mismatch,
	// upstream_unverified_event_shape, upstream_timeout or client_cancelled.
	Next(ctx context.Context) (chat.Event, error)
	// Close releases the connection; it is safe to call more than once.
	Close() error
}

// Reservation holds capacity for one group that is about to be admitted.
type Reservation struct {
	ID    string
	Calls int
}

// CorrelationStore keeps group records. Every change goes through Update, whose
// closure runs on a private copy inside one atomic unit (a mutex for memory, one
// transaction for PostgreSQL); the copy is written only when the closure returns
// nil, so a failed machine transition changes nothing.
type CorrelationStore interface {
	// Reserve holds capacity for a group of n calls before any public id is shown.
	// Errors: correlation_capacity_exceeded.
	Reserve(ctx context.Context, calls int, now time.Time) (Reservation, error)
	// CheckRoom reports whether a group of n calls of principalID would be
	// admitted now, by the rules of Reserve (overdue groups are expired first)
	// and of Admit's per-key share, without reserving: a cheap check before a
	// request with tools is sent upstream. Room can still vanish before
	// Reserve and Admit, which decide. Errors: correlation_capacity_exceeded
	// (a *correlation.ShareExceeded when the key is at its share),
	// correlation_store_unavailable.
	CheckRoom(ctx context.Context, principalID string, calls int, now time.Time) error
	// Release gives back an unused reservation. It never fails for an unknown one.
	Release(ctx context.Context, r Reservation) error
	// Admit stores g (state PENDING) under the reservation, when g's principal
	// is below its share (correlation.Limits.Share), decided exactly. Errors:
	// correlation_capacity_exceeded when the reservation is unknown or too
	// small, or a *correlation.ShareExceeded (same code) when the key is at
	// its share; the reservation then stays for the caller to release.
	Admit(ctx context.Context, r Reservation, g correlation.Group) error
	// Resolve maps public ids of one principal to group keys; ids that do not
	// exist for that principal are absent from the map (no error, no leak).
	Resolve(ctx context.Context, principalID string, publicIDs []string) (map[string]string, error)
	// Update runs fn on a copy of the group with key under the store's atomicity,
	// writes the copy back when fn returns no error, and returns fn's decision.
	// Errors: unknown_tool_call when the group does not exist; otherwise
	// whatever fn returned.
	Update(ctx context.Context, key string, fn func(g *correlation.Group) (correlation.Decision, error)) (correlation.Decision, error)
	// Sweep applies time to every group: overdue PENDING → EXPIRED, overdue
	// INFLIGHT → UNCERTAIN, tombstones past the terminal TTL removed.
	Sweep(ctx context.Context, now time.Time) (correlation.SweepReport, error)
	// Counts reports state counts and capacity use.
	Counts(ctx context.Context) (correlation.Counts, error)
	// Pending returns the keys of every PENDING group, sorted. Errors:
	// correlation_store_unavailable.
	Pending(ctx context.Context) ([]string, error)
	// Shared reports whether other gateway processes use the same records. A
	// shared store's pending groups outlive this process (another replica, or
	// this one restarted, continues them); a private store's die with it, so the
	// app cancels them when the process stops.
	Shared() bool
}

// AnchorStore keeps conversation anchors, keyed by (principal, transcript
// hash). Every change goes through Update, whose closure runs on a private copy
// inside one atomic unit (a mutex for memory, one transaction for PostgreSQL);
// the copy is written only when the closure returns nil, and an anchor that
// reaches REMOVED is deleted. Its errors never reach a client: a request that
// cannot use the store starts a fresh conversation.
type AnchorStore interface {
	// Record stores a (ACTIVE) as conversation.Registry.Record does: an older
	// anchor under the same key is superseded, a full store drops its oldest
	// tombstone or ACTIVE anchor, and a claimed anchor is never dropped.
	// Errors: conversation.ErrBusy, conversation.ErrFull, or the store's
	// unavailability (correlation_store_unavailable for PostgreSQL).
	Record(ctx context.Context, a conversation.Anchor, now time.Time) error
	// Update runs fn on a copy of the anchor of (principalID, transcriptHash)
	// and returns fn's decision. Errors: conversation.ErrNoAnchor when there is
	// none; otherwise whatever fn returned, or the store's unavailability.
	Update(ctx context.Context, principalID, transcriptHash string, fn func(a *conversation.Anchor) (conversation.Decision, error)) (conversation.Decision, error)
	// Sweep applies time: overdue ACTIVE → EXPIRED, claims past their
	// deadline → RETIRED, tombstones past the terminal TTL removed.
	Sweep(ctx context.Context, now time.Time) (conversation.SweepReport, error)
	// Counts reports anchors per state and their bytes.
	Counts(ctx context.Context) (conversation.Counts, error)
}

// UsageLedger keeps the owner's budget: one usage.Budget per key slot (the
// counts its limits are enforced on) and the daily usage rows. Every replica
// on a shared store sees the same counts. Nothing in it is content or an
// upstream id.
type UsageLedger interface {
	// Budget runs fn on a copy of the slot's budget (the zero Budget when it
	// has none yet) under the store's atomicity and writes the copy back when
	// fn returns nil: concurrent calls for one slot, on any replica, are
	// serialized, so an admission decided in fn is exact. Errors: whatever fn
	// returned, or correlation_store_unavailable.
	Budget(ctx context.Context, slot string, fn func(b *usage.Budget) error) error
	// Budgets returns every slot's budget as stored (callers apply usage.Budget.At).
	Budgets(ctx context.Context) (map[string]usage.Budget, error)
	// Add adds rows to the daily rows of the same keys (creating them).
	Add(ctx context.Context, rows []usage.Row) error
	// Rows returns the daily rows of the days in [since, until] ("2006-01-02",
	// both included), sorted by day, slot, API, model, strategy and outcome.
	Rows(ctx context.Context, since, until string) ([]usage.Row, error)
	// Sweep deletes the daily rows of days before oldest and returns how many.
	Sweep(ctx context.Context, oldest string) (int, error)
}

// Clock reads the time. Only the app layer calls it; the domain takes time as an argument.
type Clock interface {
	Now() time.Time
}

// IDSource produces unpredictable identifiers from a CSPRNG.
type IDSource interface {
	// PublicToolCallID returns "call_pmn_" + base64url of 24 random bytes.
	PublicToolCallID() (string, error)
	// Token returns a random internal identifier (group keys, dispatch attempts).
	Token() (string, error)
}
