package pgstore

// Pipelines: several statements sent in one round trip.

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// stmt is one statement of a pipeline.
type stmt struct {
	sql  string
	args []any
}

// execer runs one statement now (a transaction or a connection in one).
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// batcher sends a pipeline (a transaction or a connection in one).
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// sendAll sends stmts as one pipeline (one round trip) and checks every
// result; a COMMIT must report COMMIT (PostgreSQL answers a COMMIT of a
// failed transaction with ROLLBACK).
func sendAll(ctx context.Context, conn batcher, stmts []stmt) error {
	if len(stmts) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, st := range stmts {
		b.Queue(st.sql, st.args...)
	}
	br := conn.SendBatch(ctx, b)
	var err error
	for _, st := range stmts {
		var tag pgconn.CommandTag
		if tag, err = br.Exec(); err != nil {
			break
		}
		if st.sql == `COMMIT` && tag.String() != `COMMIT` {
			err = errors.New("pgstore: the transaction was rolled back at commit")
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}
