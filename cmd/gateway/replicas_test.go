package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// pgSchema creates a fresh schema in the PostgreSQL of PMGATE_PG_URL (skipping
// without one) and returns a URL whose search_path selects it.
func pgSchema(t *testing.T) string {
	t.Helper()
	base := os.Getenv("PMGATE_PG_URL")
	if base == "" {
		t.Skip("PMGATE_PG_URL is not set: start PostgreSQL with scripts/pg.sh (see README)")
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "e2e_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(t.Context(), base)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func TestTwoReplicasOnOnePostgreSQLDispatchEachContinuationOnce(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			key := make([]byte, 32)
			_, _ = rand.Read(key)
			env := map[string]string{"CORRELATION_STORE": "postgres", "CORRELATION_POSTGRES_URL": pgSchema(t),
				"CORRELATION_PRINCIPAL_KEY": base64.RawURLEncoding.EncodeToString(key), "MAX_CONCURRENT_REQUESTS": "64"}
			emu := newEmulator(t)
			a := serveWith(t, emu, st, env)
			b := serveWith(t, emu, st, env)

			_, cont, _ := pending(t, a, "issued through replica A")
			status, c, e := turnResult(t, b, chatBody(t, testModel, cont, toolsJSON, ""))
			is.Equal(status, 200) // continued through replica B
			is.Equal(e.Error.Code, "")
			is.Equal(c.Choices[0].FinishReason, "stop")
			is.Equal(emu.Count(emulator.KindToolResponse), 1)

			_, race, _ := pending(t, b, "raced over both replicas")
			for _, m := range race {
				if m["role"] == "tool" {
					m["content"] = "#scenario=slow_stream"
				}
			}
			codes := raceContinuations(chatBody(t, testModel, race, toolsJSON, ""), 32, a, b)
			is.Equal(emu.Count(emulator.KindToolResponse), 2)              // exactly one more upstream dispatch
			is.Equal(codes["200 "]+codes["409 continuation_inflight"], 32) // the rest in flight or replays
			is.True(codes["200 "] >= 1)

			for _, r := range []*served{a, b} {
				h, err := http.Get(r.base + "/health")
				is.NoErr(err)
				var health map[string]any
				is.NoErr(json.NewDecoder(h.Body).Decode(&health))
				h.Body.Close()
				corr := health["correlation"].(map[string]any)
				is.Equal(corr["store"], "postgres") // /health reports the shared store
				is.Equal(corr["state"], "ok")
			}
		})
	}
}
