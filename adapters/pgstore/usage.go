package pgstore

import (
	"context"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports"
)

// Usage is the ports.UsageLedger on PostgreSQL (migration 3), sharing the
// Store's pool: every replica admits against the same budget rows and adds
// to the same daily rows.
//
//   - Budget locks the slot's row (SELECT … FOR UPDATE; the row is created
//     on the slot's first admission), runs the closure (the domain's budget
//     rule) on a copy and writes it back in the same transaction, so the
//     admissions of one slot are serialized across replicas and a quota is
//     never exceeded. The closure's decision needs the slot's exact counts,
//     so nothing is striped here; what is kept short is the lock's hold (one
//     round trip and the commit).
//   - Add upserts each row, adding to the counts (INSERT … ON CONFLICT DO
//     UPDATE), one statement per row in one transaction.
//
// Errors other than the closure's carry correlation_store_unavailable.
type Usage struct{ s *Store }

var _ ports.UsageLedger = (*Usage)(nil)

// Usage returns the usage ledger on s's database.
func (s *Store) Usage() *Usage { return &Usage{s: s} }

const budgetColumns = `day, day_dispatches, month, month_dispatches, tokens, tokens_at`

func scanBudget(row pgx.Row) (usage.Budget, error) {
	var b usage.Budget
	var day, month, at *time.Time
	var dayN, monN int64
	if err := row.Scan(&day, &dayN, &month, &monN, &b.Tokens, &at); err != nil {
		return usage.Budget{}, err
	}
	if day != nil {
		b.Day = usage.Day(*day)
	}
	if month != nil {
		b.Month = usage.Month(*month)
	}
	if at != nil {
		b.TokensAt = at.UTC()
	}
	b.DayDispatches, b.MonthDispatches = int(dayN), int(monN)
	return b, nil
}

// dateOf is the date column of a "2006-01-02" day or "2006-01" month (its
// first day); NULL for "".
func dateOf(s string) any {
	if s == "" {
		return nil
	}
	if len(s) == len("2006-01") {
		s += "-01"
	}
	return s
}

func timeOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// Budget implements ports.UsageLedger: two round trips, BEGIN and the
// locking SELECT in one pipeline, the write and COMMIT in the other (a slot's
// first admission inserts its row in between). The row's lock is held for one
// round trip and the commit: the admissions of one slot are serialized, by
// design (its counts decide exactly), and of different slots never.
//
// A transaction left open by any failure is never reused: the pool closes a
// connection released inside a transaction, and the server rolls it back.
func (u *Usage) Budget(ctx context.Context, slot string, fn func(b *usage.Budget) error) error {
	s := u.s
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	conn, cur, err := u.lockBudget(ctx, slot)
	if conn != nil {
		defer conn.Release() // destroys the connection when a transaction is still open
	}
	if err != nil {
		return dbErr(err, "lock usage budget")
	}
	cp := cur
	if err := fn(&cp); err != nil {
		s.abort(ctx, conn.Conn())
		return err
	}
	stmts := []stmt{{sql: `COMMIT`}}
	if cp != cur {
		stmts = append([]stmt{{sql: `UPDATE usage_budgets SET day = $2, day_dispatches = $3, month = $4, month_dispatches = $5,
			tokens = $6, tokens_at = $7 WHERE slot = $1`,
			args: []any{slot, dateOf(cp.Day), cp.DayDispatches, dateOf(cp.Month), cp.MonthDispatches, cp.Tokens, timeOrNull(cp.TokensAt)}}}, stmts...)
	}
	if err := sendAll(ctx, conn.Conn(), stmts); err != nil {
		return dbErr(err, "write usage budget")
	}
	return nil
}

const lockBudget = `SELECT ` + budgetColumns + ` FROM usage_budgets WHERE slot = $1 FOR UPDATE`

// lockBudget begins a transaction on a pooled connection and locks the slot's
// row, in one round trip, creating the row first when the slot has none. A
// failure that proves nothing was sent (a stale pooled connection after a
// database restart) is retried once on another connection. The caller
// releases conn (nil only when err is set).
func (u *Usage) lockBudget(ctx context.Context, slot string) (*pgxpool.Conn, usage.Budget, error) {
	for attempt := 0; ; attempt++ {
		conn, err := u.s.pool.Acquire(ctx)
		if err != nil {
			return nil, usage.Budget{}, err
		}
		b := &pgx.Batch{}
		b.Queue(`BEGIN`)
		b.Queue(lockBudget, slot)
		br := conn.SendBatch(ctx, b)
		var cur usage.Budget
		_, err = br.Exec()
		if err == nil {
			cur, err = scanBudget(br.QueryRow())
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if errors.Is(err, pgx.ErrNoRows) { // the slot's first admission, in the same transaction
			if _, err = conn.Exec(ctx, `INSERT INTO usage_budgets (slot) VALUES ($1) ON CONFLICT DO NOTHING`, slot); err == nil {
				cur, err = scanBudget(conn.QueryRow(ctx, lockBudget, slot))
			}
		}
		if err == nil || attempt > 0 || !pgconn.SafeToRetry(err) || ctx.Err() != nil {
			return conn, cur, err
		}
		conn.Release()
	}
}

// Budgets implements ports.UsageLedger.
func (u *Usage) Budgets(ctx context.Context) (map[string]usage.Budget, error) {
	out := map[string]usage.Budget{}
	err := u.s.inTx(ctx, "usage budgets", pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT slot, `+budgetColumns+` FROM usage_budgets`)
		if err != nil {
			return dbErr(err, "read usage budgets")
		}
		defer rows.Close()
		for rows.Next() {
			var slot string
			var day, month, at *time.Time
			var dayN, monN int64
			var b usage.Budget
			if err := rows.Scan(&slot, &day, &dayN, &month, &monN, &b.Tokens, &at); err != nil {
				return dbErr(err, "read usage budgets")
			}
			if day != nil {
				b.Day = usage.Day(*day)
			}
			if month != nil {
				b.Month = usage.Month(*month)
			}
			if at != nil {
				b.TokensAt = at.UTC()
			}
			b.DayDispatches, b.MonthDispatches = int(dayN), int(monN)
			out[slot] = b
		}
		if err := rows.Err(); err != nil {
			return dbErr(err, "read usage budgets")
		}
		return nil
	})
	return out, err
}

// Add implements ports.UsageLedger.
func (u *Usage) Add(ctx context.Context, rows []usage.Row) error {
	if len(rows) == 0 {
		return nil
	}
	return u.s.inTx(ctx, "usage add", pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, r := range rows {
			b.Queue(`INSERT INTO usage_daily (day, slot, api, model, strategy, outcome, requests, dispatches, query_chars, output_chars,
					reported_requests, reported_prompt_tokens, reported_completion_tokens, estimated_input_tokens, estimated_output_tokens, duration_ms)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
				ON CONFLICT (day, slot, api, model, strategy, outcome) DO UPDATE SET
					requests = usage_daily.requests + EXCLUDED.requests,
					dispatches = usage_daily.dispatches + EXCLUDED.dispatches,
					query_chars = usage_daily.query_chars + EXCLUDED.query_chars,
					output_chars = usage_daily.output_chars + EXCLUDED.output_chars,
					reported_requests = usage_daily.reported_requests + EXCLUDED.reported_requests,
					reported_prompt_tokens = usage_daily.reported_prompt_tokens + EXCLUDED.reported_prompt_tokens,
					reported_completion_tokens = usage_daily.reported_completion_tokens + EXCLUDED.reported_completion_tokens,
					estimated_input_tokens = usage_daily.estimated_input_tokens + EXCLUDED.estimated_input_tokens,
					estimated_output_tokens = usage_daily.estimated_output_tokens + EXCLUDED.estimated_output_tokens,
					duration_ms = usage_daily.duration_ms + EXCLUDED.duration_ms`,
				r.Day, r.Slot, r.API, r.Model, r.Strategy, r.Outcome, r.Requests, r.Dispatches, r.QueryChars, r.OutputChars,
				r.ReportedRequests, r.ReportedPromptTokens, r.ReportedCompletionTokens, r.EstimatedInputTokens, r.EstimatedOutputTokens, r.DurationMS)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return dbErr(err, "add usage rows")
		}
		return nil
	})
}

// Rows implements ports.UsageLedger.
func (u *Usage) Rows(ctx context.Context, since, until string) ([]usage.Row, error) {
	var out []usage.Row
	err := u.s.inTx(ctx, "usage rows", pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT day, slot, api, model, strategy, outcome, requests, dispatches, query_chars, output_chars,
				reported_requests, reported_prompt_tokens, reported_completion_tokens, estimated_input_tokens, estimated_output_tokens, duration_ms
			FROM usage_daily WHERE day BETWEEN $1 AND $2 ORDER BY day, slot COLLATE "C", api COLLATE "C", model COLLATE "C",
				strategy COLLATE "C", outcome COLLATE "C"`, since, until)
		if err != nil {
			return dbErr(err, "read usage rows")
		}
		defer rows.Close()
		for rows.Next() {
			var r usage.Row
			var day time.Time
			if err := rows.Scan(&day, &r.Slot, &r.API, &r.Model, &r.Strategy, &r.Outcome, &r.Requests, &r.Dispatches, &r.QueryChars,
				&r.OutputChars, &r.ReportedRequests, &r.ReportedPromptTokens, &r.ReportedCompletionTokens, &r.EstimatedInputTokens,
				&r.EstimatedOutputTokens, &r.DurationMS); err != nil {
				return dbErr(err, "read usage rows")
			}
			r.Day = usage.Day(day)
			out = append(out, r)
		}
		if err := rows.Err(); err != nil {
			return dbErr(err, "read usage rows")
		}
		return nil
	})
	return out, err
}

// Sweep implements ports.UsageLedger.
func (u *Usage) Sweep(ctx context.Context, oldest string) (int, error) {
	var n int64
	err := u.s.inTx(ctx, "usage sweep", pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM usage_daily WHERE day < $1`, oldest)
		if err != nil {
			return dbErr(err, "sweep usage rows")
		}
		n = tag.RowsAffected()
		return nil
	})
	return int(n), err
}
