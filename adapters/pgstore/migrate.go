package pgstore

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/redact"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pmgate/pmgate/domain/errs"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// MigrationsTable records the applied schema versions, one row per migration.
const MigrationsTable = "pmgate_schema_migrations"

// migration is one embedded file migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. Versions must
// be 1, 2, 3, … without gaps; a malformed set is a build mistake and panics.
var migrations = func() []migration {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	var ms []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			panic("pgstore: malformed migration file name " + e.Name())
		}
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			panic(err)
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			panic("pgstore: migration versions must be 1, 2, 3, … without gaps")
		}
	}
	return ms
}()

// LatestVersion is the newest schema version this binary knows.
func LatestVersion() int { return len(migrations) }

// migrate brings the schema of the connection's current schema (the first of
// search_path) to LatestVersion in one transaction, under a transaction-scoped
// advisory lock keyed by the schema name: replicas starting together queue on
// the lock, the first applies the migrations, the others find them applied. A
// failure rolls every statement back (PostgreSQL DDL is transactional) and
// releases the lock. It returns the schema version.
func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) (int, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, unavailable(err, "migrate: begin")
	}
	defer rollback(ctx, tx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('pmgate.pgstore.migrate/' || coalesce(current_schema(), ''), 0))`); err != nil {
		return 0, migrationErr(err, "take the migration lock")
	}
	var schema *string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return 0, migrationErr(err, "read current_schema")
	}
	if schema == nil {
		return 0, errs.Newf(errs.ConfigInvalid, "CORRELATION_POSTGRES_URL: no schema of search_path exists in the database")
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+MigrationsTable+` (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return 0, migrationErr(err, "create "+MigrationsTable)
	}
	var current int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+MigrationsTable).Scan(&current); err != nil {
		return 0, migrationErr(err, "read the schema version")
	}
	if current > LatestVersion() {
		return 0, errs.Newf(errs.ConfigInvalid,
			"correlation store: the database schema is at version %d, newer than this binary knows (%d); run a gateway build that knows it",
			redact.SafeInt(current), redact.SafeInt(LatestVersion()))
	}
	for _, m := range migrations[current:] {
		if _, err := tx.Exec(ctx, m.sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			return 0, migrationErr(err, "apply migration "+strconv.Itoa(m.version)+"_"+m.name)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+MigrationsTable+` (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return 0, migrationErr(err, "record migration "+strconv.Itoa(m.version))
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, unavailable(err, "migrate: commit")
	}
	if current < LatestVersion() {
		log.Info("correlation store migrated", "from_version", current, "to_version", LatestVersion(), "schema", *schema)
	}
	return LatestVersion(), nil
}

// migrationErr classifies a failure at start-up: a refusal by the server
// (permissions, a conflicting object) is a configuration problem; a lost or
// refused connection, or a server shutting down or out of connections, is
// unavailability.
func migrationErr(err error, what string) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "53", "57":
		default:
			return errs.Wrap(errors.Wrapf(err, "pgstore: %s", redactSafe(what)), errs.ConfigInvalid)
		}
	}
	return unavailable(err, what)
}
