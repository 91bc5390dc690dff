package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
)

// v0Cached is a cached answer exactly as releases before the versioned format
// wrote it: json.Marshal of the untagged []app.Delta.
const v0Cached = `[{"Text":"Checking. ","ToolCall":null,"Finish":"","Usage":null},` +
	`{"Text":"","ToolCall":{"Index":0,"ID":"call_pmn_AAAA","Name":"get_weather","Arguments":"{\"city\":"},"Finish":"","Usage":null},` +
	`{"Text":"","ToolCall":{"Index":0,"ID":"","Name":"","Arguments":"\"Paris\"}"},"Finish":"","Usage":null},` +
	`{"Text":"","ToolCall":null,"Finish":"tool_calls","Usage":{"PromptTokens":3,"CompletionTokens":5,"TotalTokens":null}}]`

func v0Deltas() []app.Delta {
	p, c := int64(3), int64(5)
	return []app.Delta{
		{Text: "Checking. "},
		{ToolCall: &app.ToolCallDelta{Index: 0, ID: "call_pmn_AAAA", Name: "get_weather", Arguments: `{"city":`}},
		{ToolCall: &app.ToolCallDelta{Index: 0, Arguments: `"Paris"}`}},
		{Finish: app.FinishToolCalls, Usage: &chat.Usage{PromptTokens: &p, CompletionTokens: &c}},
	}
}

// consumedGroup runs one tool round and its continuation, and returns the
// continuation request (to submit again) and the key of its consumed group.
func consumedGroup(t *testing.T, r *rig) (chat.Request, string) {
	t.Helper()
	is := is.New(t)
	history := []chat.Message{{Role: chat.RoleUser, Content: str("go")}}
	turn, err := r.gw.Chat(t.Context(), principal, request(history...), nil)
	is.NoErr(err)
	ds, err := drain(t, turn)
	is.NoErr(err)
	cont := request(echo(history, ds, "r")...)
	turn, err = r.gw.Chat(t.Context(), principal, cont, nil)
	is.NoErr(err)
	_, err = drain(t, turn)
	is.NoErr(err)
	id := cont.Messages[len(cont.Messages)-1].ToolCallID
	keys, err := r.store.Resolve(t.Context(), principal.ID, []string{id})
	is.NoErr(err)
	is.True(keys[id] != "") // the consumed group is still stored
	return cont, keys[id]
}

// storeCached replaces the cached answer of a group, as another release of
// the gateway sharing the store would have written it.
func storeCached(t *testing.T, r *rig, key, cached string) {
	t.Helper()
	_, err := r.store.Update(t.Context(), key, func(g *correlation.Group) (correlation.Decision, error) {
		g.CachedResponse = []byte(cached)
		return correlation.Decision{}, nil
	})
	is.New(t).NoErr(err)
}

func TestACachedAnswerOfThePreviousReleaseStillReplays(t *testing.T) {
	is := is.New(t)
	r := newRig(t, toolLoop(1))
	cont, key := consumedGroup(t, r)
	storeCached(t, r, key, v0Cached)
	turn, err := r.gw.Chat(t.Context(), principal, cont, nil)
	is.NoErr(err) // the unversioned bytes are read
	got, err := drain(t, turn)
	is.NoErr(err)
	is.Equal(got, v0Deltas())         // as the answer they recorded
	is.Equal(r.up.Continuations(), 1) // and nothing was sent again
}

func TestACachedAnswerOfANewerReleaseIsRefusedAsSuchNotAsConsumed(t *testing.T) {
	is := is.New(t)
	r := newRig(t, toolLoop(1))
	cont, key := consumedGroup(t, r)
	storeCached(t, r, key, `{"v":2,"deltas":[{"finish":"stop"}]}`)
	_, err := r.gw.Chat(t.Context(), principal, cont, nil)
	is.Equal(errs.CodeOf(err), errs.ReplayFormatUnsupported) // a rolling deploy says so
	is.True(errs.MustEntry(errs.ReplayFormatUnsupported).Retryable)
	is.Equal(r.up.Continuations(), 1) // and nothing was sent again
}

func TestTheCachedAnswerIsAVersionedTaggedRecord(t *testing.T) {
	is := is.New(t)
	b, err := app.EncodeReplay(v0Deltas())
	is.NoErr(err)
	var rec map[string]json.RawMessage
	is.NoErr(json.Unmarshal(b, &rec))
	is.Equal(string(rec["v"]), "1")                                            // versioned
	is.True(strings.Contains(string(rec["deltas"]), `"tool_call":{"index":0`)) // with tagged members
	is.True(!strings.Contains(string(b), "ToolCall"))                          // not Go field names
	got, err := app.DecodeReplay(b)
	is.NoErr(err)
	is.Equal(got, v0Deltas()) // it reads back as written
}

func TestCachedBytesThatAreNoAnswerAreAConsumedGroupWithoutOne(t *testing.T) {
	for name, cached := range map[string]string{
		"garbage":          `not json`,
		"empty array":      `[]`,
		"no finish":        `[{"Text":"a"}]`,
		"v1 no finish":     `{"v":1,"deltas":[{"text":"a"}]}`,
		"v1 unknown field": `{"v":1,"deltas":[{"finish":"stop","reasoning":"x"}]}`,
		"no version":       `{"deltas":[{"finish":"stop"}]}`,
		"trailing data":    `{"v":1,"deltas":[{"finish":"stop"}]} {}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := app.DecodeReplay([]byte(cached))
			is.New(t).Equal(errs.CodeOf(err), errs.ToolCallAlreadyConsumed)
		})
	}
	for _, v := range []string{"0", "2", "-1", "100"} {
		_, err := app.DecodeReplay([]byte(`{"v":` + v + `,"deltas":[{"finish":"stop"}]}`))
		is.New(t).Equal(errs.CodeOf(err), errs.ReplayFormatUnsupported) // every version but 1 as an object
	}
}

func TestEveryTurnReadsBackFromItsCachedAnswer(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 6).Draw(t, "n")
		var ds []app.Delta
		for i := 0; i < n; i++ {
			if rapid.Bool().Draw(t, "tool") {
				ds = append(ds, app.Delta{ToolCall: &app.ToolCallDelta{
					Index: rapid.IntRange(0, 3).Draw(t, "index"), ID: rapid.String().Draw(t, "id"),
					Name: rapid.String().Draw(t, "name"), Arguments: rapid.String().Draw(t, "args"),
				}})
			} else {
				ds = append(ds, app.Delta{Text: rapid.String().Draw(t, "text")})
			}
		}
		final := app.Delta{Finish: rapid.SampledFrom([]app.FinishReason{app.FinishStop, app.FinishToolCalls}).Draw(t, "finish")}
		if rapid.Bool().Draw(t, "usage") {
			u := chat.Usage{}
			if rapid.Bool().Draw(t, "prompt") {
				v := rapid.Int64Min(0).Draw(t, "p")
				u.PromptTokens = &v
			}
			if rapid.Bool().Draw(t, "total") {
				v := rapid.Int64Min(0).Draw(t, "t")
				u.TotalTokens = &v
			}
			final.Usage = &u
		}
		ds = append(ds, final)
		b, err := app.EncodeReplay(ds)
		if err != nil {
			t.Fatal(err)
		}
		got, err := app.DecodeReplay(b)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if len(got) != len(ds) {
			t.Fatalf("got %d deltas, want %d", len(got), len(ds))
		}
		want, _ := json.Marshal(ds) // the untagged form compares every field
		have, _ := json.Marshal(got)
		if string(want) != string(have) {
			t.Fatalf("got %s, want %s", have, want)
		}
	})
}
