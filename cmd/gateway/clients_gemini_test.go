//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// The Gemini API's client suites (gemini-cli, the @google/genai SDK) run
// through the same observer as the others: its recording proxy also forwards
// /v1beta/, and analyzeGemini judges what the gateway answered there.

// isGeminiPath: the /v1beta routes, and the POST ones of /v1 that @google/genai uses by default.
func isGeminiPath(path string) bool {
	return strings.HasPrefix(path, "/v1beta/") || (strings.HasPrefix(path, "/v1/models/") && strings.Contains(path, ":"))
}

// geminiError is the Gemini API's error object; the stable pmgate code rides
// in an ErrorInfo detail's reason when the gateway sends one.
type geminiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
	} `json:"details"`
}

func (e *geminiError) pmgateCode() string {
	for _, d := range e.Details {
		if d.Reason != "" {
			return d.Reason
		}
	}
	return e.Status
}

// geminiChunk is the part of a GenerateContentResponse the suite reads.
type geminiChunk struct {
	Error      *geminiError `json:"error"`
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text         *string `json:"text"`
				Thought      bool    `json:"thought"`
				FunctionCall *struct {
					ID   string          `json:"id"`
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata json.RawMessage `json:"usageMetadata"`
}

// analyzeGemini checks one answer of a /v1beta route and fills the
// exchange's report: Done is a proven end (a last chunk with a finishReason),
// ErrorCode the error's pmgate code (or its status name). A stream that ends
// cleanly without a finishReason and without an error is a violation: the
// agents take it for a finished answer.
func analyzeGemini(ex *exchange, status int, header http.Header, raw []byte, complete bool) {
	if !strings.HasPrefix(header.Get("Content-Type"), "text/event-stream") {
		var c geminiChunk
		if err := json.Unmarshal(raw, &c); err != nil {
			ex.Violations = append(ex.Violations, "the body is not JSON")
			return
		}
		if c.Error != nil {
			ex.ErrorCode, ex.ErrorMsg = c.Error.pmgateCode(), c.Error.Message
			return
		}
		ex.wireReport = geminiReport([]geminiChunk{c}, ex.wireReport)
		ex.Done = len(ex.Finish) > 0
		return
	}
	ex.wireReport = analyzeGeminiStream(raw, complete)
}

// analyzeGeminiStream reads an alt=sse body: "data: <JSON>" events, and a
// failure written as a bare JSON error object (what gemini-cli's SDK sees).
func analyzeGeminiStream(raw []byte, complete bool) wireReport {
	var r wireReport
	bad := func(format string, a ...any) { r.Violations = append(r.Violations, fmt.Sprintf(format, a...)) }
	over := false
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		payload, isData := strings.CutPrefix(line, "data:")
		payload = strings.TrimSpace(payload)
		var c geminiChunk
		if json.Unmarshal([]byte(payload), &c) != nil {
			bad("not a JSON event: %.80s", line)
			continue
		}
		if c.Error != nil {
			r.ErrorCode, r.ErrorMsg, over = c.Error.pmgateCode(), c.Error.Message, true
			continue
		}
		if !isData {
			bad("a bare JSON line that is not an error: %.80s", line)
			continue
		}
		if over || r.Done {
			bad("data after the end of the stream: %.80s", line)
			continue
		}
		r = geminiReport([]geminiChunk{c}, r)
		r.Done = len(r.Finish) > 0
	}
	if complete && !r.Done && r.ErrorCode == "" {
		bad("the stream ended cleanly without a finishReason and without an error")
	}
	if r.Done && r.ErrorCode != "" {
		bad("both a finishReason and an error")
	}
	if len(r.Finish) > 1 {
		bad("%d finish reasons", len(r.Finish))
	}
	return r
}

func geminiReport(chunks []geminiChunk, r wireReport) wireReport {
	for _, c := range chunks {
		if len(c.UsageMetadata) > 0 && string(c.UsageMetadata) != "null" {
			r.UsageChunks++
		}
		for _, cand := range c.Candidates {
			for _, p := range cand.Content.Parts {
				if p.Text != nil && !p.Thought {
					r.Content += *p.Text
				}
				if fc := p.FunctionCall; fc != nil {
					r.ToolCalls = append(r.ToolCalls, wireToolCall{Index: len(r.ToolCalls), ID: fc.ID, Name: fc.Name, Arguments: string(fc.Args)})
				}
			}
			if cand.FinishReason != "" {
				r.Finish = append(r.Finish, cand.FinishReason)
			}
		}
	}
	return r
}

// TestTheGeminiStreamCheckerCatchesBrokenRules keeps analyzeGeminiStream
// honest: a checker that passed a clean end without a finishReason would make
// the fail-closed scenarios of the Gemini suites vacuous.
func TestTheGeminiStreamCheckerCatchesBrokenRules(t *testing.T) {
	text := `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"index":0}]}` + "\r\n\r\n"
	call := `data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f","args":{"a":1}}}]},"index":0}]}` + "\r\n\r\n"
	stop := `data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],"usageMetadata":{"totalTokenCount":3}}` + "\r\n\r\n"
	rawErr := `{"error":{"code":502,"message":"upstream failed","status":"UNAVAILABLE","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"upstream_failure"}]}}`
	cases := []struct {
		name, body string
		complete   bool
		done       bool
		code       string
		violations int
	}{
		{"a proven end", text + stop, true, true, "", 0},
		{"a tool call and its end", call + stop, true, true, "", 0},
		{"a clean end without finishReason", text, true, false, "", 1},
		{"a tool call without finishReason", call, true, false, "", 1},
		{"a bare error after text", text + rawErr, true, false, "upstream_failure", 0},
		{"an error event after text", text + "data: " + rawErr + "\r\n\r\n", true, false, "upstream_failure", 0},
		{"a cut stream", text, false, false, "", 0},
		{"data after the end", text + stop + text, true, true, "", 1},
		{"an error after the end", text + stop + rawErr, true, true, "upstream_failure", 1},
	}
	for _, c := range cases {
		r := analyzeGeminiStream([]byte(c.body), c.complete)
		if r.Done != c.done || r.ErrorCode != c.code || len(r.Violations) != c.violations {
			t.Errorf("%s: done=%v code=%q violations=%q, want done=%v code=%q %d violations", c.name, r.Done, r.ErrorCode, r.Violations, c.done, c.code, c.violations)
		}
	}
	if r := analyzeGeminiStream([]byte(call+stop), true); len(r.ToolCalls) != 1 || r.ToolCalls[0].ID != "c1" || r.ToolCalls[0].Arguments != `{"a":1}` {
		t.Errorf("tool calls: %+v", r.ToolCalls)
	}
}
