package pmconfig

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Summary returns the adapter's part of the redacted summary printed by
// `gateway check-config`. Secrets and the workspace id appear only as "set"
// (never a value or a length). Keys: strategy, host, chat_path, access_token
// or session_cookie, workspace, model_map, user_agent, app_version,
// terminal_rule (web_session only), max_query_chars, max_tools_upstream (each
// with where it came from: *_from default, setting or measured),
// max_tool_result_chars (a number, or unlimited) and
// parallel_tool_calls (true, false, or client: the client's choice). The
// wiring adds the process settings (models, the request limits, the tool
// schema settings).
func (c Config) Summary() map[string]string {
	set := func(v string) string {
		if v == "" {
			return "unset"
		}
		return "set"
	}
	s := map[string]string{
		"strategy":  string(c.Strategy),
		"workspace": set(c.WorkspaceID),
		"user_agent": func() string {
			if c.UserAgent == "" {
				return DefaultUserAgent
			}
			return c.UserAgent
		}(),
		"app_version":             "unset",
		"max_query_chars":         strconv.Itoa(c.MaxQueryChars),
		"max_query_chars_from":    string(c.QueryLimit().Source),
		"max_tools_upstream":      strconv.Itoa(c.MaxToolsUpstream),
		"max_tools_upstream_from": string(c.ToolsLimit().Source),
		"max_tool_result_chars":   "unlimited",
		"parallel_tool_calls":     string(c.ParallelToolCalls),
	}
	if c.ParallelToolCalls == ParallelUnset {
		s["parallel_tool_calls"] = "false"
		if c.Strategy == StrategyAccessToken {
			s["parallel_tool_calls"] = "client"
		}
	}
	if c.AppVersion != "" {
		s["app_version"] = c.AppVersion
	}
	if c.MaxToolResultChars > 0 {
		s["max_tool_result_chars"] = strconv.Itoa(c.MaxToolResultChars)
	}
	if u := c.ChatURL(); u != nil {
		s["host"] = u.Host
		s["chat_path"] = u.Path
	}
	switch c.Strategy {
	case StrategyAccessToken:
		s["access_token"] = set(c.AccessToken)
	case StrategyWebSession:
		s["session_cookie"] = set(c.SessionCookie)
		s["terminal_rule"] = string(c.TerminalRule)
	}
	entries := make([]string, 0, len(c.Models))
	for _, m := range c.Models {
		entries = append(entries, m.Public+"="+strings.Join(m.Observed, "|"))
	}
	s["model_map"] = strings.Join(entries, ",")
	return s
}

// String renders the redacted summary, so that printing a Config with %v or %s
// never shows a secret.
func (c Config) String() string {
	s := c.Summary()
	var b strings.Builder
	b.WriteString("pmconfig.Config{")
	for i, k := range slices.Sorted(maps.Keys(s)) {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%q", k, s[k])
	}
	b.WriteString("}")
	return b.String()
}

// GoString makes %#v print the redacted summary too.
func (c Config) GoString() string { return c.String() }
