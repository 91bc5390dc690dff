package chat_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/chat"
)

func TestAToolCallSetAssemblesInterleavedDeltasIntoWholeCalls(t *testing.T) {
	is := is.New(t)
	var s chat.ToolCallSet
	for _, d := range []chat.ToolCallDelta{
		{Index: 0, UpstreamID: "a", Name: "get_weather", ArgumentsFragment: `{"city":`},
		{Index: 1, UpstreamID: "pmgate_internal_1", Synthetic: true, UpstreamGroupID: "g", Name: "get_time"},
		{Index: 0, UpstreamID: "a", UpstreamGroupID: "g", ArgumentsFragment: `"Paris"}`},
		{Index: 1, UpstreamID: "pmgate_internal_1", Synthetic: true, UpstreamGroupID: "g", ArgumentsFragment: `{}`},
		{Index: 0, UpstreamID: "a", UpstreamGroupID: "g"},
	} {
		s.Add(d)
	}
	is.Equal(s.Len(), 2)
	calls := s.Calls()
	is.Equal(calls[0].Name, "get_weather")                         // the name of the first delta
	is.Equal(calls[0].Arguments(), `{"city":"Paris"}`)             // fragments in order
	is.Equal(calls[0].Fragments, []string{`{"city":`, `"Paris"}`}) // as the upstream split them, empty ones dropped
	is.Equal(calls[0].UpstreamGroupID, "g")                        // a group id that came later
	is.True(calls[1].Synthetic)                                    // the mark of a call without an upstream id
	is.Equal(calls[1].Arguments(), `{}`)
}

func TestAToolCallSetKeepsEveryFragmentOfEveryCallInOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(t, "calls")
		want := make([]strings.Builder, n)
		var order []int // indexes in the order of their first delta
		seen := map[int]bool{}
		var s chat.ToolCallSet
		for _, i := range rapid.SliceOfN(rapid.IntRange(0, n-1), 1, 30).Draw(t, "deltas") {
			frag := rapid.StringN(0, 4, -1).Draw(t, "fragment")
			if !seen[i] {
				seen[i] = true
				order = append(order, i)
			}
			want[i].WriteString(frag)
			s.Add(chat.ToolCallDelta{Index: i * 7, ArgumentsFragment: frag}) // any ints: the index is the key
		}
		calls := s.Calls()
		if len(calls) != len(order) {
			t.Fatalf("%d calls, want %d", len(calls), len(order))
		}
		for k, c := range calls {
			if c.Index != order[k]*7 || c.Arguments() != want[order[k]].String() {
				t.Fatalf("call %d: index %d arguments %q", k, c.Index, c.Arguments())
			}
		}
	})
}
