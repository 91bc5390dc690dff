package pgstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"

	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// Anchors is the ports.AnchorStore on PostgreSQL: the conversation anchors of
// every replica in one table, so that a conversation started through one
// replica continues through another. It shares the Store's connection pool
// and schema (migration 2). Each method is one transaction and behaves as
// conversation.Registry does for one process:
//
//   - Update locks the anchor row (SELECT … FOR UPDATE), runs the closure on
//     a copy and writes it back in the same transaction; of concurrent
//     lookups of one anchor, on any replicas, exactly one sees ACTIVE and
//     claims it.
//   - Record locks the accounting row, supersedes an anchor of the same key
//     (never a claimed one), and while full drops the anchor that became a
//     tombstone first, else the one that became ACTIVE first (an index scan;
//     never a CLAIMED or RESUMING one), then inserts — the order of conversation.Registry.
//   - Sweep takes due rows FOR UPDATE SKIP LOCKED, so replicas sweeping at
//     once never apply a time event twice.
//
// Errors other than the closure's carry correlation_store_unavailable; the
// gateway then starts a fresh conversation.
type Anchors struct {
	s      *Store
	limits conversation.Limits
	policy conversation.Policy
}

var _ ports.AnchorStore = (*Anchors)(nil)

// Anchors returns the anchor store on s's database.
func (s *Store) Anchors(l conversation.Limits, p conversation.Policy) *Anchors {
	return &Anchors{s: s, limits: l, policy: p}
}

// anchorRecordVersion is the version of the anchor record encoding: JSON of
// every field of conversation.Anchor under "v":1. A record of another version
// is refused, never guessed at.
const anchorRecordVersion = 1

type anchorRecord struct {
	V int                 `json:"v"`
	A conversation.Anchor `json:"a"`
}

func encodeAnchor(a conversation.Anchor) []byte {
	b, err := json.Marshal(anchorRecord{V: anchorRecordVersion, A: a})
	if err != nil {
		panic(err) // strings and times only: cannot fail
	}
	return b
}

func decodeAnchor(b []byte) (conversation.Anchor, error) {
	var r anchorRecord
	if err := json.Unmarshal(b, &r); err != nil || r.V != anchorRecordVersion {
		return conversation.Anchor{}, errs.Wrap(errors.New("pgstore: undecodable anchor record"), errs.CorrelationStoreUnavailable)
	}
	return r.A, nil
}

func anchorDue(a conversation.Anchor) *time.Time {
	var t time.Time
	switch {
	case a.State == conversation.Active:
		t = a.ExpiresAt
	case a.State == conversation.Claimed, a.State == conversation.Resuming:
		t = a.ClaimExpiresAt
	case a.State.Terminal():
		t = a.TerminalExpiresAt
	}
	if t.IsZero() {
		return nil
	}
	return &t
}

// lockAnchor reads and locks the anchor of key in tx; ok is false when there is none.
func lockAnchor(ctx context.Context, tx pgx.Tx, k conversation.Key) (conversation.Anchor, bool, error) {
	var rec []byte
	err := tx.QueryRow(ctx, `SELECT record FROM conversation_anchors WHERE principal_id = $1 AND transcript_hash = $2 FOR UPDATE`,
		k.PrincipalID, k.TranscriptHash).Scan(&rec)
	if errors.Is(err, pgx.ErrNoRows) {
		return conversation.Anchor{}, false, nil
	}
	if err != nil {
		return conversation.Anchor{}, false, dbErr(err, "lock anchor")
	}
	a, err := decodeAnchor(rec)
	return a, err == nil, err
}

// writeAnchor writes nw over old (same key): deleted when REMOVED.
func writeAnchor(ctx context.Context, tx pgx.Tx, old, nw conversation.Anchor) error {
	if nw.Key() != old.Key() {
		return errors.AssertionFailedf("conversation: update changed an anchor's key")
	}
	var err error
	if nw.State == conversation.Removed {
		_, err = tx.Exec(ctx, `WITH del AS (DELETE FROM conversation_anchors WHERE principal_id = $1 AND transcript_hash = $2 RETURNING bytes)
			UPDATE conversation_usage SET anchors = anchors - (SELECT count(*) FROM del), bytes = bytes - coalesce((SELECT sum(bytes) FROM del), 0) WHERE id`,
			old.PrincipalID, old.TranscriptHash)
	} else {
		// An anchor whose state changes enters the back of its new class.
		_, err = tx.Exec(ctx, `WITH upd AS (UPDATE conversation_anchors SET state = $3, due_at = $4, bytes = $5, record = $6,
					seq = CASE WHEN state = $3 THEN seq ELSE nextval('conversation_anchor_seq') END
				WHERE principal_id = $1 AND transcript_hash = $2 RETURNING 1)
			UPDATE conversation_usage SET bytes = bytes + $7 WHERE id AND EXISTS (SELECT 1 FROM upd)`,
			nw.PrincipalID, nw.TranscriptHash, string(nw.State), anchorDue(nw), nw.Bytes(), encodeAnchor(nw), nw.Bytes()-old.Bytes())
	}
	if err != nil {
		return dbErr(err, "write anchor")
	}
	return nil
}

// Update implements ports.AnchorStore.
func (s *Anchors) Update(ctx context.Context, principalID, transcriptHash string, fn func(a *conversation.Anchor) (conversation.Decision, error)) (conversation.Decision, error) {
	var d conversation.Decision // fn's, once the transaction holding it commits
	err := s.s.inTx(ctx, "anchor update", pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		cur, ok, err := lockAnchor(ctx, tx, conversation.Key{PrincipalID: principalID, TranscriptHash: transcriptHash})
		if err != nil {
			return err
		}
		if !ok {
			return errors.Mark(errors.New("conversation: no anchor"), conversation.ErrNoAnchor)
		}
		cp := cur
		if d, err = fn(&cp); err != nil {
			return err
		}
		return writeAnchor(ctx, tx, cur, cp)
	})
	if err != nil {
		return conversation.Decision{}, err
	}
	return d, nil
}

// Record implements ports.AnchorStore.
func (s *Anchors) Record(ctx context.Context, a conversation.Anchor, now time.Time) error {
	if a.State != conversation.Active || a.PrincipalID == "" || a.TranscriptHash == "" || a.ConversationID == "" {
		return errors.AssertionFailedf("conversation: a recorded anchor must be ACTIVE, keyed and carry a conversation id")
	}
	return s.s.inTx(ctx, "anchor record", pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		var count int
		if err := tx.QueryRow(ctx, `SELECT anchors FROM conversation_usage WHERE id FOR UPDATE`).Scan(&count); err != nil {
			return dbErr(err, "lock anchor usage")
		}
		old, ok, err := lockAnchor(ctx, tx, a.Key())
		if err != nil {
			return err
		}
		if ok {
			cp := old
			d, err := cp.Drop(now, s.policy)
			if err != nil {
				return err
			}
			if d.Effect == conversation.EffectKeep {
				return errors.Mark(errors.New("conversation: anchor claimed"), conversation.ErrBusy)
			}
			if err := writeAnchor(ctx, tx, old, cp); err != nil {
				return err
			}
			count--
		}
		for count >= s.limits.MaxAnchors {
			var rec []byte
			// The rule of conversation.Registry.Record: the principal
			// holding the most droppable anchors gives way (the recording one
			// on a tie, else the smallest id), its oldest tombstone first.
			err := tx.QueryRow(ctx, `WITH owner AS (
					SELECT principal_id FROM conversation_anchors WHERE state NOT IN ('CLAIMED', 'RESUMING')
					GROUP BY principal_id ORDER BY count(*) DESC, (principal_id = $1) DESC, principal_id LIMIT 1)
				SELECT record FROM conversation_anchors WHERE state NOT IN ('CLAIMED', 'RESUMING') AND principal_id = (SELECT principal_id FROM owner)
				ORDER BY (state = 'ACTIVE'), seq LIMIT 1 FOR UPDATE SKIP LOCKED`, a.PrincipalID).Scan(&rec)
			if errors.Is(err, pgx.ErrNoRows) {
				return errors.Mark(errors.New("conversation: full"), conversation.ErrFull)
			}
			if err != nil {
				return dbErr(err, "choose an anchor to drop")
			}
			v, err := decodeAnchor(rec)
			if err != nil {
				return err
			}
			cp := v
			if _, err := cp.Drop(now, s.policy); err != nil {
				return err
			}
			if err := writeAnchor(ctx, tx, v, cp); err != nil {
				return err
			}
			count--
		}
		if _, err := tx.Exec(ctx, `WITH ins AS (INSERT INTO conversation_anchors (principal_id, transcript_hash, state, created_at, due_at, bytes, record, seq)
				VALUES ($1, $2, $3, $4, $5, $6, $7, nextval('conversation_anchor_seq')) RETURNING bytes)
			UPDATE conversation_usage SET anchors = anchors + 1, bytes = bytes + (SELECT bytes FROM ins) WHERE id`,
			a.PrincipalID, a.TranscriptHash, string(a.State), a.CreatedAt, anchorDue(a), a.Bytes(), encodeAnchor(a)); err != nil {
			return dbErr(err, "insert anchor")
		}
		return nil
	})
}

// sweep applies time to due anchors in tx, batch by batch, skipping rows
// other transactions hold.
func (s *Anchors) sweep(ctx context.Context, tx pgx.Tx, now time.Time) (conversation.SweepReport, error) {
	var rep conversation.SweepReport
	for {
		rows, err := tx.Query(ctx, `SELECT record FROM conversation_anchors WHERE due_at <= $1
			ORDER BY principal_id, transcript_hash LIMIT $2 FOR UPDATE SKIP LOCKED`, now, sweepBatch)
		if err != nil {
			return rep, dbErr(err, "select due anchors")
		}
		var recs [][]byte
		for rows.Next() {
			var rec []byte
			if err := rows.Scan(&rec); err != nil {
				rows.Close()
				return rep, dbErr(err, "read due anchor")
			}
			recs = append(recs, rec)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return rep, dbErr(err, "read due anchors")
		}
		changed := 0
		for _, rec := range recs {
			cur, err := decodeAnchor(rec)
			if err != nil {
				return rep, err
			}
			cp := cur
			d, ok, err := cp.Tick(now, s.policy)
			if err != nil || !ok {
				continue // not due at nanosecond precision, or mis-wired: leave it
			}
			if err := writeAnchor(ctx, tx, cur, cp); err != nil {
				return rep, err
			}
			rep.Add(d)
			changed++
		}
		if len(recs) < sweepBatch || changed == 0 {
			return rep, nil
		}
	}
}

// Sweep implements ports.AnchorStore.
func (s *Anchors) Sweep(ctx context.Context, now time.Time) (conversation.SweepReport, error) {
	var rep conversation.SweepReport
	err := s.s.inTx(ctx, "anchor sweep", pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		rep, err = s.sweep(ctx, tx, now)
		return err
	})
	if err != nil {
		return conversation.SweepReport{}, err
	}
	return rep, nil
}

// Counts implements ports.AnchorStore.
func (s *Anchors) Counts(ctx context.Context) (conversation.Counts, error) {
	c := conversation.Counts{ByState: map[conversation.State]int{}, MaxAnchors: s.limits.MaxAnchors}
	ctx, cancel := s.s.opContext(ctx)
	defer cancel()
	rows, err := s.s.pool.Query(ctx, `SELECT state, count(*), coalesce(sum(bytes), 0) FROM conversation_anchors GROUP BY state`)
	if err != nil {
		return c, unavailable(err, "anchor counts")
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n, b int
		if err := rows.Scan(&st, &n, &b); err != nil {
			return c, unavailable(err, "anchor counts")
		}
		c.ByState[conversation.State(st)] = n
		c.Anchors += n
		c.Bytes += b
	}
	if err := rows.Err(); err != nil {
		return c, unavailable(err, "anchor counts")
	}
	return c, nil
}
