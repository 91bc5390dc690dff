//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// The long session's checks find what issue 34 forbids, in every form a
// TOOL_RESPONSE carries its call ids, and stay quiet on a clean session.
func TestLongSessionProblems(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	uq := func(q string) emulator.Request {
		return emulator.Request{ChatType: emulator.KindUserQuery, Body: []byte(`{"input":{"query":"` + q + `"}}`)}
	}
	tr := func(input string) emulator.Request {
		return emulator.Request{ChatType: emulator.KindToolResponse, Body: []byte(`{"input":` + input + `}`)}
	}
	flat := tr(`{"toolCallId":"a","toolResponse":"out"}`)
	grouped := tr(`{"toolResponses":[{"toolCallId":"b"},{"toolCallId":"c"}]}`)
	packed := tr(`{"toolCallId":"d","toolResponse":"[{\"toolCallId\":\"d\"},{\"toolCallId\":\"e\"}]"}`)
	clean := []emulator.Request{uq("hello"), flat, grouped, packed}
	is.Equal(longSessionProblems(clean, `{"msg":"request","path":"/v1/responses","status":200}`), nil) // nothing to report

	cases := map[string][]emulator.Request{
		"dispatched twice": append(clean, tr(`{"toolCallId":"a","toolResponse":"out"}`)),
		"c was dispatched": append(clean, tr(`{"toolResponses":[{"toolCallId":"c"}]}`)),
		"e was dispatched": append(clean, tr(`{"toolCallId":"x","toolResponse":"[{\"toolCallId\":\"x\"},{\"toolCallId\":\"e\"}]"}`)),
		"over the default": append(clean, uq(strings.Repeat("q", 10_001))),
		"emulator refused": append(clean, emulator.Request{ChatType: emulator.KindUserQuery, Refusal: "query_too_long"}),
	}
	for want, rs := range cases {
		got := strings.Join(longSessionProblems(rs, ""), "\n")
		is.True(strings.Contains(got, want)) // each defect is named
	}
	got := longSessionProblems(clean, `{"msg":"request","path":"/v1/responses","status":400,"code":"upstream_query_too_long"}`)
	is.Equal(len(got), 1) // a turn refused as too long by the gateway
}
