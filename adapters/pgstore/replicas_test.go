package pgstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/pgstore"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/adapters/system"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/internal/testkit"
	"github.com/pmgate/pmgate/ports/porttest"
)

// Two gateway replicas: each its own app, Postman client and store (its own
// connection pool), sharing one PostgreSQL schema, one emulator and one clock.

const (
	emuToken    = "tok-SECRET-token-9876543210"
	emuWS       = "ws-1234"
	publicModel = "gpt-5.6-sol"
)

var principal = app.Principal{Slot: "default", ID: "principal-1"}

var weatherTools = []chat.Tool{
	{Name: "get_weather", Description: "Weather of a city", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`), UpstreamParameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "get_time", Description: "Time in a zone", Parameters: []byte(`{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}`), UpstreamParameters: []byte(`{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}`)},
}

type replica struct {
	gw    *app.Gateway
	store *pgstore.Store
}

type cluster struct {
	emu   *emulator.Server
	url   string
	clock *porttest.Clock
	a, b  replica
}

func newCluster(t *testing.T, l correlation.Limits) *cluster {
	t.Helper()
	u := freshSchema(t)
	emu, err := emulator.Start(context.Background(), emulator.Config{WorkspaceID: emuWS, AccessToken: emuToken, CADir: t.TempDir()})
	if err != nil {
		t.Fatalf("emulator: %v", err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	env := map[string]string{
		"POSTMAN_TRANSPORT_STRATEGY": "access_token",
		"POSTMAN_ACCESS_TOKEN":       emuToken,
		"POSTMAN_ORIGIN":             emu.Origin(),
		"POSTMAN_WORKSPACE_ID":       emuWS,
		"POSTMAN_MODEL_MAP":          publicModel + "=GPT_56_SOL",
	}
	cfg, err := pmconfig.Parse(func(k string) string { return env[k] }, []string{publicModel})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	// The request limits are process settings; these are the gateway's defaults.
	cfg.Limits = pmconfig.Limits{RequestTimeout: 2 * time.Minute, MaxBodyBytes: 1 << 20, MaxEventBytes: 1 << 20,
		MaxOutputBytes: 4 << 20, MaxTools: 64, MaxToolArgumentBytes: 256 << 10, MaxToolResultBytes: 256 << 10}
	c := &cluster{emu: emu, url: u, clock: porttest.NewClock(porttest.T0)}
	mk := func() replica {
		client, err := postman.New(cfg, postman.WithRootCAs(emu.CertPool()))
		if err != nil {
			t.Fatalf("postman: %v", err)
		}
		s := open(t, u, l, porttest.Policy)
		return replica{store: s, gw: app.New(app.Config{WorkspaceID: cfg.WorkspaceID, Correlation: true, Policy: porttest.Policy},
			client, s, c.clock, system.IDs{}, quiet())}
	}
	c.a, c.b = mk(), mk()
	return c
}

func str(s string) *string { return &s }

func request(msgs ...chat.Message) chat.Request {
	return chat.Request{Model: publicModel, Messages: msgs, Tools: weatherTools,
		ToolChoice: chat.ToolChoice{Mode: chat.ToolChoiceAuto}, ParallelToolCalls: true}
}

// drain reads a turn to its end.
func drain(turn app.Turn) ([]app.Delta, error) { return testkit.Drain(context.Background(), turn) }

// chatTurn runs one whole turn through r.
func chatTurn(r replica, req chat.Request) ([]app.Delta, error) {
	turn, err := r.gw.Chat(context.Background(), principal, req, nil)
	if err != nil {
		return nil, err
	}
	return drain(turn)
}

// echo builds the client's next request: the history, the assistant turn as
// assembled from the deltas, and one result per tool call.
var echo = testkit.Echo

func textOf(ds []app.Delta) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.Text)
	}
	return b.String()
}

func finish(ds []app.Delta) app.FinishReason {
	if len(ds) == 0 {
		return ""
	}
	return ds[len(ds)-1].Finish
}

// toolTurn issues a fresh tool turn through r and returns the continuation
// request that answers it.
func toolTurn(t *testing.T, r replica, query string) chat.Request {
	t.Helper()
	history := []chat.Message{{Role: chat.RoleUser, Content: str(query)}}
	ds, err := chatTurn(r, request(history...))
	if err != nil {
		t.Fatalf("tool turn: %v", err)
	}
	if finish(ds) != app.FinishToolCalls {
		t.Fatalf("tool turn finished with %q", finish(ds))
	}
	return request(echo(history, ds, "sunny")...)
}

func TestAToolCallIssuedThroughOneReplicaIsContinuedThroughTheOther(t *testing.T) {
	is := is.New(t)
	c := newCluster(t, limits)
	history := []chat.Message{{Role: chat.RoleUser, Content: str("weather please #loop=2")}}
	ds, err := chatTurn(c.a, request(history...)) // round 1 issued by A
	is.NoErr(err)
	is.Equal(finish(ds), app.FinishToolCalls)
	history = echo(history, ds, "r1")
	ds, err = chatTurn(c.b, request(history...)) // continued by B, which issues round 2
	is.NoErr(err)
	is.Equal(finish(ds), app.FinishToolCalls)
	history = echo(history, ds, "r2")
	ds, err = chatTurn(c.a, request(history...)) // continued by A
	is.NoErr(err)
	is.Equal(finish(ds), app.FinishStop)
	is.True(strings.Contains(textOf(ds), "get_weather=r2:get_weather")) // the upstream received the results
	is.Equal(c.emu.Count(emulator.KindToolResponse), 2)                 // one dispatch per round
	is.Equal(c.emu.Count(emulator.KindRejected), 0)
	counts, err := c.b.store.Counts(t.Context())
	is.NoErr(err)
	is.Equal(counts.ByState[correlation.Consumed], 2) // both groups consumed, whoever settled them
	checkInvariants(t, c.url, limits)
}

func TestIdenticalContinuationsOverBothReplicasDispatchOnce(t *testing.T) {
	is := is.New(t)
	c := newCluster(t, limits)
	cont := toolTurn(t, c.a, "weather please")
	type outcome struct {
		ds  []app.Delta
		err error
	}
	out := make([]outcome, 32)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ds, err := chatTurn([]replica{c.a, c.b}[i%2], cont)
			out[i] = outcome{ds, err}
		}()
	}
	close(start)
	wg.Wait()
	answered, inflight := 0, 0
	var text string
	for _, o := range out {
		switch {
		case o.err == nil:
			is.Equal(finish(o.ds), app.FinishStop) // the answer, dispatched or replayed from the cache
			if text == "" {
				text = textOf(o.ds)
			}
			is.Equal(textOf(o.ds), text) // every success is the same answer
			answered++
		case errs.CodeOf(o.err) == errs.ContinuationInflight:
			inflight++
		default:
			t.Fatalf("unexpected outcome: %v", o.err)
		}
	}
	is.True(answered >= 1)
	is.Equal(answered+inflight, 32)
	is.Equal(c.emu.Count(emulator.KindToolResponse), 1) // exactly one upstream dispatch
	checkInvariants(t, c.url, limits)
}

func TestAReplicaKilledWhileInflightLeavesTheGroupUncertain(t *testing.T) {
	is := is.New(t)
	c := newCluster(t, limits)
	cont := toolTurn(t, c.a, "weather please")
	turn, err := c.a.gw.Chat(t.Context(), principal, cont, nil) // A claims and dispatches
	is.NoErr(err)
	is.Equal(c.emu.Count(emulator.KindToolResponse), 1)
	c.a.store.Close() // and dies before settling: nothing more reaches the database from A
	t.Cleanup(turn.Close)

	_, err = chatTurn(c.b, cont)
	is.Equal(errs.CodeOf(err), errs.ContinuationInflight) // a retry through B before the deadline: 409

	c.clock.Advance(porttest.Policy.InflightTTL)
	rep, err := c.b.store.Sweep(t.Context(), c.clock.Now())
	is.NoErr(err)
	is.Equal(rep.Uncertain, 1) // B's sweep: UNCERTAIN at the deadline

	_, err = chatTurn(c.b, cont)
	is.Equal(errs.CodeOf(err), errs.ContinuationOutcomeUncertain) // a retry through B: 502
	is.Equal(errs.Public(err).Status, 502)
	is.Equal(c.emu.Count(emulator.KindToolResponse), 1) // never re-sent
	checkInvariants(t, c.url, limits)
}

func TestADatabaseRestartMidRunLosesNothingAndDispatchesNothingTwice(t *testing.T) {
	needCtl(t)
	is := is.New(t)
	c := newCluster(t, limits)
	cont := toolTurn(t, c.a, "weather please") // a PENDING group, issued by A
	done := toolTurn(t, c.a, "time please")    // and one continued before the outage
	ds, err := chatTurn(c.b, done)
	is.NoErr(err)
	is.Equal(finish(ds), app.FinishStop)

	pgctl(t, "halt")
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			pgctl(t, "start")
		}
	})

	_, err = chatTurn(c.b, cont)
	is.Equal(errs.CodeOf(err), errs.CorrelationStoreUnavailable) // continuation during the outage: 503
	is.Equal(errs.Public(err).Status, 503)
	is.True(errs.Public(err).Retryable)
	_, err = chatTurn(c.b, done)
	is.Equal(errs.CodeOf(err), errs.CorrelationStoreUnavailable) // a replay too: the cache is in the database

	ds, err = chatTurn(c.a, request(chat.Message{Role: chat.RoleUser, Content: str("more weather")}))
	is.Equal(errs.CodeOf(err), errs.CorrelationStoreUnavailable) // a new tool turn cannot be admitted
	for _, d := range ds {
		is.True(d.ToolCall == nil) // so no id was shown
	}
	_, err = c.b.store.Sweep(t.Context(), c.clock.Now())
	is.Equal(errs.CodeOf(err), errs.CorrelationStoreUnavailable)
	_, err = c.a.store.Counts(t.Context())
	is.Equal(errs.CodeOf(err), errs.CorrelationStoreUnavailable)
	is.True(errs.Has(c.a.store.Ping(t.Context()), errs.CorrelationStoreUnavailable)) // /health sees it
	is.Equal(c.emu.Count(emulator.KindToolResponse), 1)                              // nothing dispatched during the outage

	pgctl(t, "start")
	restarted = true
	for _, r := range []replica{c.a, c.b} {
		eventually(t, 30*time.Second, func() error { return r.store.Ping(context.Background()) })
	}

	var answer []app.Delta
	eventually(t, 30*time.Second, func() error { // the pending group survived: continue it through B
		ds, err := chatTurn(c.b, cont)
		if errs.Has(err, errs.CorrelationStoreUnavailable) {
			return err // a pooled connection from before the restart; retried as a client would
		}
		is.NoErr(err)
		answer = ds
		return nil
	})
	is.Equal(finish(answer), app.FinishStop)
	again, err := chatTurn(c.a, cont) // a retry through A replays
	is.NoErr(err)
	is.Equal(textOf(again), textOf(answer))
	again, err = chatTurn(c.a, done) // and the group consumed before the outage still replays
	is.NoErr(err)
	is.Equal(finish(again), app.FinishStop)
	is.Equal(c.emu.Count(emulator.KindToolResponse), 2) // one dispatch per group, none twice
	counts, err := c.a.store.Counts(t.Context())
	is.NoErr(err)
	is.Equal(counts.ByState[correlation.Consumed], 2)
	is.Equal(counts.LiveGroups, 0)
	checkInvariants(t, c.url, limits)
}

// TestAContinuationRefusedByTheKeysLimitsWaitsOnTheSharedStore: a key of one
// request a minute and one dispatch a day, a tool loop issued through A. Its
// results, sent through either replica, are refused before dispatch (the
// bucket, then the day, counted on the shared budget row) and the group stays
// PENDING in the database; after the UTC midnight the same results are
// dispatched once, and a retry through the other replica is a replay.
func TestAContinuationRefusedByTheKeysLimitsWaitsOnTheSharedStore(t *testing.T) {
	is := is.New(t)
	c := newCluster(t, limits)
	for _, r := range []replica{c.a, c.b} {
		r.gw.WithUsage(app.NewUsage(r.store.Usage(), c.clock, quiet(), 90))
	}
	p := principal
	p.Limits = usage.Limits{RequestsPerMinute: 1, DispatchesPerDay: 1}
	run := func(r replica, req chat.Request) ([]app.Delta, error) {
		turn, err := r.gw.Chat(context.Background(), p, req, nil)
		if err != nil {
			return nil, err
		}
		return drain(turn)
	}
	c.clock.Advance(11*time.Hour + 55*time.Minute) // 23:55 UTC
	history := []chat.Message{{Role: chat.RoleUser, Content: str("weather please #loop=3")}}
	ds, err := run(c.a, request(history...))
	is.NoErr(err)
	is.Equal(finish(ds), app.FinishToolCalls)
	cont := request(echo(history, ds, "sunny")...)
	pending := func() {
		t.Helper()
		counts, err := c.a.store.Counts(t.Context())
		is.NoErr(err)
		is.Equal(counts.ByState[correlation.Pending], 1) // the group waits in the database, unclaimed
		is.Equal(counts.ByState[correlation.Inflight], 0)
		is.Equal(counts.ByState[correlation.Uncertain], 0)
	}
	for i := range 10 { // both replicas, at once
		_, err = run([]replica{c.a, c.b}[i%2], cont)
		is.True(errs.Has(err, errs.KeyRateLimited))
	}
	pending()
	c.clock.Advance(time.Minute)
	_, err = run(c.b, cont)
	is.True(errs.Has(err, errs.KeyQuotaExhausted)) // a token again; the day is spent
	pending()
	is.Equal(c.emu.Count(emulator.KindToolResponse), 0)
	c.clock.Advance(4 * time.Minute) // the next UTC day
	ds, err = run(c.b, cont)
	is.NoErr(err)
	is.Equal(finish(ds), app.FinishToolCalls)
	is.Equal(c.emu.Count(emulator.KindToolResponse), 1)
	_, err = run(c.a, cont) // the same results again, through the other replica
	is.NoErr(err)
	is.Equal(c.emu.Count(emulator.KindToolResponse), 1) // answered from the cache
	var day int64
	query(t, c.url, `SELECT day_dispatches FROM usage_budgets WHERE slot = 'default'`, &day)
	is.Equal(day, int64(1))
	checkInvariants(t, c.url, limits)
}
