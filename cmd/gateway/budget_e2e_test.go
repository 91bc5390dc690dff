package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/ops"
)

// TestAnInferenceKeyCannotReadTheOperatorViews is the leak of the attack run:
// any key read /admin/api/overview (models outside its allowlist, with their
// upstream enums) and /admin/api/live and /metrics (every key's traffic).
func TestAnInferenceKeyCannotReadTheOperatorViews(t *testing.T) {
	is := is.New(t)
	s, _, k := slotsServe(t, "access_token", map[string]string{
		"PROVIDER_MODELS": testModel + ",gpt-other", "POSTMAN_MODEL_MAP": testModel + "=GPT_55,gpt-other=GPT_OTHER_ENUM"},
		[]string{"--id", "editor"}, []string{"--id", "router", "--models", testModel}, []string{"--id", "owner", "--scope", "admin"})
	editor, router, owner := k["editor"], k["router"], k["owner"]
	is.Equal(s.post(t, userBody("hello", false, ""), bearer(editor)...).StatusCode, 200)
	for _, path := range []string{"/admin/api/overview", "/admin/api/live", "/admin/api/usage", "/metrics"} {
		resp := s.do(t, "GET", path, nil, bearer(router)...) // router may use gpt-test only
		body, _ := io.ReadAll(resp.Body)
		is.Equal(resp.StatusCode, 403)
		var e errorBody
		is.NoErr(json.Unmarshal(body, &e))
		is.Equal(e.Error.Code, "insufficient_scope")
		for _, leak := range []string{"gpt-other", "GPT_OTHER_ENUM", "GPT_55", `"editor"`, "pmgate_key_requests_total"} {
			is.True(!bytes.Contains(body, []byte(leak)))
		}
	}
	overview := s.get(t, "/admin/api/overview", bearer(owner)...)
	is.True(strings.Contains(overview, "GPT_OTHER_ENUM")) // the owner's view is complete
	// METRICS_AUTH=none opens /metrics (loopback only), as documented; the
	// control page's data still needs an admin key.
	open, _, inference, _ := keysServe(t, "access_token", map[string]string{"METRICS_AUTH": "none"})
	resp := open.do(t, "GET", "/metrics", nil, "Authorization", "")
	is.Equal(resp.StatusCode, 200)
	is.Equal(open.do(t, "GET", "/admin/api/live", nil, bearer(inference)...).StatusCode, 403)
}

// TestAKeysQuotaRefusesBeforeSendingAndHoldsAContinuation: a key with two
// dispatches a day gets two turns, then 429 key_quota_exhausted with
// Retry-After until the UTC midnight on every API, and nothing more reaches
// the emulator: a continuation of a tool group issued inside the quota is
// refused like a fresh turn, however often it is sent, and its group waits;
// once the limit is raised the same results are dispatched once.
func TestAKeysQuotaRefusesBeforeSendingAndHoldsAContinuation(t *testing.T) {
	is := is.New(t)
	s, file, k := slotsServe(t, "web_session", nil, []string{"--id", "agent", "--per-day", "2"}, []string{"--id", "owner", "--scope", "admin"})
	agent, owner := k["agent"], k["owner"]
	emu := s.emu
	is.Equal(s.post(t, userBody("one", false, ""), bearer(agent)...).StatusCode, 200)
	_, cont, _ := pendingAs(t, s, "two: the weather", agent) // the second dispatch issues a tool group
	now := time.Now().UTC()
	untilMidnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC).Sub(now)
	refused := func(resp *http.Response) {
		t.Helper()
		is.Equal(resp.StatusCode, 429)
		body, _ := io.ReadAll(resp.Body)
		is.True(bytes.Contains(body, []byte(`"key_quota_exhausted"`))) // in the API's own shape
		is.Equal(resp.Header.Get("x-should-retry"), "false")
		secs, err := strconv.Atoi(resp.Header.Get("retry-after"))
		is.NoErr(err)
		is.True(time.Duration(secs)*time.Second >= untilMidnight-5*time.Second && time.Duration(secs)*time.Second <= untilMidnight+5*time.Second)
	}
	refused(s.post(t, userBody("three", false, ""), bearer(agent)...))
	is.Equal(emu.Count(emulator.KindUserQuery), 2) // nothing sent for the refusal
	// The continuation counts like a fresh turn: refused before dispatch, and
	// again when sent again (its group stays pending, not in flight or
	// uncertain).
	contBody := chatBody(t, testModel, cont, toolsJSON, "")
	for range 2 {
		refused(s.post(t, contBody, bearer(agent)...))
	}
	is.Equal(emu.Count(emulator.KindToolResponse), 0)
	// The Responses and Messages APIs are refused by the same quota.
	refused(s.do(t, "POST", "/v1/responses", strings.NewReader(`{"model":"`+testModel+`","input":"four"}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+agent))
	refused(s.do(t, "POST", "/v1/messages", strings.NewReader(`{"model":"`+testModel+`","max_tokens":64,"messages":[{"role":"user","content":"five"}]}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+agent, "anthropic-version", "2023-06-01"))
	is.Equal(emu.Count(emulator.KindUserQuery), 2)
	// The first screen's numbers: two dispatches today against a budget of
	// two; the refusals of the last hour by cause.
	var live struct {
		Keys     []ops.KeyBudget
		LastHour map[string]int `json:"last_hour"`
	}
	is.NoErr(json.Unmarshal([]byte(s.get(t, "/admin/api/live", bearer(owner)...)), &live))
	var got ops.KeyBudget
	for _, k := range live.Keys {
		if k.Slot == "agent" {
			got = k
		}
	}
	is.Equal(got, ops.KeyBudget{Slot: "agent", Scope: "inference", DispatchesPerDay: 2, DispatchesToday: 2, DispatchesMonth: 2})
	is.Equal(live.LastHour["key_quota_exhausted"], 5)
	metrics := s.get(t, "/metrics", bearer(owner)...)
	is.True(strings.Contains(metrics, `pmgate_key_dispatches_total{slot="agent"} 2`))
	is.True(strings.Contains(metrics, `pmgate_key_refusals_total{code="key_quota_exhausted",slot="agent"} 5`))
	// The ledger: by API and outcome.
	var rep ops.UsageReport
	eventually(t, "the ledger has every request", func() bool {
		rep = ops.UsageReport{}
		_ = json.Unmarshal([]byte(s.get(t, "/admin/api/usage", bearer(owner)...)), &rep)
		n := int64(0)
		for _, r := range rep.Rows {
			if r.Slot == "agent" {
				n += r.Requests
			}
		}
		return n == 7
	})
	sums := map[string]int64{}
	for _, r := range rep.Rows {
		if r.Slot == "agent" {
			sums[r.API+" "+r.Outcome+" requests"] += r.Requests
			sums[r.API+" "+r.Outcome+" dispatches"] += r.Dispatches
			is.True(r.QueryChars >= 0 && r.Model == testModel)
		}
	}
	is.Equal(sums, map[string]int64{"chat ok requests": 2, "chat ok dispatches": 2,
		"chat key_quota_exhausted requests": 3, "chat key_quota_exhausted dispatches": 0,
		"responses key_quota_exhausted requests": 1, "responses key_quota_exhausted dispatches": 0,
		"messages key_quota_exhausted requests": 1, "messages key_quota_exhausted dispatches": 0})
	// Raising the limit with keys set takes effect on the running gateway:
	// the same results are dispatched, once.
	if _, err := keysCmd(t, file, "set", "agent", "--per-day", "10"); err != nil {
		t.Fatal(err)
	}
	var status int
	var c completion
	eventually(t, "the raised limit is applied", func() bool {
		status, c, _ = turnResult(t, s, contBody, bearer(agent)...)
		return status == 200
	})
	is.Equal(c.Choices[0].FinishReason, "stop")
	is.Equal(emu.Count(emulator.KindToolResponse), 1)
	status, _, _ = turnResult(t, s, contBody, bearer(agent)...) // a retry of those results: the cached answer
	is.Equal(status, 200)
	is.Equal(emu.Count(emulator.KindToolResponse), 1)
}

// TestAToolLoopNeverSpendsPastTheKeysLimits is the attack of the third
// hardening round: a key of one request a minute and one dispatch a day, a
// model that calls a tool after every result, and a client that answers at
// once, again and again. The emulator receives the one dispatch the key
// allows; after the limits are lifted the same results are dispatched once.
// On both stores.
func TestAToolLoopNeverSpendsPastTheKeysLimits(t *testing.T) {
	for _, store := range []string{"memory", "postgres"} {
		t.Run(store, func(t *testing.T) {
			is := is.New(t)
			env := map[string]string{}
			if store == "postgres" {
				pk := make([]byte, 32)
				_, _ = rand.Read(pk)
				env = map[string]string{"CORRELATION_STORE": "postgres", "CORRELATION_POSTGRES_URL": pgSchema(t),
					"CORRELATION_PRINCIPAL_KEY": base64.RawURLEncoding.EncodeToString(pk)}
			}
			s, file, k := slotsServe(t, "access_token", env, []string{"--id", "agent", "--rpm", "1", "--per-day", "1"})
			agent := k["agent"]
			history := []msg{{"role": "user", "content": "work until done #loop=5"}}
			status, c, e := turnResult(t, s, chatBody(t, testModel, history, toolsJSON, ""), bearer(agent)...)
			is.Equal(status, 200)
			is.Equal(c.Choices[0].FinishReason, "tool_calls")
			history = append(history, assistantAndResults(c, sunny)...)
			body := chatBody(t, testModel, history, toolsJSON, "")
			codes := map[string]int{}
			deadline := time.Now().Add(2 * time.Second)
			for n := 0; n < 40 && time.Now().Before(deadline); n++ { // the loop answers at once
				status, _, e = turnResult(t, s, body, bearer(agent)...)
				codes[strconv.Itoa(status)+" "+e.Error.Code]++
			}
			t.Logf("%s: one tool loop against 1 rpm and 1 a day: %v; upstream dispatches %d", store, codes,
				s.emu.Count(emulator.KindUserQuery)+s.emu.Count(emulator.KindToolResponse))
			is.Equal(len(codes), 1)
			is.True(codes["429 key_rate_limited"] > 0) // the bucket first, then (after a minute) the day
			is.Equal(s.emu.Count(emulator.KindUserQuery), 1)
			is.Equal(s.emu.Count(emulator.KindToolResponse), 0)
			// The limits lifted (as the window's reset would): the same results,
			// sent again, are dispatched once.
			if _, err := keysCmd(t, file, "set", "agent", "--rpm", "0", "--per-day", "0"); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the lifted limits are applied", func() bool {
				status, c, _ = turnResult(t, s, body, bearer(agent)...)
				return status == 200
			})
			is.Equal(c.Choices[0].FinishReason, "tool_calls") // the loop's next round
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1)
			status, _, _ = turnResult(t, s, body, bearer(agent)...) // sent once more: the cached answer
			is.Equal(status, 200)
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1)
		})
	}
}

// slotsServe starts serve on a fresh key file holding the slots of specs
// (each the flags of one `keys new`, starting with --id ID), all written
// before serve starts, and returns the keys by slot id.
func slotsServe(t *testing.T, st string, extra map[string]string, specs ...[]string) (*served, string, map[string]string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "keys.json")
	keys := map[string]string{}
	for _, spec := range specs {
		keys[spec[1]] = newSlotKey(t, file, spec...)
	}
	env := map[string]string{"PROVIDER_API_KEY": "", "PROVIDER_KEYS_FILE": file}
	for k, v := range extra {
		env[k] = v
	}
	return serve(t, st, env), file, keys
}

// pendingAs issues a tool group for key and returns the continuation.
func pendingAs(t *testing.T, s *served, text, key string) ([]msg, []msg, completion) {
	t.Helper()
	history := []msg{{"role": "user", "content": text}}
	status, c, e := turnResult(t, s, chatBody(t, testModel, history, toolsJSON, ""), bearer(key)...)
	if status != 200 || c.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("tool turn: %d %s", status, e.Error.Code)
	}
	return history, append(append([]msg(nil), history...), assistantAndResults(c, sunny)...), c
}

// TestTwoReplicasHoldADailyQuotaOnTheSharedStore races replicas × concurrent
// requests of one key against its daily quota on one PostgreSQL: the emulator
// counts exactly the quota's dispatches (the over-admission bound is zero),
// and `gateway usage` reads the same numbers from the database as from a
// running gateway.
func TestTwoReplicasHoldADailyQuotaOnTheSharedStore(t *testing.T) {
	is := is.New(t)
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	file := t.TempDir() + "/keys.json"
	const quota, perReplica = 5, 12
	agent := newSlotKey(t, file, "--id", "agent", "--per-day", strconv.Itoa(quota))
	owner := newSlotKey(t, file, "--id", "owner", "--scope", "admin")
	pg := pgSchema(t)
	env := map[string]string{"PROVIDER_API_KEY": "", "PROVIDER_KEYS_FILE": file, "CORRELATION_STORE": "postgres",
		"CORRELATION_POSTGRES_URL": pg, "CORRELATION_PRINCIPAL_KEY": base64.RawURLEncoding.EncodeToString(k),
		"MAX_CONCURRENT_REQUESTS": "64"}
	emu := newEmulator(t)
	a, b := serveWith(t, emu, "access_token", env), serveWith(t, emu, "access_token", env)
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, s := range []*served{a, b} {
		for range perReplica {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				req, _ := http.NewRequest("POST", s.base+"/v1/chat/completions", strings.NewReader(userBody("race", false, "")))
				req.Header.Set("Authorization", "Bearer "+agent)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				codes[resp.StatusCode]++
				mu.Unlock()
			}()
		}
	}
	close(start)
	wg.Wait()
	t.Logf("2 replicas × %d concurrent requests, daily quota %d: %v; upstream dispatches %d (over-admission %d)",
		perReplica, quota, codes, emu.Count(emulator.KindUserQuery), emu.Count(emulator.KindUserQuery)-quota)
	is.Equal(emu.Count(emulator.KindUserQuery), quota)
	is.Equal(codes, map[int]int{200: quota, 429: 2*perReplica - quota})

	// gateway usage, from PostgreSQL and from a running gateway: the same rows.
	usageEnv := map[string]string{"CORRELATION_STORE": "postgres", "CORRELATION_POSTGRES_URL": pg, "PROVIDER_API_KEY": owner}
	cmd := func(args ...string) string {
		var out, errOut bytes.Buffer
		if err := run(t.Context(), append([]string{"usage"}, args...), func(k string) string { return usageEnv[k] }, &out, &errOut); err != nil {
			t.Fatalf("usage %v: %v %s", args, err, errOut.String())
		}
		return out.String()
	}
	var fromDB, fromURL ops.UsageReport
	eventually(t, "both replicas flushed their ledger rows", func() bool {
		fromDB = ops.UsageReport{}
		_ = json.Unmarshal([]byte(cmd("--json")), &fromDB)
		var n int64
		for _, r := range fromDB.Rows {
			n += r.Requests
		}
		return n == 2*perReplica
	})
	is.NoErr(json.Unmarshal([]byte(cmd("--json", "--url", a.base)), &fromURL))
	is.Equal(fromDB.Rows, fromURL.Rows)
	var dispatches int64
	for _, r := range fromDB.Rows {
		dispatches += r.Dispatches
	}
	is.Equal(dispatches, int64(quota))
	table := cmd()
	is.True(strings.Contains(table, "agent")) // a line per day, key and model
	is.True(strings.Contains(table, "total"))
	csvOut := cmd("--csv")
	is.True(strings.HasPrefix(csvOut, "day,slot,api,model,strategy,outcome,requests,dispatches"))
	// keys list shows today's dispatches against the limit, from the database.
	list, err := keysCmdEnv(t, file, usageEnv, "list")
	is.NoErr(err)
	is.True(strings.Contains(list, "5/5")) // agent: today 5 of 5
}

// keysCmdEnv is keysCmd with more environment.
func keysCmdEnv(t *testing.T, file string, extra map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := map[string]string{"PROVIDER_KEYS_FILE": file}
	for k, v := range extra {
		env[k] = v
	}
	err := run(t.Context(), append([]string{"keys"}, args...), func(k string) string { return env[k] }, &out, &errOut)
	return out.String(), err
}

// TestUpstreamQuotaRefusalsAreCountedWithTheirTime: the upstream's own quota
// error is counted on the live view with when it last happened, in the
// ledger under its code and in the per-slot refusals.
func TestUpstreamQuotaRefusalsAreCountedWithTheirTime(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", nil)
	before := time.Now().UTC().Add(-time.Second)
	resp := s.post(t, userBody("#scenario=quota_exhausted", false, ""))
	var e errorBody
	is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
	is.Equal(e.Error.Code, "upstream_quota_exhausted")
	var live struct {
		UpstreamQuota ops.UpstreamQuota `json:"upstream_quota"`
		LastHour      map[string]int    `json:"last_hour"`
	}
	is.NoErr(json.Unmarshal([]byte(s.get(t, "/admin/api/live")), &live))
	is.Equal(live.UpstreamQuota.Count, int64(1))
	is.True(live.UpstreamQuota.Last != nil && !live.UpstreamQuota.Last.Before(before) && live.UpstreamQuota.Last.Before(time.Now().Add(time.Second)))
	is.Equal(live.LastHour["upstream_quota_exhausted"], 1)
	is.True(strings.Contains(s.get(t, "/metrics"), `pmgate_key_refusals_total{code="upstream_quota_exhausted",slot="default"} 1`))
	eventually(t, "the ledger counts it", func() bool {
		var rep ops.UsageReport
		_ = json.Unmarshal([]byte(s.get(t, "/admin/api/usage")), &rep)
		return len(rep.Rows) == 1 && rep.Rows[0].Outcome == "upstream_quota_exhausted" && rep.Rows[0].Requests == 1
	})
}
