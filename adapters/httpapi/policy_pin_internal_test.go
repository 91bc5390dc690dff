package httpapi

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi/chatapi"
	"github.com/pmgate/pmgate/adapters/httpapi/gemapi"
	"github.com/pmgate/pmgate/adapters/httpapi/msgapi"
	"github.com/pmgate/pmgate/adapters/httpapi/respapi"
	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/domain/errs"
)

var updatePolicyPin = flag.Bool("update-policy-pin", false, "rewrite testdata/policy_pin.golden")

// pinValues are the values every policy field is tried with: each kind, the
// integers at and around the defaults, integral and fractional floats, and
// the words some fields know.
var pinValues = []string{
	`null`, `true`, `false`, `0`, `1`, `2`, `-1`, `1.5`, `2.0`, `1e3`, `9007199254740993`, `1e400`,
	`""`, `"x"`, `"a\u00e9\"b"`, `{ "a" : [ 1 ] }`, `"text"`, `"auto"`, `"disabled"`, `"low"`, `"high"`, `"xhigh"`, `"minimal"`, `"none"`,
	`[]`, `["text"]`, `["audio"]`, `["text","audio"]`, `[1]`, `[null]`, `[["text"]]`, `{}`, `{"a":1}`, `{"a":null}`,
}

// pinObjects are the shapes of the object fields whose members are read.
var pinObjects = map[string][]string{
	"text": {`{"verbosity":1}`, `{"verbosity":null}`, `{"verbosity":"low"}`, `{"format":null}`, `{"format":1}`,
		`{"format":[]}`, `{"format":{}}`, `{"format":{"type":1}}`, `{"format":{"type":"bogus"}}`, `{"format":{"type":"text"}}`,
		`{"format":{"type":"json_object"}}`, `{"format":{"type":"json_schema"}}`, `{"format":{"type":"json_schema","name":1}}`,
		`{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}}`,
		`{"format":{"type":"json_schema","name":"n","description":1,"schema":{"type":"object"}}}`,
		`{"format":{"type":"json_schema","name":"n","schema":[]}}`, `{"format":{"type":"json_schema","name":"n","strict":"x"}}`,
		`{"verbosity":2,"format":{"type":1}}`, `{"format":{"type":"text"},"verbosity":[]}`, `{"other":1}`},
	"reasoning": {`{"effort":null}`, `{"effort":1}`, `{"effort":"low"}`, `{"effort":"max"}`, `{"effort":"bogus"}`,
		`{"summary":"auto"}`, `{"effort":"medium","summary":"auto"}`},
	"logit_bias":     {`{"50256":-100}`},
	"modalities":     {`["text","text"]`, `[1,"audio"]`, `["audio",1]`},
	"stream_options": {`{"include_usage":true}`, `{"include_usage":1}`},
	"response_format": {`{"type":"text"}`, `{"type":1}`, `{"type":"bogus"}`, `{"type":"json_object"}`, `{"type":"json_schema"}`,
		`{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object"}}}`},
	"thinking": {`{"type":"enabled","budget_tokens":1024}`, `{"type":"enabled","budget_tokens":0}`, `{"type":"enabled","budget_tokens":1.5}`,
		`{"type":"enabled"}`, `{"type":"disabled"}`, `{"type":"adaptive"}`, `{"type":1}`, `{"type":"bogus"}`},
	"output_config": {`{"effort":"low"}`, `{"effort":1}`, `{"effort":"bogus"}`, `{"format":{"type":"json_schema","schema":{"type":"object"}}}`,
		`{"format":{"type":"json_schema"}}`, `{"format":1}`},
}

// pinAPI is one API's decode over a body with one field set.
type pinAPI struct {
	name   string
	fields []string
	body   func(field, value string) string
	decode func(s *server, body []byte) (string, error)
}

// TestFieldPolicyRefusalsArePinned pins every refusal of the shared field
// policy (and the members it reads in objects) word for word: code, param
// and message of each field tried with each kind and edge value, in the four
// APIs, and what the Responses API echoes of an accepted one. The golden file
// was written before the policy's readers were typed, so that changing them
// cannot change a word.
func TestFieldPolicyRefusalsArePinned(t *testing.T) {
	s := testServer(Config{MaxTools: 64, MaxToolResultBytes: 1 << 20, Models: []string{"pm-test"}})
	msg := `"messages":[{"role":"user","content":"hi"}]`
	apis := []pinAPI{
		{"chat", []string{"system", "temperature", "top_p", "max_tokens", "max_completion_tokens", "presence_penalty",
			"frequency_penalty", "stop", "seed", "user", "metadata", "store", "service_tier", "reasoning_effort", "verbosity",
			"prompt_cache_key", "safety_identifier", "n", "logprobs", "top_logprobs", "logit_bias", "response_format",
			"modalities", "audio", "prediction", "functions", "function_call", "web_search_options", "stream_options",
			"parallel_tool_calls", "stream"},
			func(f, v string) string { return `{"model":"pm-test",` + msg + `,"` + f + `":` + v + `}` },
			func(s *server, b []byte) (string, error) { _, err := chatapi.Decode(s.in, b, allowAll); return "", err }},
		{"responses", []string{"system", "temperature", "top_p", "max_output_tokens", "max_tool_calls", "metadata", "user",
			"reasoning", "include", "prompt_cache_key", "prompt_cache_retention", "client_metadata", "safety_identifier",
			"service_tier", "stream_options", "truncation", "store", "text", "previous_response_id", "conversation", "prompt",
			"background", "top_logprobs", "instructions", "parallel_tool_calls"},
			func(f, v string) string { return `{"model":"pm-test","input":"hi","` + f + `":` + v + `}` },
			func(s *server, b []byte) (string, error) {
				rr, err := respapi.Decode(s.in, b, allowAll)
				if err != nil {
					return "", err
				}
				obj, _ := rr.Object()
				return string(obj), nil
			}},
		{"messages", []string{"temperature", "top_p", "top_k", "metadata", "service_tier", "context_management",
			"cache_control", "speed", "inference_geo", "container", "thinking", "output_config", "mcp_servers", "max_tokens"},
			func(f, v string) string {
				b := `{"model":"pm-test",` + msg + `,"` + f + `":` + v
				if f != "max_tokens" {
					b += `,"max_tokens":64`
				}
				return b + `}`
			},
			func(s *server, b []byte) (string, error) {
				_, err := msgapi.Decode(s.in, b, allowAll)
				return "", err
			}},
		{"gemini", []string{"temperature", "topP", "topK", "maxOutputTokens", "presencePenalty", "frequencyPenalty", "seed",
			"mediaResolution", "candidateCount", "responseLogprobs", "logprobs", "safetySettings", "labels", "retrievalConfig",
			"thinkingBudget"},
			func(f, v string) string {
				c := `"contents":[{"role":"user","parts":[{"text":"hi"}]}]`
				switch f {
				case "safetySettings", "labels":
					return `{` + c + `,"` + f + `":` + v + `}`
				case "retrievalConfig":
					return `{` + c + `,"toolConfig":{"` + f + `":` + v + `}}`
				case "thinkingBudget":
					return `{` + c + `,"generationConfig":{"thinkingConfig":{"` + f + `":` + v + `}}}`
				}
				return `{` + c + `,"generationConfig":{"` + f + `":` + v + `}}`
			},
			func(s *server, b []byte) (string, error) {
				_, err := gemapi.Decode(s.in, b, "pm-test", false)
				return "", err
			}},
	}
	var out strings.Builder
	for _, api := range apis {
		for _, f := range api.fields {
			for _, v := range append(append([]string(nil), pinValues...), pinObjects[f]...) {
				echo, err := api.decode(s, []byte(api.body(f, v)))
				fmt.Fprintf(&out, "%s %s=%s -> %s\n", api.name, f, v, pinOutcome(echo, err))
			}
		}
	}
	// Two wrong fields: the earlier in the policy's order is refused.
	for _, b := range []string{
		`{"model":"pm-test",` + msg + `,"n":2,"temperature":"x"}`,
		`{"model":"pm-test",` + msg + `,"modalities":["audio"],"logit_bias":{"1":1}}`,
		`{"model":"pm-test",` + msg + `,"reasoning_effort":"bogus","response_format":{"type":"bogus"}}`,
	} {
		_, err := chatapi.Decode(s.in, []byte(b), allowAll)
		fmt.Fprintf(&out, "chat %s -> %s\n", b, pinOutcome("", err))
	}
	for _, b := range []string{
		`{"model":"pm-test","input":"hi","text":{"format":1},"truncation":"x"}`,
		`{"model":"pm-test","input":"hi","reasoning":{"effort":"bogus"},"text":{"format":{"type":"bogus"}}}`,
		`{"model":"pm-test","input":"hi","reasoning":{"effort":"bogus"},"text":{"format":{"type":"json_schema"}}}`,
		`{"model":"pm-test","input":"hi","background":true,"system":"x"}`,
	} {
		_, err := respapi.Decode(s.in, []byte(b), allowAll)
		fmt.Fprintf(&out, "responses %s -> %s\n", b, pinOutcome("", err))
	}
	golden := filepath.Join("testdata", "policy_pin.golden")
	if *updatePolicyPin {
		if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	is.New(t).NoErr(err)
	wantLines, gotLines := strings.Split(string(want), "\n"), strings.Split(out.String(), "\n")
	is.New(t).Equal(len(gotLines), len(wantLines)) // one line per case
	for i := range wantLines {
		if gotLines[i] != wantLines[i] {
			t.Errorf("changed:\n got %s\nwant %s", gotLines[i], wantLines[i])
		}
	}
}

func allowAll(string) bool { return true }

// pinOutcome is a case's answer: the refusal's code, param and message, or
// ok (with the Responses object's echo).
func pinOutcome(echo string, err error) string {
	var re *rules.Refusal
	switch {
	case err == nil:
		return "ok " + echo
	case errors.As(err, &re):
		return fmt.Sprintf("%s param=%q %q", errs.CodeOf(err), re.Param(), re.Detail())
	}
	return "error " + err.Error()
}

// A body that is not one JSON object is refused in the same words by every
// API, before anything in it is read: not JSON (with where it stops), or
// JSON of another kind.
func TestBodiesThatAreNotAnObjectAreRefusedInTheirWords(t *testing.T) {
	s := testServer(Config{MaxTools: 64, MaxToolResultBytes: 1 << 20, Models: []string{"pm-test"}})
	decoders := map[string]func([]byte) error{
		"chat":      func(b []byte) error { _, err := chatapi.Decode(s.in, b, allowAll); return err },
		"responses": func(b []byte) error { _, err := respapi.Decode(s.in, b, allowAll); return err },
		"messages":  func(b []byte) error { _, err := msgapi.Decode(s.in, b, allowAll); return err },
		"gemini":    func(b []byte) error { _, err := gemapi.Decode(s.in, b, "pm-test", false); return err },
	}
	const notObject = "The body must be a JSON object."
	for body, want := range map[string]string{
		`null`:           notObject,
		` [1]`:           notObject,
		"\n5":            notObject,
		`"x"`:            notObject,
		`true`:           notObject,
		``:               "The body is not valid JSON: the body ends before the JSON value does, at byte offset 0.",
		`{"a":1} {}`:     "The body is not valid JSON: text after the JSON value at byte offset 8 (line 1, column 9).",
		"{\n\"a\":}":     "The body is not valid JSON: an unexpected character at byte offset 6 (line 2, column 5).",
		`[` + `]]`:       "The body is not valid JSON: text after the JSON value at byte offset 2 (line 1, column 3).",
		`{"a":"\ud800"}`: "is not valid UTF-8 text (invalid bytes or a lone surrogate).",
	} {
		for api, decode := range decoders {
			var re *rules.Refusal
			err := decode([]byte(body))
			if !errors.As(err, &re) || re.Detail() != want || errs.CodeOf(err) != errs.InvalidRequest {
				t.Errorf("%s %q: got %v (%+v), want %q", api, body, err, re, want)
			}
		}
	}
}
