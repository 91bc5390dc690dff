package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// capacityStores are the two stores the per-key share is tested on: memory,
// and PostgreSQL when PMGATE_PG_URL is set.
func capacityStores(t *testing.T, name string) map[string]string {
	t.Helper()
	if name == "memory" {
		return map[string]string{}
	}
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return map[string]string{"CORRELATION_STORE": "postgres", "CORRELATION_POSTGRES_URL": pgSchema(t),
		"CORRELATION_PRINCIPAL_KEY": base64.RawURLEncoding.EncodeToString(k)}
}

// TestOneKeysPendingToolCallsNeverRefuseAnotherKeysTurn is the attacker's
// side of the per-key share: five groups of capacity, four per key. Bob
// fills his share with tool calls he never answers; his next tool turn is
// refused before it is sent, naming his share, with a Retry-After until his
// first group expires; Alice's tool turn succeeds, and none of Bob's groups
// was evicted for it.
func TestOneKeysPendingToolCallsNeverRefuseAnotherKeysTurn(t *testing.T) {
	for _, store := range []string{"memory", "postgres"} {
		t.Run(store, func(t *testing.T) {
			is := is.New(t)
			env := capacityStores(t, store)
			env["CORRELATION_MAX_GROUPS"], env["CORRELATION_MAX_GROUPS_PER_KEY"] = "5", "4"
			s, _, keys := slotsServe(t, "access_token", env, []string{"--id", "bob"}, []string{"--id", "alice"})
			for i := range 4 {
				pendingAs(t, s, "bob's abandoned call "+strconv.Itoa(i), keys["bob"])
			}
			before := s.emu.Count(emulator.KindUserQuery)
			resp := s.post(t, chatBody(t, testModel, []msg{{"role": "user", "content": "one more"}}, toolsJSON, ""), bearer(keys["bob"])...)
			var e errorBody
			is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
			resp.Body.Close()
			is.Equal(resp.StatusCode, 503)                                             // bob is over his own share
			is.Equal(e.Error.Code, "correlation_capacity_exceeded")                    // with the stable code
			is.True(strings.Contains(e.Error.Message, "share of 4"))                   // naming the key's share
			ra, _ := strconv.Atoi(resp.Header.Get("retry-after"))                      //
			is.True(ra > 800 && ra <= 900)                                             // until his first group's pending TTL ends
			is.Equal(s.emu.Count(emulator.KindUserQuery), before)                      // refused before it was sent
			_, _, c := pendingAs(t, s, "alice's turn", keys["alice"])                  // alice's tool turn succeeds
			is.Equal(c.Choices[0].FinishReason, "tool_calls")                          // with its calls
			health := healthOf(t, s)                                                   //
			is.Equal(health["live_groups"], float64(5))                                // all of bob's groups still pending, and alice's
			is.Equal(health["groups_by_state"], map[string]any{"PENDING": float64(5)}) // none evicted
		})
	}
}

// TestAClientThatMovesOnFreesItsGroupAtOnce: a key whose share is one group
// issues a tool call and, instead of answering it, goes on with a new user
// message in the same conversation. The group is cancelled before that turn
// asks for room (row C28), so the turn is admitted at once rather than
// refused until the pending TTL; the old calls' results then answer 409
// tool_call_cancelled, and a client that answers its calls is never touched.
func TestAClientThatMovesOnFreesItsGroupAtOnce(t *testing.T) {
	for _, store := range []string{"memory", "postgres"} {
		t.Run(store, func(t *testing.T) {
			is := is.New(t)
			env := capacityStores(t, store)
			env["CORRELATION_MAX_GROUPS"], env["CORRELATION_MAX_GROUPS_PER_KEY"] = "4", "1"
			s := serve(t, "access_token", env)
			history, cont, c := pending(t, s, "weather in Paris?")
			echoed := cont[:len(history)+1] // the user message and the assistant's calls, unanswered
			moved := append(append([]msg(nil), echoed...), msg{"role": "user", "content": "never mind: weather in Rome?"})
			status, c2, e := turnResult(t, s, chatBody(t, testModel, moved, toolsJSON, ""))
			is.Equal(status, 200)                                // admitted: the moved-past group freed the key's share
			is.Equal(c2.Choices[0].FinishReason, "tool_calls")   // a new group
			is.True(e.Error.Code == "")                          //
			health := healthOf(t, s)                             //
			is.Equal(health["live_groups"], float64(1))          // only the new group is live
			states := health["groups_by_state"].(map[string]any) //
			is.Equal(states["CANCELLED"], float64(1))            // the old one is cancelled
			// metrics count inline: the cancel is counted by its declared row
			// when the answer is written, with no wait for a subscriber
			is.Equal(value(scrapeWithKey(t, s), "pmgate_correlation_transitions_total", "row", "C28"), float64(1))
			status, _, e = turnResult(t, s, chatBody(t, testModel, cont, toolsJSON, ""))
			is.Equal(status, 409)                         // the old calls' results come too late
			is.Equal(e.Error.Code, "tool_call_cancelled") // and say why

			// The new group's own continuation, and a re-send of it, follow
			// their own rules: the results are answered, never cancelled.
			cont2 := append(append([]msg(nil), moved...), assistantAndResults(c2, sunny)...)
			status, _, _ = turnResult(t, s, chatBody(t, testModel, cont2, toolsJSON, ""))
			is.Equal(status, 200) // the continuation is dispatched
			status, _, _ = turnResult(t, s, chatBody(t, testModel, cont2, toolsJSON, ""))
			is.Equal(status, 200) // its re-send gets the cached answer
			is.Equal(s.emu.Count(emulator.KindToolResponse), 1)
			is.Equal(value(scrapeWithKey(t, s), "pmgate_correlation_transitions_total", "row", "C28"), 1.0) // nothing else was cancelled
			_ = c
		})
	}
}

// healthOf returns the correlation section of /health.
func healthOf(t *testing.T, s *served) map[string]any {
	t.Helper()
	h, err := http.Get(s.base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Body.Close()
	var health map[string]any
	if err := json.NewDecoder(h.Body).Decode(&health); err != nil {
		t.Fatal(err)
	}
	return health["correlation"].(map[string]any)
}
