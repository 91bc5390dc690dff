package httpapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// normalize replaces the per-response id and creation time with constants.
func normalize(b []byte) []byte {
	b = regexp.MustCompile(`"id":"chatcmpl-[A-Z2-7]{26}"`).ReplaceAll(b, []byte(`"id":"chatcmpl-ID"`))
	return regexp.MustCompile(`"created":[0-9]+`).ReplaceAll(b, []byte(`"created":0`))
}

// golden compares got (normalized) with testdata/name byte for byte, or
// rewrites the file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	got = normalize(got)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update)", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("golden %s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// streamRequest is a valid streaming request, with include_usage when asked.
func streamRequest(includeUsage bool) string {
	if includeUsage {
		return withFields(`,"stream":true,"stream_options":{"include_usage":true}`)
	}
	return withFields(`,"stream":true`)
}

// sseViolations returns every streaming rule of docs/API.md (numbered as there) the raw stream
// breaks; none means the stream is one the official SDKs accept.
func sseViolations(raw string, includeUsage bool) []string {
	var v []string
	bad := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }
	if !strings.HasSuffix(raw, "\n\n") {
		bad("rule 1: the stream does not end with a blank line")
	}
	blocks := strings.Split(strings.TrimSuffix(raw, "\n\n"), "\n\n")
	var (
		id, created         string
		chunks, usageChunks int
		done, failed        bool
		finishes            []string
		finishedAt          = -1
		calls               = map[int64]bool{}
		anyCall             bool
	)
	for i, b := range blocks {
		if strings.Contains(b, "\n") || !strings.HasPrefix(b, "data: ") {
			bad("rule 1: event %d is not one data: line", i)
			continue
		}
		payload := strings.TrimPrefix(b, "data: ")
		if done || failed {
			bad("rules 5/7: event %d after [DONE] or an error event", i)
		}
		if payload == "[DONE]" {
			done = true
			continue
		}
		var c map[string]json.RawMessage
		if err := json.Unmarshal([]byte(payload), &c); err != nil {
			bad("rule 1: event %d is not JSON", i)
			continue
		}
		if e, ok := c["error"]; ok {
			var eo map[string]json.RawMessage
			_ = json.Unmarshal(e, &eo)
			if len(c) != 1 || len(eo) != 4 || eo["message"] == nil || eo["type"] == nil || eo["param"] == nil || eo["code"] == nil {
				bad("rule 6/7: event %d carries an error key but is not an error event with four keys", i)
			}
			if chunks == 0 {
				bad("rule 7: an error event before any chunk should have been a JSON error")
			}
			failed = true
			continue
		}
		if string(c["object"]) != `"chat.completion.chunk"` {
			bad("event %d is not a chat.completion.chunk", i)
		}
		if chunks == 0 {
			id, created = string(c["id"]), string(c["created"])
		} else if string(c["id"]) != id || string(c["created"]) != created {
			bad("rule 2: event %d has another id or created", i)
		}
		var choices []map[string]json.RawMessage
		_ = json.Unmarshal(c["choices"], &choices)
		usage, hasUsage := c["usage"]
		switch {
		case includeUsage && !hasUsage:
			bad("rule 5: event %d lacks the usage key", i)
		case !includeUsage && hasUsage && string(usage) != "null":
			bad("rule 5: event %d has usage without include_usage", i)
		}
		if len(choices) == 0 {
			usageChunks++
			if !includeUsage {
				bad("rule 5: event %d is a usage chunk without include_usage", i)
			}
			if finishedAt < 0 {
				bad("rule 5: the usage chunk (event %d) comes before the finish", i)
			}
			chunks++
			continue
		}
		if hasUsage && string(usage) != "null" {
			bad("rule 5: choice chunk %d has a non-null usage", i)
		}
		if usageChunks > 0 {
			bad("rule 5: choice chunk %d after the usage chunk", i)
		}
		ch := choices[0]
		var d map[string]json.RawMessage
		_ = json.Unmarshal(ch["delta"], &d)
		_, hasRole := d["role"]
		switch {
		case chunks == 0 && string(d["role"]) != `"assistant"`:
			bad("rule 2: the first chunk is not the role delta")
		case chunks > 0 && hasRole:
			bad("rule 2: chunk %d repeats the role", i)
		}
		if finishedAt >= 0 {
			bad("rule 4: choice chunk %d after the finish_reason", i)
		}
		if fr := string(ch["finish_reason"]); fr != "null" {
			finishes = append(finishes, fr)
			finishedAt = i
		}
		var tcs []map[string]json.RawMessage
		_ = json.Unmarshal(d["tool_calls"], &tcs)
		for _, tc := range tcs {
			idx, ok := tc["index"]
			if !ok {
				bad("rule 3: a tool call delta in event %d has no index", i)
				continue
			}
			var n int64
			_ = json.Unmarshal(idx, &n)
			var fn map[string]json.RawMessage
			_ = json.Unmarshal(tc["function"], &fn)
			_, hasID := tc["id"]
			_, hasType := tc["type"]
			_, hasName := fn["name"]
			if !calls[n] {
				calls[n], anyCall = true, true
				if !hasID || string(tc["type"]) != `"function"` || !hasName {
					bad("rule 3: the first delta of call %d lacks id, type or name", n)
				}
			} else if hasID || hasType || hasName {
				bad("rule 3: a later delta of call %d repeats id, type or name", n)
			}
		}
		chunks++
	}
	switch {
	case failed:
		if len(finishes) > 0 || done {
			bad("rule 7: a failed stream shows a finish_reason or [DONE]")
		}
	default:
		if !done {
			bad("rule 5: a successful stream lacks [DONE]")
		}
		if len(finishes) != 1 {
			bad("rule 4: %d finish_reasons instead of one", len(finishes))
		} else if want := map[bool]string{true: `"tool_calls"`, false: `"stop"`}[anyCall]; finishes[0] != want {
			bad("rule 4: finish_reason %s, want %s", finishes[0], want)
		}
		if includeUsage && usageChunks != 1 {
			bad("rule 5: %d usage chunks instead of one", usageChunks)
		}
	}
	return v
}

// argumentsOf concatenates the argument fragments of each call index.
func argumentsOf(t *testing.T, raw string) map[int]string {
	t.Helper()
	out := map[int]string{}
	for _, b := range strings.Split(raw, "\n\n") {
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index    int
						Function struct{ Arguments string }
					} `json:"tool_calls"`
				}
			}
		}
		if json.Unmarshal([]byte(strings.TrimPrefix(b, "data: ")), &c) != nil {
			continue
		}
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				out[tc.Index] += tc.Function.Arguments
			}
		}
	}
	return out
}

func TestStreamOfTextFollowsTheRulesAndTheGolden(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "Hel"}, app.Delta{Text: "lo <&>"}, app.Delta{Finish: app.FinishStop}), nil))
	rec := post(h, streamRequest(false))
	is.Equal(rec.Code, http.StatusOK)                                // streamed
	is.Equal(rec.Header().Get("Content-Type"), "text/event-stream")  // as an event stream
	is.Equal(rec.Header().Get("Cache-Control"), "no-cache")          // uncached
	is.Equal(sseViolations(rec.Body.String(), false), []string(nil)) // every streaming rule holds
	golden(t, "stream_text.sse", rec.Body.Bytes())
}

func TestStreamOfTwoParallelToolCallsFollowsTheRulesAndTheGolden(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(
		app.Delta{ToolCall: &app.ToolCallDelta{Index: 0, ID: "call_pmn_AAAA", Name: "get_weather"}},
		app.Delta{ToolCall: &app.ToolCallDelta{Index: 1, ID: "call_pmn_BBBB", Name: "get_time", Arguments: `{"tz":`}},
		app.Delta{ToolCall: &app.ToolCallDelta{Index: 0, Arguments: `{"city":`}},
		app.Delta{ToolCall: &app.ToolCallDelta{Index: 0, Arguments: `"Paris"}`}},
		app.Delta{ToolCall: &app.ToolCallDelta{Index: 1, Arguments: `"UTC"}`}},
		app.Delta{Finish: app.FinishToolCalls},
	), nil))
	rec := post(h, streamRequest(false))
	is.Equal(sseViolations(rec.Body.String(), false), []string(nil)) // every streaming rule holds
	args := argumentsOf(t, rec.Body.String())
	is.Equal(args[0], `{"city":"Paris"}`) // call 0's fragments concatenate to its arguments
	is.Equal(args[1], `{"tz":"UTC"}`)     // and call 1's to its own
	golden(t, "stream_tool_calls.sse", rec.Body.Bytes())
}

func TestStreamWithIncludeUsageEndsWithOneUsageChunk(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	u := &chat.Usage{PromptTokens: i64(9), CompletionTokens: i64(2), TotalTokens: i64(11)}
	h, _ := newServer(t, returning(script(app.Delta{Text: "Hi"}, app.Delta{Finish: app.FinishStop, Usage: u}), nil))
	rec := post(h, streamRequest(true))
	is.Equal(sseViolations(rec.Body.String(), true), []string(nil)) // every streaming rule holds
	golden(t, "stream_include_usage.sse", rec.Body.Bytes())
}

func TestStreamWithIncludeUsageSendsNullUsageWhenNoneWasReported(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "Hi"}, app.Delta{Finish: app.FinishStop}), nil),
		func(c *httpapi.Config) { c.UsageEstimatesOff = true })
	rec := post(h, streamRequest(true))
	is.Equal(sseViolations(rec.Body.String(), true), []string(nil))                                   // every streaming rule holds
	is.True(strings.Contains(rec.Body.String(), `"choices":[],"usage":null}`+"\n\ndata: [DONE]\n\n")) // estimates off: the usage chunk is still sent, with null
	is.Equal(rec.Header().Get("x-pmgate-usage"), "unreported")
}

func TestStreamWithIncludeUsageSendsAnEstimateWhenNoneWasReported(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "Hi"}, app.Delta{Finish: app.FinishStop}), nil))
	rec := post(h, streamRequest(true))
	is.Equal(sseViolations(rec.Body.String(), true), []string(nil))
	is.True(strings.Contains(rec.Body.String(), `"choices":[],"usage":{"prompt_tokens":`)) // an estimate
	is.Equal(rec.Header().Get("x-pmgate-usage"), "estimated")                              // marked as one
}

func TestStreamFailureAfterHeadersIsOneErrorEvent(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "Hel"}, errs.New(errs.UpstreamCompletionAmbiguous)), nil))
	rec := post(h, streamRequest(true))
	is.Equal(rec.Code, http.StatusOK)                               // the headers were already sent
	is.Equal(sseViolations(rec.Body.String(), true), []string(nil)) // no finish_reason, no [DONE]
	golden(t, "stream_failure_after_headers.sse", rec.Body.Bytes())
}

func TestStreamErrorBeforeAnyDeltaIsAPlainJSONError(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(errs.New(errs.UpstreamAuthFailed)), nil))
	rec := post(h, streamRequest(false))
	is.Equal(rec.Code, http.StatusBadGateway)                      // the failure's own status
	is.Equal(rec.Header().Get("Content-Type"), "application/json") // as JSON, not as an event stream
	is.Equal(rec.Header().Get("x-should-retry"), "false")          // deterministic
	golden(t, "stream_error_before_delta.json", rec.Body.Bytes())
}

func TestStreamWithOnlyAFinishStillSendsTheRoleDelta(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Finish: app.FinishStop}), nil))
	rec := post(h, streamRequest(false))
	is.Equal(sseViolations(rec.Body.String(), false), []string(nil)) // role delta, finish, [DONE]
}

func TestStreamTurnEndingWithoutAFinishFailsAfterHeaders(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "looks complete"}), nil))
	rec := post(h, streamRequest(false))
	is.Equal(sseViolations(rec.Body.String(), false), []string(nil))        // a failed stream by the rules
	is.True(strings.Contains(rec.Body.String(), `"code":"internal_error"`)) // an unproven end is an error event
	is.True(!strings.Contains(rec.Body.String(), "[DONE]"))                 // never a success
}

func TestStreamNeverShowsAFinishBeforeTheTurnProvesTheEnd(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "x", Finish: app.FinishStop}, errs.New(errs.UpstreamDataAfterDone)), nil))
	rec := post(h, streamRequest(false))
	is.Equal(sseViolations(rec.Body.String(), false), []string(nil))                  // a failed stream by the rules
	is.True(!strings.Contains(rec.Body.String(), `"finish_reason":"stop"`))           // the finish waits for io.EOF
	is.True(strings.Contains(rec.Body.String(), `"code":"upstream_data_after_done"`)) // the late failure is reported
}

// flushRecorder records the body at every flush.
type flushRecorder struct {
	*httptest.ResponseRecorder
	flushes []int
}

func (f *flushRecorder) Flush() {
	f.ResponseRecorder.Flush()
	f.flushes = append(f.flushes, f.Body.Len())
}

// Every event is written before the turn waits for the upstream again, never
// later: the role chunk with the first delta (one write), a delta that came
// in an upstream read of its own on its own, and the end (finish chunk,
// [DONE]) in one last write after the proven end, which is not flushed:
// net/http sends it with the terminating chunk when the handler returns.
// Every write ends at an event boundary.
func TestEveryEventIsWrittenBeforeTheTurnWaits(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "a"}, app.Delta{Text: "b"}, app.Delta{Finish: app.FinishStop}), nil))
	rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	h.ServeHTTP(rec, chatRequest(streamRequest(false)))
	body := rec.Body.String()
	is.Equal(len(rec.flushes), 2) // the first delta, the second; the end is the handler's last write
	for _, at := range append(rec.flushes, len(body)) {
		is.Equal(body[at-2:at], "\n\n") // each write ends exactly at an event boundary
	}
	first, second, end := body[:rec.flushes[0]], body[rec.flushes[0]:rec.flushes[1]], body[rec.flushes[1]:]
	is.Equal(strings.Count(first, "\n\n"), 2) // the role chunk and the first delta
	is.True(strings.Contains(first, `"role":"assistant"`) && strings.Contains(first, `"content":"a"`))
	is.Equal(strings.Count(second, "\n\n"), 1) // the second delta alone, when it arrived
	is.True(strings.Contains(second, `"content":"b"`))
	is.Equal(strings.Count(end, "\n\n"), 2) // the finish chunk and [DONE]
	is.True(strings.Contains(end, `"finish_reason":"stop"`) && strings.HasSuffix(end, "data: [DONE]\n\n"))
}

// Deltas that came in one upstream read reach the client in one write: the
// stream waits for nothing that has not arrived, and writes no more often
// than the upstream delivers.
func TestDeltasThatArriveTogetherAreWrittenTogether(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(script(app.Delta{Text: "a"}, together, app.Delta{Text: "b"}, together, app.Delta{Text: "c"},
		app.Delta{Text: "d"}, app.Delta{Finish: app.FinishStop}), nil))
	rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
	h.ServeHTTP(rec, chatRequest(streamRequest(false)))
	body := rec.Body.String()
	is.Equal(len(rec.flushes), 2) // a+b+c, d; then the end
	first, second := body[:rec.flushes[0]], body[rec.flushes[0]:rec.flushes[1]]
	is.Equal(strings.Count(first, "\n\n"), 4) // the role chunk and three deltas
	is.True(strings.Contains(first, `"content":"a"`) && strings.Contains(first, `"content":"c"`))
	is.True(strings.Contains(second, `"content":"d"`) && !strings.Contains(second, `"content":"c"`))
	is.Equal(sseViolations(body, false), []string(nil)) // still a good stream by the rules
}

func TestRuleCheckerCatchesBrokenStreams(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	role := `data: {"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	stop := `data: {"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n"
	done := "data: [DONE]\n\n"
	is.Equal(sseViolations(role+stop+done, false), []string(nil))                                                       // a minimal good stream passes
	is.True(sseViolations(role+stop, false) != nil)                                                                     // a missing [DONE] is caught
	is.True(sseViolations(stop+done, false) != nil)                                                                     // a missing role delta is caught
	is.True(sseViolations(role+stop+stop+done, false) != nil)                                                           // two finishes are caught
	is.True(sseViolations(strings.Replace(role, `"created":1`, `"created":2`, 1)+stop+done, false) != nil)              // a changing created is caught
	is.True(sseViolations(strings.Replace(role, `"model":"m"`, `"model":"m","error":null`, 1)+stop+done, false) != nil) // an error key on a chunk is caught
	noIndex := `data: {"id":"a","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":""}}]},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	is.True(sseViolations(role+noIndex+strings.Replace(stop, "stop", "tool_calls", 1)+done, false) != nil) // a tool call without index is caught
	is.True(sseViolations(role+stop+done, true) != nil)                                                    // a missing usage chunk is caught
	is.True(sseViolations("event: x\n"+role+stop+done, false) != nil)                                      // an event: line is caught
}

// The Responses and Messages streams write as the chat stream does: what the
// turn knows before it waits again goes in one write, every write ends at an
// event boundary, and the end is one write.
func TestNamedEventStreamsWriteBeforeTheTurnWaits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		req  func() *http.Request
		// the first write: the opening events and the first delta; the
		// second: the second delta alone
		first, second []string
		last          string
	}{
		{"responses", func() *http.Request { return respRequest(`{"model":"` + model + `","input":"hi","stream":true}`) },
			[]string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.delta"},
			[]string{"response.output_text.delta"}, "response.completed"},
		{"messages", func() *http.Request { return msgRequest(msgBody(userHi, `,"stream":true`)) },
			[]string{"message_start", "content_block_start", "content_block_delta"},
			[]string{"content_block_delta"}, "message_stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			h, _ := newServer(t, returning(script(app.Delta{Text: "a"}, app.Delta{Text: "b"}, app.Delta{Finish: app.FinishStop}), nil))
			rec := &flushRecorder{ResponseRecorder: httptest.NewRecorder()}
			h.ServeHTTP(rec, tc.req())
			body := rec.Body.String()
			is.Equal(len(rec.flushes), 2) // the first delta, the second; the end is the handler's last write
			names := func(part string) (out []string) {
				for _, l := range strings.Split(part, "\n") {
					if n, ok := strings.CutPrefix(l, "event: "); ok {
						out = append(out, n)
					}
				}
				return out
			}
			prev := 0
			for _, at := range append(rec.flushes, len(body)) {
				is.Equal(body[at-2:at], "\n\n") // each write ends at an event boundary
				is.True(at > prev)              // and writes something
				prev = at
			}
			is.Equal(names(body[:rec.flushes[0]]), tc.first)
			is.Equal(names(body[rec.flushes[0]:rec.flushes[1]]), tc.second)
			end := names(body[rec.flushes[1]:])
			is.Equal(end[len(end)-1], tc.last) // the end is the last write
		})
	}
}
