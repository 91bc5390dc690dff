// Package pgstore is the shared correlation store on PostgreSQL: the
// ports.CorrelationStore of several gateway replicas, so that a tool call
// issued through one replica can be continued through another and a
// continuation is still dispatched upstream at most once.
//
// # Semantics
//
// Every method behaves as correlation.Registry (the pure reference model) does
// for one process, with PostgreSQL transactions in place of the memory store's
// mutex:
//
//   - Update reads the group row with SELECT … FOR UPDATE, decodes the record,
//     runs the closure on a copy and writes the copy back in the same
//     transaction only when the closure returns nil. The row lock makes the
//     PENDING→INFLIGHT claim atomic across processes: of any number of
//     concurrent claims, on any replicas, one sees PENDING and wins; the others
//     wait for its commit and see INFLIGHT.
//   - Capacity (live groups and calls, reservations and the stripes' and
//     replicas' leases included) and the cached response budget are kept in
//     one accounting row, changed in the same transaction as the groups; a
//     reservation far from the limits is made in the replica's memory against
//     a lease row of its own, which its admission decrements (see leases); a
//     lease is refilled from a stripe or under the row's lock, and near the
//     limits a reservation locks the row, every stripe and every lease row,
//     so admission decisions of all replicas are exact (see Reserve).
//     Capacity given back goes to a lease (see usageStmt).
//   - Sweep selects due rows with FOR UPDATE SKIP LOCKED and moves each
//     through the domain machine (Group.Tick): replicas sweeping at once work
//     on disjoint rows and never apply a time event twice.
//   - Public ids are unique per principal through the primary key of the call
//     index; a colliding admission is refused with correlation.ErrDuplicatePublicID.
//
// No state is ever written by SQL alone: every transition is decided by the
// domain machine in Go, inside the transaction.
//
// # Faults
//
// Every operation is one transaction. When the database cannot be reached or
// a statement fails, the transaction is rolled back and the error carries
// errs.CorrelationStoreUnavailable (503, retryable). Errors of the update
// closure are returned unchanged. A commit whose reply is lost (the connection
// broke after COMMIT was sent) is reported as unavailable although it may have
// committed; for a claim that means a group that is INFLIGHT with nobody
// dispatching it, which becomes UNCERTAIN at its deadline and is never sent —
// at most once holds, the client is told to retry and is then told the truth.
//
// # Several replicas
//
// Replicas share the limits of the database, so they should be configured with
// the same CORRELATION_* limits and TTLs, and their clocks kept in sync: the
// deadlines are computed from the clock of the replica that makes a
// transition. Clock skew moves expiry, never the at-most-once claim, which
// rests on the row lock and the stored state alone. Shutdown of a replica
// cancels nothing (see Store.Shared).
//
// # Database
//
// PostgreSQL 11 or newer (tested with 15), reached directly or through a
// session-mode pooler. The tables live in the first schema of search_path:
// add search_path=<schema> to CORRELATION_POSTGRES_URL to keep them in a
// dedicated schema, which must exist. Each replica opens at most
// DefaultMaxConns connections (pool_max_conns in the URL overrides it).
// Migrations (migrations/NNNN_name.sql, embedded) are applied by Open in one
// transaction under an advisory lock and recorded in MigrationsTable; a
// migration must keep the previous binary working, since replicas are rolled
// one at a time.
//
// # Tests
//
// The tests of this package need a PostgreSQL and skip without one:
//
//	scripts/pg.sh start
//	export PMGATE_PG_URL=$(scripts/pg.sh url) PMGATE_PG_CTL=$PWD/scripts/pg.sh
//	go test -race ./adapters/pgstore/
//	go test -run '^$' -bench . ./adapters/pgstore/
//	scripts/pg.sh stop
//
// PMGATE_PG_CTL (a script taking halt and start) enables the tests that stop
// and restart the database mid-run. Every test works in a schema of its own,
// dropped at the end.
package pgstore

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// Defaults of the options.
const (
	DefaultMaxConns       = 16
	DefaultConnectTimeout = 5 * time.Second
	DefaultOpTimeout      = 10 * time.Second
	DefaultReservationTTL = time.Minute
	sweepBatch            = 256
	idleInTxTimeout       = 30 * time.Second
)

// Store is a ports.CorrelationStore on PostgreSQL. It is safe for concurrent
// use; several Stores (in one process or many) may share one database.
type Store struct {
	pool    *pgxpool.Pool
	limits  correlation.Limits
	policy  correlation.Policy
	log     *slog.Logger
	opt     options
	version int
	leases  *leases

	closeOnce sync.Once
}

var _ ports.CorrelationStore = (*Store)(nil)

type options struct {
	maxConns       int32
	connectTimeout time.Duration
	opTimeout      time.Duration
	reservationTTL time.Duration
	rootCAs        *x509.CertPool
	leaseGroups    int // the groups of one lease; 0: by the limits (Store.lease)
}

// Option adjusts Open.
type Option func(*options)

// WithMaxConns bounds the connection pool (default DefaultMaxConns, or
// pool_max_conns of the URL when it is given there).
func WithMaxConns(n int32) Option { return func(o *options) { o.maxConns = n } }

// WithConnectTimeout bounds one connection attempt (default
// DefaultConnectTimeout, or connect_timeout of the URL when given there).
func WithConnectTimeout(d time.Duration) Option { return func(o *options) { o.connectTimeout = d } }

// WithOpTimeout bounds one store operation, so that a hung database answers
// correlation_store_unavailable instead of holding the request (default
// DefaultOpTimeout).
func WithOpTimeout(d time.Duration) Option { return func(o *options) { o.opTimeout = d } }

// WithReservationTTL sets how long an unadmitted reservation holds capacity
// (default DefaultReservationTTL). Reservations live between a tool turn's
// proven end and its admission, microseconds normally; the TTL only frees the
// capacity of a replica that died in between. It runs on the database clock.
func WithReservationTTL(d time.Duration) Option { return func(o *options) { o.reservationTTL = d } }

// WithRootCAs makes the connection trust exactly pool when TLS verifies the
// server (sslmode=verify-ca or verify-full) and the URL names no sslrootcert
// of its own: the gateway's SSL_CERT_FILE / SSL_CERT_DIR, env file included,
// which Go's system store would not see. nil keeps pgx's default.
func WithRootCAs(pool *x509.CertPool) Option { return func(o *options) { o.rootCAs = pool } }

// trust applies o.rootCAs to every TLS configuration of cfg (pgx keeps one
// per fallback), unless the URL chose its own root certificate.
func (o options) trust(url string, cfg *pgxpool.Config) {
	if o.rootCAs == nil || strings.Contains(url, "sslrootcert") {
		return
	}
	// verify-ca checks the chain in a callback that reads RootCAs of this
	// same configuration; require verifies nothing, so RootCAs is unused there.
	if t := cfg.ConnConfig.TLSConfig; t != nil {
		t.RootCAs = o.rootCAs
	}
	for _, f := range cfg.ConnConfig.Fallbacks {
		if f.TLSConfig != nil {
			f.TLSConfig.RootCAs = o.rootCAs
		}
	}
}

// Open connects to the database at url, applies the embedded migrations under
// an advisory lock and returns the store. log may be nil.
//
// Errors: config_invalid for a URL that does not parse, a database whose
// schema is newer than this binary, or a migration the server refuses;
// correlation_store_unavailable when the database cannot be reached.
func Open(ctx context.Context, url string, l correlation.Limits, p correlation.Policy, log *slog.Logger, opts ...Option) (*Store, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	o := options{maxConns: DefaultMaxConns, connectTimeout: DefaultConnectTimeout, opTimeout: DefaultOpTimeout, reservationTTL: DefaultReservationTTL}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parser's message quotes the connection string, and its password
		// masking is best effort: keep none of it.
		return nil, errs.Newf(errs.ConfigInvalid, "CORRELATION_POSTGRES_URL: not a valid PostgreSQL connection string")
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = o.maxConns
	}
	o.trust(url, cfg)
	if !strings.Contains(url, "connect_timeout") {
		cfg.ConnConfig.ConnectTimeout = o.connectTimeout
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "pmgate"
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !ok {
		// A replica that stops mid-transaction (paused, partitioned) must not
		// hold a group's row lock until TCP notices: the server ends the
		// session, rolls back (a claim not committed is no claim) and frees
		// the lock. Our transactions are never idle for more than the
		// update closure takes.
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.Itoa(int(idleInTxTimeout.Milliseconds()))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, unavailable(err, "create connection pool")
	}
	owner, err := newID()
	if err != nil {
		pool.Close()
		return nil, err
	}
	s := &Store{pool: pool, limits: l, policy: p, log: log, opt: o, leases: newLeases(owner)}
	pctx, cancel := context.WithTimeout(ctx, o.connectTimeout+o.opTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, unavailable(err, "connect")
	}
	v, err := migrate(pctx, pool, log)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.version = v
	if err := s.takeLeasesBack(pctx); err != nil {
		pool.Close()
		return nil, err
	}
	log.Info("correlation store ready", "store", "postgres", "schema_version", v)
	return s, nil
}

// SchemaVersion is the schema version of the database at Open.
func (s *Store) SchemaVersion() int { return s.version }

// Close gives this replica's leases back (best effort: an exact decision of
// another replica takes them back otherwise) and closes the connection pool;
// later operations fail with correlation_store_unavailable. It is safe to
// call more than once.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		s.giveLeasesBack()
		s.pool.Close()
	})
}

// Ping reports whether the database answers, within the operation timeout.
// Errors: correlation_store_unavailable.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return unavailable(err, "ping")
	}
	return nil
}

// Shared implements ports.CorrelationStore: the records live in a database
// every replica uses, so the app cancels none of them when this process stops.
//
// The memory store's pending groups die with their process, so cancelling
// them at shutdown tells their clients the truth. Here another replica (or
// this one after a restart) serves their continuations: cancelling them would
// break every client whose tool call was issued by a replica that is merely
// being rolled. Pending groups expire at their TTL as usual; in-flight groups
// of this replica are settled by their requests before the process stops, or
// become UNCERTAIN at their deadline.
func (*Store) Shared() bool { return true }

// opContext bounds one operation by the operation timeout.
func (s *Store) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.opt.opTimeout)
}

// inTx runs fn in one transaction and commits when fn returns nil. Errors of
// fn are returned unchanged (database errors inside fn are already marked by
// dbErr); Begin and Commit failures are marked unavailable. A Begin that
// failed before anything was sent (a stale pooled connection after a database
// restart) is retried once.
func (s *Store) inTx(ctx context.Context, op string, opts pgx.TxOptions, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	tx, err := s.pool.BeginTx(ctx, opts)
	if err != nil && pgconn.SafeToRetry(err) && ctx.Err() == nil {
		tx, err = s.pool.BeginTx(ctx, opts)
	}
	if err != nil {
		return unavailable(err, op+": begin")
	}
	defer rollback(ctx, tx)
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return unavailable(err, op+": commit")
	}
	return nil
}

// rollback ends tx when it was not committed (a no-op after Commit). It has
// its own short deadline: the operation's context may be cancelled already,
// and a hung connection must not hold the caller.
func rollback(ctx context.Context, tx pgx.Tx) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = tx.Rollback(rctx)
}

// unavailable marks a database error with correlation_store_unavailable. The
// cause stays attached for logs (redacted) and never reaches a client.
func unavailable(err error, what string) error {
	return errs.Wrap(errors.Wrapf(err, "pgstore: %s", redactSafe(what)), errs.CorrelationStoreUnavailable)
}

// dbErr marks an error of a statement inside a transaction.
func dbErr(err error, what string) error { return unavailable(err, what) }

type redactSafe string

func (redactSafe) SafeValue() {}

func (s *Store) emptyCounts() correlation.Counts {
	c := correlation.Counts{ByState: map[correlation.State]int{}, MaxGroups: s.limits.MaxGroups,
		MaxCalls: s.limits.MaxCalls, ResponseCacheBytes: s.limits.ResponseCacheBytes}
	c.GroupsPerKey, c.CallsPerKey = s.limits.Share()
	return c
}

// newID returns a random reservation id.
func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "r" + hex.EncodeToString(b[:]), nil
}
