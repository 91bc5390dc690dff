package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// attackStores are the correlation stores the earlier attack kit's checks run
// against: the memory store and PostgreSQL (skipped without PMGATE_PG_URL).
var attackStores = map[string]func(t *testing.T) map[string]string{
	"memory": func(*testing.T) map[string]string { return map[string]string{} },
	"postgres": func(t *testing.T) map[string]string {
		k := make([]byte, 32)
		_, _ = rand.Read(k)
		return map[string]string{"CORRELATION_STORE": "postgres", "CORRELATION_POSTGRES_URL": pgSchema(t),
			"CORRELATION_PRINCIPAL_KEY": base64.RawURLEncoding.EncodeToString(k)}
	},
}

// TestTheAttackKitChecksHoldOnEveryStoreAndStrategy re-runs the checks of the
// first attack kit that are tests (Retry-After, one request_id per log line, a
// full store refused before sending, invalid UTF-8) on both stores and both
// strategies, plus the upstream 503's Retry-After.
func TestTheAttackKitChecksHoldOnEveryStoreAndStrategy(t *testing.T) {
	for storeName, storeEnv := range attackStores {
		for _, st := range strategies {
			t.Run(storeName+"/"+st, func(t *testing.T) {
				env := storeEnv(t)
				env["CORRELATION_MAX_GROUPS"] = "1"
				s := serve(t, st, env)

				t.Run("retry-after", func(t *testing.T) {
					for _, stream := range []bool{false, true} {
						is := is.New(t)
						resp := s.post(t, userBody("#scenario=rate_limited", stream, ""), "x-request-id", "rid-kit-1")
						is.Equal(resp.StatusCode, 429)
						is.Equal(resp.Header.Get("Retry-After"), "7") // the upstream's own delay
						var e errorBody
						is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
						is.Equal(e.Error.Code, "upstream_rate_limited")
					}
				})

				t.Run("upstream 503", func(t *testing.T) {
					is := is.New(t)
					resp := s.post(t, userBody("#scenario=server_error", false, ""))
					is.Equal(resp.StatusCode, 503) // not 502
					var e errorBody
					is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
					is.Equal(e.Error.Code, "upstream_overloaded")
					is.True(resp.Header.Get("Retry-After") != "")    // retryable: a fresh turn
					is.True(resp.Header.Get("x-should-retry") == "") // not marked deterministic
				})

				t.Run("one request_id per line", func(t *testing.T) {
					is := is.New(t)
					n := 0
					for _, line := range strings.Split(s.logs.String(), "\n") {
						if line == "" {
							continue
						}
						is.True(strings.Count(line, `"request_id"`) <= 1) // never twice
						if strings.Contains(line, `"upstream request failed"`) {
							n++
							is.NoErr(strictJSONLine(line))
						}
					}
					is.True(n >= 2) // the failures above were logged
				})

				t.Run("invalid UTF-8", func(t *testing.T) {
					before := len(s.emu.Requests())
					for _, c := range map[string]struct{ content, param string }{
						"invalid byte":        {"\"caf\xe9\"", "messages[0].content"},
						"lone high surrogate": {`"x\ud83dy"`, "messages[0].content"},
						"high high":           {`"x\ud83d\ud83dy"`, "messages[0].content"},
						"lone low surrogate":  {`[{"type":"text","text":"\ude00"}]`, "messages[0].content[0].text"},
					} {
						is := is.New(t)
						resp := s.post(t, fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%s}]}`, testModel, c.content))
						is.Equal(resp.StatusCode, 400)
						var e errorBody
						is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
						is.True(e.Error.Param != nil && *e.Error.Param == c.param) // the field path
					}
					is.New(t).Equal(len(s.emu.Requests()), before) // nothing reached the upstream
				})

				t.Run("full store refused before sending", func(t *testing.T) {
					is := is.New(t)
					pending(t, s, "fill the store")
					before := s.emu.Count(emulator.KindUserQuery)
					for _, stream := range []string{"", `,"stream":true`} {
						resp := s.post(t, chatBody(t, testModel, []msg{{"role": "user", "content": "more"}}, toolsJSON, stream))
						body, _ := io.ReadAll(resp.Body)
						is.Equal(resp.StatusCode, 503)
						is.True(resp.Header.Get("retry-after") != "")
						is.True(strings.Contains(string(body), "correlation_capacity_exceeded"))
					}
					is.Equal(s.emu.Count(emulator.KindUserQuery), before) // not one upstream query spent
				})
			})
		}
	}
}
