package pgstore

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"

	"github.com/pmgate/pmgate/ports"
)

// Attempts is the ports.AttemptStore on PostgreSQL (migration 10), sharing
// the Store's pool: a request recorded on one replica is seen by its retry on
// any other. Every write locks the one budget row first, so writes of
// attempts are serialized across replicas and the byte budget is exact; a
// read takes no lock. Expired rows are never returned; they are deleted, and
// their bytes given back, when a write would not fit otherwise (the sweep of
// the expires index) or when their key is written again.
type Attempts struct {
	s   *Store
	max int64
}

var _ ports.AttemptStore = (*Attempts)(nil)

// Attempts returns the attempt store on s's database whose records take at
// most maxBytes.
func (s *Store) Attempts(maxBytes int64) *Attempts { return &Attempts{s: s, max: maxBytes} }

const attemptColumns = `key, body_hash, token, done, awaited, code, answer, deadline, expires`

func scanAttempt(row pgx.Row) (ports.Attempt, error) {
	var a ports.Attempt
	if err := row.Scan(&a.Key, &a.BodyHash, &a.Token, &a.Done, &a.Awaited, &a.Code, &a.Answer, &a.Deadline, &a.Expires); err != nil {
		return ports.Attempt{}, err
	}
	a.Deadline, a.Expires = a.Deadline.UTC(), a.Expires.UTC()
	return a, nil
}

// budget locks the budget row and returns its bytes.
func budget(ctx context.Context, tx pgx.Tx) (int64, error) {
	var n int64
	err := tx.QueryRow(ctx, `SELECT bytes FROM attempt_budget WHERE id = 1 FOR UPDATE`).Scan(&n)
	return n, err
}

// fit reports whether n more bytes fit next to used, deleting the expired
// rows first when they would not; it returns the bytes in use after.
func (s *Attempts) fit(ctx context.Context, tx pgx.Tx, used, n int64, now time.Time) (int64, bool, error) {
	if used+n <= s.max {
		return used, true, nil
	}
	var freed int64
	err := tx.QueryRow(ctx, `WITH d AS (DELETE FROM attempts WHERE expires <= $1 RETURNING size) SELECT coalesce(sum(size), 0) FROM d`, now).Scan(&freed)
	if err != nil {
		return used, false, err
	}
	used -= freed
	return used, used+n <= s.max, nil
}

func setBudget(ctx context.Context, tx pgx.Tx, used int64) error {
	_, err := tx.Exec(ctx, `UPDATE attempt_budget SET bytes = $1 WHERE id = 1`, used)
	return err
}

// Begin implements ports.AttemptStore.
func (s *Attempts) Begin(ctx context.Context, a ports.Attempt, replaceDone bool, now time.Time) (ports.Attempt, bool, error) {
	a.Done, a.Code, a.Answer, a.Awaited = false, "", nil, false
	var got ports.Attempt
	began := false
	err := s.s.inTx(ctx, "begin attempt", pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		used, err := budget(ctx, tx)
		if err != nil {
			return dbErr(err, "lock attempt budget")
		}
		old, err := scanAttempt(tx.QueryRow(ctx, `SELECT `+attemptColumns+` FROM attempts WHERE key = $1`, a.Key))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return dbErr(err, "read attempt")
		case old.Expires.After(now) && (!old.Done || !replaceDone):
			got = old
			return nil
		default: // expired, or a finished record replaced
			var size int64
			if err := tx.QueryRow(ctx, `DELETE FROM attempts WHERE key = $1 RETURNING size`, a.Key).Scan(&size); err != nil {
				return dbErr(err, "replace attempt")
			}
			used -= size
		}
		used, ok, err := s.fit(ctx, tx, used, a.Size(), now)
		if err != nil {
			return dbErr(err, "sweep attempts")
		}
		if !ok {
			return ports.ErrAttemptsFull
		}
		if _, err := tx.Exec(ctx, `INSERT INTO attempts (key, body_hash, token, deadline, expires, size) VALUES ($1, $2, $3, $4, $5, $6)`,
			a.Key, a.BodyHash, a.Token, a.Deadline, a.Expires, a.Size()); err != nil {
			return dbErr(err, "insert attempt")
		}
		if err := setBudget(ctx, tx, used+a.Size()); err != nil {
			return dbErr(err, "write attempt budget")
		}
		got, began = a, true
		return nil
	})
	if err != nil {
		return ports.Attempt{}, false, err
	}
	return got, began, nil
}

// Get implements ports.AttemptStore.
func (s *Attempts) Get(ctx context.Context, key string, now time.Time) (ports.Attempt, bool, error) {
	ctx, cancel := s.s.opContext(ctx)
	defer cancel()
	a, err := scanAttempt(s.s.pool.QueryRow(ctx, `SELECT `+attemptColumns+` FROM attempts WHERE key = $1 AND expires > $2`, key, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return ports.Attempt{}, false, nil
	}
	if err != nil {
		return ports.Attempt{}, false, dbErr(err, "read attempt")
	}
	return a, true, nil
}

// Finish implements ports.AttemptStore.
func (s *Attempts) Finish(ctx context.Context, key, token, code string, answer []byte, expires, now time.Time) error {
	return s.s.inTx(ctx, "finish attempt", pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		used, err := budget(ctx, tx)
		if err != nil {
			return dbErr(err, "lock attempt budget")
		}
		a, err := scanAttempt(tx.QueryRow(ctx, `SELECT `+attemptColumns+` FROM attempts WHERE key = $1 AND token = $2 AND NOT done`, key, token))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return dbErr(err, "read attempt")
		}
		used -= a.Size()
		a.Done, a.Code, a.Expires, a.Answer = true, code, expires, nil
		if answer != nil {
			var ok bool
			if used, ok, err = s.fit(ctx, tx, used, a.Size()+int64(len(answer)), now); err != nil {
				return dbErr(err, "sweep attempts")
			} else if ok {
				a.Answer = answer
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE attempts SET done = true, code = $2, answer = $3, expires = $4, size = $5 WHERE key = $1`,
			key, a.Code, a.Answer, a.Expires, a.Size()); err != nil {
			return dbErr(err, "finish attempt")
		}
		if err := setBudget(ctx, tx, used+a.Size()); err != nil {
			return dbErr(err, "write attempt budget")
		}
		return nil
	})
}

// Abandon implements ports.AttemptStore.
func (s *Attempts) Abandon(ctx context.Context, key, token string) error {
	return s.s.inTx(ctx, "abandon attempt", pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		used, err := budget(ctx, tx)
		if err != nil {
			return dbErr(err, "lock attempt budget")
		}
		var size int64
		err = tx.QueryRow(ctx, `DELETE FROM attempts WHERE key = $1 AND token = $2 AND NOT done RETURNING size`, key, token).Scan(&size)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return dbErr(err, "abandon attempt")
		}
		if err := setBudget(ctx, tx, used-size); err != nil {
			return dbErr(err, "write attempt budget")
		}
		return nil
	})
}

// Await implements ports.AttemptStore: one statement, no budget change.
func (s *Attempts) Await(ctx context.Context, key, token string) error {
	ctx, cancel := s.s.opContext(ctx)
	defer cancel()
	if _, err := s.s.pool.Exec(ctx, `UPDATE attempts SET awaited = true WHERE key = $1 AND token = $2 AND NOT done`, key, token); err != nil {
		return dbErr(err, "await attempt")
	}
	return nil
}
