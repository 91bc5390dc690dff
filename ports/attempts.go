package ports

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"
)

// An Attempt is the record of one fresh request that a client may send again
// (an SDK's automatic retry, or an explicit Idempotency-Key): while it is
// being answered, and for a bounded time after, a repeat of it gets its
// outcome instead of a second upstream dispatch (docs/USAGE.md, "Retries
// never spend twice"). The app owns what the fields mean and the answer's
// format; a store keeps them opaque and decides nothing but room and expiry.
type Attempt struct {
	// Key names the request: a hash of the principal, the route and either
	// the body or the client's idempotency key. Records of other principals
	// can never share it.
	Key string
	// BodyHash is the hash of the request's body (an explicit key's record
	// is checked against it).
	BodyHash string
	// Token is the id of the attempt that owns the record: only it may
	// finish or abandon it.
	Token string
	// Done is false while the owning attempt is being answered.
	Done bool
	// Code is the stable code of a failed outcome; empty for a success.
	Code string
	// Answer is the recorded answer of a success; nil when it was not kept
	// (over the byte budget) or for a failure.
	Answer []byte
	// Awaited is set once a repeat waits for the attempt in flight: its
	// owner then reads it to its end even when its own client went away.
	Awaited bool
	// Deadline is when an attempt in flight must have finished: past it,
	// its owner is gone and the outcome is unknown.
	Deadline time.Time
	// Expires is when the record is forgotten.
	Expires time.Time
}

// Size is what a record counts against a store's byte budget: its answer and
// its strings plus a fixed overhead, so that records without an answer are
// bounded too.
func (a Attempt) Size() int64 {
	return int64(len(a.Key)+len(a.BodyHash)+len(a.Token)+len(a.Code)+len(a.Answer)) + AttemptOverhead
}

// AttemptOverhead is the fixed part of a record's Size.
const AttemptOverhead = 128

// ErrAttemptsFull is Begin's answer when a new record would not fit the
// byte budget: the request goes on unrecorded.
var ErrAttemptsFull = errors.New("ports: attempt store full")

// AttemptStore keeps the attempt records, bounded by a byte budget (Size),
// across replicas when shared. Expired records (Expires at or before now)
// are never returned and free their room. Errors other than ErrAttemptsFull
// carry correlation_store_unavailable.
type AttemptStore interface {
	// Begin records a in flight unless a live record holds its key: then it
	// returns that record and false. With replaceDone, a finished record is
	// replaced (a new question that happens to be identical); a record in
	// flight never is.
	Begin(ctx context.Context, a Attempt, replaceDone bool, now time.Time) (Attempt, bool, error)
	// Get returns the live record of key.
	Get(ctx context.Context, key string, now time.Time) (Attempt, bool, error)
	// Finish records the outcome of the attempt token owns: code (empty for
	// a success) and answer, kept until expires. An answer that does not fit
	// the budget is dropped and the record kept without it. A record token
	// no longer owns is left alone.
	Finish(ctx context.Context, key, token, code string, answer []byte, expires, now time.Time) error
	// Abandon removes the record token owns (its attempt dispatched nothing).
	Abandon(ctx context.Context, key, token string) error
	// Await marks the record token owns, while in flight, as awaited by a
	// repeat.
	Await(ctx context.Context, key, token string) error
}
