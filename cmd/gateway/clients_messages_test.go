//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/pmgate/pmgate/internal/anthropicsse"
)

// The observer's side of the Anthropic Messages clients (Claude Code direct,
// @anthropic-ai/sdk): every /v1/messages answer the gateway gave through the
// recording proxy is checked by the strict grammar checker, and the request
// fields and header names Claude Code sent are catalogued for the report.

// anthropicReport is what one Messages exchange showed.
type anthropicReport struct {
	API        string `json:"api,omitempty"` // "messages" for POST /v1/messages
	Outcome    string `json:"outcome,omitempty"`
	Violation  string `json:"violation,omitempty"` // the grammar checker's verdict, "" when the answer is valid
	StopReason string `json:"stop_reason,omitempty"`
	ErrorType  string `json:"error_type,omitempty"`
	ToolUses   int    `json:"tool_uses,omitempty"`
	Text       string `json:"text,omitempty"`
	AgentID    string `json:"agent_id,omitempty"`   // x-claude-code-agent-id
	UserAgent  string `json:"user_agent,omitempty"` // the client's user-agent
}

// isMessagesPath is the inference route (count_tokens is catalogued, not checked).
func isMessagesPath(path string) bool { return path == "/v1/messages" }

// analyzeMessages checks one Messages answer and fills the exchange's report.
func analyzeMessages(ex *exchange, status int, header http.Header, raw []byte) {
	ax := anthropicsse.Exchange{Method: "POST", Path: "/v1/messages", Status: status, Header: header,
		Stream: strings.HasPrefix(header.Get("Content-Type"), "text/event-stream"), Body: raw}
	res, err := anthropicsse.CheckExchange(ax)
	ex.Outcome = res.Outcome.String()
	if err != nil {
		ex.Violation = err.Error()
	}
	ex.StopReason, ex.ErrorType, ex.ToolUses = res.StopReason, res.Error.Type, len(res.ToolUses())
	if t := res.Text(); len(t) > 400 {
		ex.Text = t[:400]
	} else {
		ex.Text = t
	}
	// The stable pmgate code rides in the Anthropic error object.
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(res.Raw, &e) == nil && res.Outcome == anthropicsse.Failed {
		ex.ErrorCode, ex.ErrorMsg = e.Error.Code, e.Error.Message
		if ex.ErrorCode == "" {
			ex.ErrorCode = res.Error.Type
		}
	}
}

// requestCatalog gathers the request field paths and header names a client
// sent to the Messages routes, with the values of the headers that carry no
// secret and tell the client's configuration.
type requestCatalog struct {
	mu      sync.Mutex
	fields  map[string]int
	headers map[string]int
	values  map[string]map[string]bool
	paths   map[string]int
}

// catalogValueHeaders are the headers whose values the report shows.
var catalogValueHeaders = map[string]bool{"anthropic-version": true, "anthropic-beta": true, "x-app": true, "user-agent": true}

func (c *requestCatalog) add(path string, h http.Header, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fields == nil {
		c.fields, c.headers, c.values, c.paths = map[string]int{}, map[string]int{}, map[string]map[string]bool{}, map[string]int{}
	}
	c.paths[path]++
	for k, vs := range h {
		name := strings.ToLower(k)
		c.headers[name]++
		if catalogValueHeaders[name] {
			if c.values[name] == nil {
				c.values[name] = map[string]bool{}
			}
			for _, v := range vs {
				for _, part := range strings.Split(v, ",") {
					c.values[name][strings.TrimSpace(part)] = true
				}
			}
		}
	}
	var v any
	if json.Unmarshal(body, &v) == nil {
		fieldPaths("", v, c.fields)
	}
}

// fieldPaths records the key paths of a JSON value: "tools[].input_schema",
// "messages[]{role=user}.content[]{type=tool_result}.is_error" (array
// elements are named by their type or role, since their keys depend on it);
// schemas and tool inputs are not descended into.
func fieldPaths(prefix string, v any, into map[string]int) {
	switch x := v.(type) {
	case map[string]any:
		if strings.HasSuffix(prefix, "[]") {
			if typ, _ := x["type"].(string); typ != "" {
				prefix += "{type=" + typ + "}"
			} else if role, _ := x["role"].(string); role != "" {
				prefix += "{role=" + role + "}"
			}
		}
		for k, child := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			into[p]++
			if k == "input_schema" || k == "input" || k == "properties" {
				continue
			}
			fieldPaths(p, child, into)
		}
	case []any:
		for _, child := range x {
			fieldPaths(prefix+"[]", child, into)
		}
	}
}

// lines renders the catalog for the clients report.
func (c *requestCatalog) lines(title string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.paths) == 0 {
		return ""
	}
	keys := func(m map[string]int) string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return strings.Join(out, ", ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n    paths: %s\n    request fields: %s\n    header names: %s\n", title, keys(c.paths), keys(c.fields), keys(c.headers))
	names := make([]string, 0, len(c.values))
	for n := range c.values {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		vals := make([]string, 0, len(c.values[n]))
		for v := range c.values[n] {
			vals = append(vals, v)
		}
		sort.Strings(vals)
		fmt.Fprintf(&b, "    %s values: %s\n", n, strings.Join(vals, ", "))
	}
	return b.String()
}

// reportClaudeCatalog adds what Claude Code sent to the Messages routes of
// both gateways to the clients report.
func reportClaudeCatalog(strategy string, observers ...*clientObserver) {
	all := requestCatalog{fields: map[string]int{}, headers: map[string]int{}, values: map[string]map[string]bool{}, paths: map[string]int{}}
	sum := func(into, from map[string]int) {
		for k, n := range from {
			into[k] += n
		}
	}
	for _, o := range observers {
		c := &o.claude
		c.mu.Lock()
		sum(all.fields, c.fields)
		sum(all.headers, c.headers)
		sum(all.paths, c.paths)
		for name, vals := range c.values {
			if all.values[name] == nil {
				all.values[name] = map[string]bool{}
			}
			for v := range vals {
				all.values[name][v] = true
			}
		}
		c.mu.Unlock()
	}
	if text := all.lines("TestClients/" + strategy + "/claude-code-direct: what Claude Code sent (gateway side)"); text != "" {
		clientsReport.mu.Lock()
		clientsReport.lines = append(clientsReport.lines, text)
		clientsReport.mu.Unlock()
	}
}
