package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pmgate/pmgate/adapters/pgstore"
	"github.com/pmgate/pmgate/domain/correlation"
)

// The PostgreSQL tests need a database: PMGATE_PG_URL names it (scripts/pg.sh
// start; export PMGATE_PG_URL=$(scripts/pg.sh url)). Without it they skip, so
// `go test ./...` passes on a machine without PostgreSQL. PMGATE_PG_CTL names
// a control script taking `halt` and `start` (scripts/pg.sh) for the outage
// tests, which stop the server that PMGATE_PG_URL points to.
const (
	envURL = "PMGATE_PG_URL"
	envCtl = "PMGATE_PG_CTL"
)

func baseURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(envURL)
	if u == "" {
		t.Skipf("%s is not set: the PostgreSQL store tests need a database (scripts/pg.sh start && export %s=$(scripts/pg.sh url))", envURL, envURL)
	}
	return u
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// withSearchPath returns base with its search_path set to schema.
func withSearchPath(t testing.TB, base, schema string) string {
	t.Helper()
	return withParam(t, base, "search_path", schema)
}

// withParam returns base with the connection parameter k set to v.
func withParam(t testing.TB, base, k, v string) string {
	t.Helper()
	if !strings.HasPrefix(base, "postgres://") && !strings.HasPrefix(base, "postgresql://") {
		return base + " " + k + "=" + v // keyword/value form
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", envURL, err)
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

// pgxConnect opens a plain connection to u.
func pgxConnect(u string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return pgx.Connect(ctx, u)
}

// admin runs one statement on its own connection to the base database.
func admin(t testing.TB, sql string, args ...any) {
	t.Helper()
	execOn(t, baseURL(t), sql, args...)
}

// freshSchema creates an empty schema, dropped at cleanup, and returns a URL
// whose search_path selects it: every test gets its own tables.
func freshSchema(t testing.TB) string {
	t.Helper()
	name := "pmgate_t_" + randomHex(6)
	admin(t, "CREATE SCHEMA "+name)
	t.Cleanup(func() {
		if os.Getenv("PMGATE_PG_KEEP") == "" {
			admin(t, "DROP SCHEMA IF EXISTS "+name+" CASCADE")
		}
	})
	return withSearchPath(t, baseURL(t), name)
}

// open opens a store on u, closed at cleanup.
func open(t testing.TB, u string, l correlation.Limits, p correlation.Policy, opts ...pgstore.Option) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), u, l, p, quiet(), opts...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// onConn runs fn on a connection of its own to u, failing t when it fails.
func onConn(t testing.TB, u, what string, fn func(ctx context.Context, conn *pgx.Conn) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if err := fn(ctx, conn); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// query runs one query on its own connection to u and scans its one row.
func query(t testing.TB, u, sql string, dest ...any) {
	t.Helper()
	onConn(t, u, "query "+sql, func(ctx context.Context, conn *pgx.Conn) error { return conn.QueryRow(ctx, sql).Scan(dest...) })
}

// execOn runs one statement on its own connection to u.
func execOn(t testing.TB, u, sql string, args ...any) {
	t.Helper()
	onConn(t, u, "exec "+sql, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, sql, args...)
		return err
	})
}

// checkInvariants verifies that the accounting row equals what the group rows
// the counted reservations and the stripes' and replicas' leases say and that the cache is within its budget.
func checkInvariants(t testing.TB, u string, l correlation.Limits) {
	t.Helper()
	var bad string
	query(t, u, `WITH live AS (
		SELECT (SELECT count(*) FROM correlation_groups WHERE state IN ('PENDING','INFLIGHT'))
		         + (SELECT count(*) FROM correlation_reservations WHERE counted)
		         + (SELECT coalesce(sum(free_groups), 0) FROM correlation_usage_stripes)
		         + (SELECT coalesce(sum(free_groups), 0) FROM correlation_leases) AS groups,
		       (SELECT coalesce(sum(calls), 0) FROM correlation_groups WHERE state IN ('PENDING','INFLIGHT'))
		         + (SELECT coalesce(sum(calls), 0) FROM correlation_reservations WHERE counted)
		         + (SELECT coalesce(sum(free_calls), 0) FROM correlation_usage_stripes)
		         + (SELECT coalesce(sum(free_calls), 0) FROM correlation_leases) AS calls
	) SELECT coalesce(string_agg(problem, '; '), '') FROM (
		SELECT 'live_groups ' || u.live_groups || ' vs ' || live.groups AS problem
		  FROM correlation_usage u, live WHERE u.live_groups <> live.groups
		UNION ALL
		SELECT 'live_calls ' || u.live_calls || ' vs ' || live.calls
		  FROM correlation_usage u, live WHERE u.live_calls <> live.calls
		UNION ALL
		SELECT 'lease ' || id || ' holds ' || free_groups || '/' || free_calls FROM correlation_leases WHERE free_groups < 0 OR free_calls < 0
		UNION ALL
		SELECT 'cache_bytes ' || u.cache_bytes || ' vs ' || (SELECT coalesce(sum(octet_length(cached_response)), 0) FROM correlation_groups)
		  FROM correlation_usage u WHERE u.cache_bytes <> (SELECT coalesce(sum(octet_length(cached_response)), 0) FROM correlation_groups)
		UNION ALL
		SELECT 'group ' || g.key || ' has no index rows' FROM correlation_groups g
		  WHERE NOT EXISTS (SELECT 1 FROM correlation_calls c WHERE c.group_key = g.key)
		UNION ALL
		SELECT 'index row ' || c.public_id || ' of no group ' || c.group_key FROM correlation_calls c
		  WHERE NOT EXISTS (SELECT 1 FROM correlation_groups g WHERE g.key = c.group_key)
		UNION ALL
		SELECT 'group ' || g.key || ' due_at ' || coalesce(g.due_at::text, 'NULL') || ' in state ' || g.state FROM correlation_groups g
		  WHERE (g.state = 'PENDING' AND g.due_at IS DISTINCT FROM g.pending_expires_at)
		     OR (g.state = 'INFLIGHT' AND g.due_at IS DISTINCT FROM g.inflight_expires_at)
		     OR (g.state NOT IN ('PENDING', 'INFLIGHT') AND g.due_at IS DISTINCT FROM g.terminal_expires_at)
	) p`, &bad)
	if bad != "" {
		t.Fatalf("store invariants broken: %s", bad)
	}
	var cache int64
	query(t, u, `SELECT cache_bytes FROM correlation_usage`, &cache)
	if cache > int64(l.ResponseCacheBytes) {
		t.Fatalf("cache bytes %d over the budget %d", cache, l.ResponseCacheBytes)
	}
}

// pgctl runs the control script named by PMGATE_PG_CTL (skipping the test
// when it is unset).
func pgctl(t testing.TB, arg string) {
	t.Helper()
	ctl := os.Getenv(envCtl)
	if ctl == "" {
		t.Skipf("%s is not set: the outage tests stop and start the database through it (e.g. %s=$PWD/scripts/pg.sh)", envCtl, envCtl)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, ctl, arg).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", ctl, arg, err, out)
	}
}

// needCtl skips the test up front when PMGATE_PG_CTL is unset.
func needCtl(t testing.TB) {
	t.Helper()
	if os.Getenv(envCtl) == "" {
		t.Skipf("%s is not set: the outage tests stop and start the database through it (e.g. %s=$PWD/scripts/pg.sh)", envCtl, envCtl)
	}
}

// eventually retries f until it returns nil or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
