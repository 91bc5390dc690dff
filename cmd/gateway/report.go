package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/app"
)

// reportSchema names the evidence report format written by `gateway probe` and
// read by `gateway verify` (docs/PROBE.md documents every field).
const reportSchema = "pmgate-probe/v1"

// Every field of the report is always present (no omitempty): the verifier
// treats a missing field as a format failure, never as a default.
type probeReport struct {
	Schema            string         `json:"schema"`
	Version           string         `json:"version"`
	Commit            string         `json:"commit"`
	WrittenAt         string         `json:"written_at"`
	Mode              string         `json:"mode"`
	Strategy          string         `json:"strategy"`
	ConfigFingerprint string         `json:"config_fingerprint"`
	TerminalRule      string         `json:"terminal_rule"`
	Model             reportModel    `json:"model"`
	Policy            reportPolicy   `json:"policy"`
	Text              reportPhase    `json:"text"`
	Tools             reportPhase    `json:"tools"`
	Limits            *reportLimits  `json:"limits"`
	QueryUnit         *reportUnit    `json:"query_unit"`
	Parallel          *reportGroup   `json:"parallel"`
	Pending           *reportPending `json:"pending"`
	Shutdown          reportShutdown `json:"shutdown"`
	Verdict           string         `json:"verdict"`
	Failures          []string       `json:"failures"`
}

type reportModel struct {
	Public        string `json:"public"`
	UpstreamEnum  string `json:"upstream_enum"`
	ModelObserved bool   `json:"model_observed"`
	ModelMatch    bool   `json:"model_match"`
}

// reportPolicy is what the probe allowed itself; the verifier refuses anything
// above the defaults below.
type reportPolicy struct {
	Retry                  bool `json:"retry"`
	Failover               bool `json:"failover"`
	TextMaxRequests        int  `json:"text_max_requests"`
	TextMaxDispatches      int  `json:"text_max_dispatches"`
	ToolMaxTurns           int  `json:"tool_max_turns"`
	ToolMaxRequests        int  `json:"tool_max_requests"`
	ToolMaxDispatches      int  `json:"tool_max_dispatches"`
	LimitMaxQueries        int  `json:"limit_max_queries"`
	LimitMaxContinuations  int  `json:"limit_max_continuations"`
	UnitMaxQueries         int  `json:"unit_max_queries"`
	ParallelMaxRequests    int  `json:"parallel_max_requests"`
	ParallelMaxDispatches  int  `json:"parallel_max_dispatches"`
	PendingMaxRequests     int  `json:"pending_max_requests"`
	PendingMaxDispatches   int  `json:"pending_max_dispatches"`
	RequestTimeoutMS       int  `json:"request_timeout_ms"`
	MaxQueryCharsAtStartup int  `json:"max_query_chars"`
}

// defaultPolicy is the probe's fixed policy: no retry, no failover, and these
// budgets (the tool loop's are the issue's: 3 turns, 3 gateway requests, 4
// upstream dispatches).
func defaultPolicy(timeoutMS, maxQuery int) reportPolicy {
	return reportPolicy{TextMaxRequests: 1, TextMaxDispatches: 1, ToolMaxTurns: 3, ToolMaxRequests: 3,
		ToolMaxDispatches: 4, LimitMaxQueries: limitLengthQueries + limitToolQueries, LimitMaxContinuations: 1,
		UnitMaxQueries: unitQueries, ParallelMaxRequests: parallelRequests, ParallelMaxDispatches: parallelRequests,
		PendingMaxRequests: pendingRequests, PendingMaxDispatches: pendingRequests,
		RequestTimeoutMS: timeoutMS, MaxQueryCharsAtStartup: maxQuery}
}

// reportPhase is one phase: its gateway requests in order and its counters.
type reportPhase struct {
	Ran                bool            `json:"ran"`
	Turns              int             `json:"turns"`
	GatewayRequests    int             `json:"gateway_requests"`
	UpstreamDispatches int             `json:"upstream_dispatches"`
	RefusedDispatches  int             `json:"refused_dispatches"`
	DurationMS         int64           `json:"duration_ms"`
	Requests           []reportRequest `json:"requests"`
	// Cause is why the phase's first failed dispatch failed: a transport
	// cause token (dns_not_found, tls_unknown_authority, …) or, without one,
	// its stable code; "" when none failed.
	Cause string `json:"cause,omitempty"`
}

// reportRequest is one gateway request of a phase, as a client saw it, plus
// the upstream dispatches it caused, as the adapter saw them.
type reportRequest struct {
	Kind             string           `json:"kind"`
	ToolChoice       string           `json:"tool_choice"`
	Stream           bool             `json:"stream"`
	QueryChars       int              `json:"query_chars"`
	ToolsOffered     int              `json:"tools_offered"`
	HTTPStatus       int              `json:"http_status"`
	ErrorCode        string           `json:"error_code"`
	FinishReason     string           `json:"finish_reason"`
	SawDone          bool             `json:"saw_done"`
	TextBytes        int              `json:"text_bytes"`
	Calls            []reportCall     `json:"calls"`
	ExactMarkerLine  bool             `json:"exact_marker_line"`
	AskedMissingTool bool             `json:"asked_missing_tool"`
	DurationMS       int64            `json:"duration_ms"`
	Upstream         []reportDispatch `json:"upstream"`
	// Disclosure is the answer's x-pmgate-conversation header: how the
	// gateway continued an upstream conversation holding more than the
	// transcript (absent when it did not say).
	Disclosure string `json:"disclosure,omitempty"`
}

// reportCall is one tool call the gateway showed: never its id or arguments.
type reportCall struct {
	Name            string `json:"name"`
	ArgumentsObject bool   `json:"arguments_object"`
	ArgumentsValid  bool   `json:"arguments_valid"`
}

// reportDispatch is one upstream dispatch (or a dispatch the budget refused).
type reportDispatch struct {
	ChatType              string `json:"chat_type"`
	ConversationIDPresent bool   `json:"conversation_id_present"`
	GroupIDPresent        bool   `json:"group_id_present"`
	CallIDsPresent        bool   `json:"call_ids_present"`
	ResultCount           int    `json:"result_count"`
	RefusedByBudget       bool   `json:"refused_by_budget"`
	NotSent               bool   `json:"not_sent"`
	ErrorCode             string `json:"error_code"`
	Cause                 string `json:"cause,omitempty"` // transport cause token of a failed dispatch
	// UpstreamErrorType is the service's error type of a failed dispatch
	// (TOOL_CALL_NOT_FOUND, …; postman.ErrorType): a type name, never its
	// message; absent when the service named none.
	UpstreamErrorType string          `json:"upstream_error_type,omitempty"`
	Rule              string          `json:"rule"`
	Row               string          `json:"row"`
	Outcome           string          `json:"outcome"`
	EventTypes        map[string]int  `json:"event_types"`
	TerminalEvidence  []string        `json:"terminal_evidence"`
	WholeFrames       bool            `json:"whole_frames"`
	WouldComplete     map[string]bool `json:"would_complete"`
	ModelObserved     bool            `json:"model_observed"`
	ModelMatch        bool            `json:"model_match"`
	DurationMS        int64           `json:"duration_ms"`
	// UsagePosition and UsageFields are where the stream's usage events sat
	// and which field names they carried (the adapter's evidence; "" and []
	// without a stream).
	UsagePosition string   `json:"usage_position"`
	UsageFields   []string `json:"usage_fields"`
	// RateLimit is what the answer's rate-limit headers said.
	RateLimit reportRateLimit `json:"rate_limit"`
}

// reportRateLimit is the service's rate-limit window as one answer announced
// it (X-RateLimit-*, RateLimit-Policy): numbers only.
type reportRateLimit struct {
	Headers   bool `json:"headers"`   // the answer carried a readable X-RateLimit-Remaining
	Limit     int  `json:"limit"`     // X-RateLimit-Limit (0: absent)
	Remaining int  `json:"remaining"` // X-RateLimit-Remaining
	WindowS   int  `json:"window_s"`  // RateLimit-Policy's w, in seconds (0: absent)
}

// reportUnit is the optional --measure-query-unit phase: one query of
// astral characters (each one code point, two UTF-16 code units) whose
// code-point count the limits phase saw accepted and whose UTF-16 length it
// saw refused, so the answer says which unit the service counts.
type reportUnit struct {
	Phase         reportPhase `json:"phase"`
	AcceptedChars int         `json:"accepted_chars"` // the limits phase's longest accepted length
	RefusedChars  int         `json:"refused_chars"`  // and its shortest refused one
	CodePoints    int         `json:"code_points"`    // the query's length in code points (0: not sent)
	UTF16Units    int         `json:"utf16_units"`    // and in UTF-16 code units
	Result        string      `json:"result"`         // code_points, utf16_units or undecided
}

// reportGroup is the optional --measure-parallel phase: one parallel tool
// group answered with the array form and its group id.
type reportGroup struct {
	Phase  reportPhase `json:"phase"`
	Result string      `json:"result"` // accepted, rejected, no_group or inconclusive
}

// reportPending is the optional --measure-pending phase: a tool call left
// pending while a user query goes up in its conversation (the gateway
// continuing from an earlier point), then that call's result. Result says
// what the service did with the call: kept (it answered the result),
// dropped (it answered TOOL_CALL_NOT_FOUND) or unknown; UnknownAt names the
// step that did not go as planned ("" when all did).
type reportPending struct {
	Phase     reportPhase `json:"phase"`
	Result    string      `json:"result"`
	UnknownAt string      `json:"unknown_at"`
}

// reportLimits is the optional --measure-limits phase.
// MeasuredChars and MeasuredTools are the limits a verified report carries
// to serve (0: none measured).
type reportLimits struct {
	Phase                 reportPhase `json:"phase"`
	StartChars            int         `json:"start_chars"`
	CeilingChars          int         `json:"ceiling_chars"`
	LongestAcceptedChars  int         `json:"longest_accepted_chars"`
	ShortestRejectedChars int         `json:"shortest_rejected_chars"`
	UpperBoundTested      bool        `json:"upper_bound_tested"`
	MeasuredChars         int         `json:"measured_chars"`
	ToolsStart            int         `json:"tools_start"`
	ToolsCeiling          int         `json:"tools_ceiling"`
	LongestAcceptedTools  int         `json:"longest_accepted_tools"`
	ShortestRejectedTools int         `json:"shortest_rejected_tools"`
	MeasuredTools         int         `json:"measured_tools"`
	Continuation          string      `json:"continuation"`
}

type reportShutdown struct {
	Clean      bool  `json:"clean"`
	DurationMS int64 `json:"duration_ms"`
}

// fingerprint hashes what identifies the upstream account and model mapping of
// a configuration: strategy, chat host (web_session) or origin (access_token),
// workspace id and the model map. No secret is part of it; the workspace only
// enters the hash.
func fingerprint(c pmconfig.Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pmgate-fingerprint/v1\nstrategy=%s\n", c.Strategy)
	if u := c.ChatURL(); u != nil {
		fmt.Fprintf(&b, "endpoint=%s://%s%s\n", u.Scheme, u.Host, u.Path)
	}
	fmt.Fprintf(&b, "workspace=%q\n", c.WorkspaceID)
	for _, m := range c.Models {
		fmt.Fprintf(&b, "model=%q=%q", m.Public, m.Upstream)
		for _, l := range m.Observed {
			fmt.Fprintf(&b, "|%q", l)
		}
		b.WriteByte('\n')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// reportMAC authenticates a report file for /health: HMAC-SHA256 of its
// bytes under a key derived from the configured upstream credential, which
// `probe` and `serve` share by construction (the report is about that
// credential). Someone who can write the PROBE_REPORT file but does not hold
// the credential cannot make a forged or edited report verify; whoever holds
// the credential can, and could change the configuration anyway. "" when the
// configuration has no credential.
func reportMAC(c pmconfig.Config, raw []byte) string {
	secrets := c.Secrets()
	if len(secrets) == 0 {
		return ""
	}
	key := sha256.Sum256([]byte("pmgate-probe-mac/v1\x00" + strings.Join(secrets, "\x00")))
	m := hmac.New(sha256.New, key[:])
	m.Write(raw)
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}

// macPath is where probe writes a report's MAC, and serve reads it.
func macPath(report string) string { return report + ".mac" }

// reportDigest is the digest /health shows for a verified report.
func reportDigest(raw []byte) string {
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// marshalReport renders a report as indented JSON with a final newline.
func marshalReport(r probeReport) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// decodeReport parses a report strictly: unknown fields, wrong types, trailing
// data and missing fields are all errors (the format branch).
func decodeReport(raw []byte) (probeReport, error) {
	var r probeReport
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("not a %s report: %s", reportSchema, jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return r, fmt.Errorf("data after the report object")
	}
	if p := repeatedKey(raw); p != "" {
		return r, fmt.Errorf("repeated key %s", p)
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return r, fmt.Errorf("not JSON")
	}
	again, _ := json.Marshal(r)
	var want any
	_ = json.Unmarshal(again, &want)
	if p := missingKey(want, generic, ""); p != "" {
		return r, fmt.Errorf("missing field %s", p)
	}
	return r, nil
}

// repeatedKey returns the path of the first object key that occurs twice in
// one object ("" when none): encoding/json keeps the last, other parsers the
// first, so such a report reads differently to different readers. raw is
// valid JSON here (decodeReport parsed it).
func repeatedKey(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]bool
		path   string
		key    bool // the next string token of an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k, _ := tok.(string)
			if top.keys[k] {
				return top.path + "." + k
			}
			top.keys[k], top.key = true, false
			top.path += "\x00" + k // the value's path, trimmed below
			continue
		}
		path := ""
		if top != nil {
			if top.object {
				i := strings.LastIndex(top.path, "\x00")
				path = top.path[:i] + "." + top.path[i+1:]
				top.path, top.key = top.path[:i], true
			} else {
				path = top.path + "[]"
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, path: path, key: true})
		case json.Delim('['):
			stack = append(stack, &frame{path: path})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// jsonProblem describes a decoding error by field and type, never by value.
func jsonProblem(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		return fmt.Sprintf("field %s has the wrong type (%s, want %s)", te.Field, te.Value, te.Type)
	}
	if s := err.Error(); strings.HasPrefix(s, "json: unknown field ") {
		return "unknown field " + strings.TrimPrefix(s, "json: unknown field ")
	}
	if _, ok := err.(*json.SyntaxError); ok {
		return "not valid JSON"
	}
	return "not a JSON object of the expected shape"
}

// missingKey returns the path of the first key present in want (the decoded
// report marshalled again) but absent from got (the raw document). Maps that
// the report fills freely (event_types, would_complete) are compared only as
// being present.
func missingKey(want, got any, path string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			if got == nil && w != nil && freeMap(path) {
				return path
			}
			return ""
		}
		if freeMap(path) {
			return ""
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, present := g[k]
			if !present {
				return strings.TrimPrefix(path+"."+k, ".")
			}
			if p := missingKey(w[k], gv, path+"."+k); p != "" {
				return p
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			return ""
		}
		for i := range min(len(w), len(g)) {
			if p := missingKey(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

func freeMap(path string) bool {
	return strings.HasSuffix(path, ".event_types") || strings.HasSuffix(path, ".would_complete")
}

// Hygiene: every string a report may hold matches the pattern of its field.
// A free-text field does not exist, so content cannot hide in one; ids,
// markers and secrets do not match any pattern (and are caught by the generic
// id check as well).
//
// The patterns are compiled on first use: only verify, probe and a configured
// PROBE_REPORT need them, and compiling them allocates about 0.9 MB, which a
// gateway that only serves would otherwise carry in its idle heap.
type reportRules struct {
	// code is an error code or an outcome token.
	code *regexp.Regexp
	// idLike finds what looks like an identifier, a marker or a key: the
	// gateway's and the upstream's id prefixes, API-key prefixes, and long
	// hexadecimal or base64-ish runs.
	idLike *regexp.Regexp
	// fields maps a field path (array indices as [], map keys as {}) to its
	// pattern.
	fields map[string]*regexp.Regexp
}

var reportPatterns = sync.OnceValue(func() *reportRules {
	var (
		reEnumWord  = regexp.MustCompile(`^[a-z_]{0,40}$`)
		reCode      = regexp.MustCompile(`^[a-z0-9_]{0,64}$`)
		reVersion   = regexp.MustCompile(`^[A-Za-z0-9._+-]{1,64}$`)
		reCommit    = regexp.MustCompile(`^([0-9a-f]{7,40}(-dirty)?)?$`)
		reFinger    = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
		rePublic    = regexp.MustCompile(`^[A-Za-z0-9._:/-]{1,128}$`)
		reEnum      = regexp.MustCompile(`^[A-Z0-9_]{0,64}$`)
		reEventType = regexp.MustCompile(`^(\[DONE\]|[A-Za-z]{1,40})$`)
		reRow       = regexp.MustCompile(`^[A-Za-z0-9_]{0,32}$`)
		reTime      = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
		reFailure   = regexp.MustCompile(`^[a-z ]{1,40}: [A-Za-z0-9 ,.()=<>/_:\[\]{}+"-]{1,200}$`)
		// reCause is a transport cause token of the Postman adapter's diagnosis.
		reCause = regexp.MustCompile(`^(tls_unknown_authority|tls_hostname_mismatch|tls_certificate_invalid|tls_handshake_failed|` +
			`dns_not_found|dns_failed|connection_refused|connection_reset|connection_closed|timeout|cancelled|other)$`)
	)
	return &reportRules{
		code:   reCode,
		idLike: regexp.MustCompile(`(?i)call_pmn_|chatcmpl|(^|[^a-z0-9])(conv|grp|tc|sk)-|bearer|postman\.sid|[0-9a-f]{16}|[A-Za-z0-9+/_-]{41}`),
		fields: map[string]*regexp.Regexp{
			"schema":              regexp.MustCompile(`^` + regexp.QuoteMeta(reportSchema) + `$`),
			"version":             reVersion,
			"commit":              reCommit,
			"written_at":          reTime,
			"mode":                regexp.MustCompile(`^(live|emulator)$`),
			"strategy":            regexp.MustCompile(`^(web_session|access_token)$`),
			"config_fingerprint":  reFinger,
			"terminal_rule":       regexp.MustCompile(`^(legacy_done|explicit_only|usage_after_output_v1)$`),
			"model.public":        rePublic,
			"model.upstream_enum": reEnum,
			"verdict":             regexp.MustCompile(`^(pass|fail)$`),
			"failures[]":          reFailure,
			"limits.continuation": regexp.MustCompile(`^(accepted|rejected|refused_by_gateway|not_tried)$`),
			"query_unit.result":   regexp.MustCompile(`^(code_points|utf16_units|undecided)$`),
			"parallel.result":     regexp.MustCompile(`^(accepted|rejected|no_group|inconclusive)$`),
			"pending.result":      regexp.MustCompile(`^(kept|dropped|unknown)$`),
			"pending.unknown_at":  regexp.MustCompile(`^(|query_limit|first_query|first_result|user_query|late_result)$`),
			"*.requests[].kind": regexp.MustCompile(`^(text|tool_initial|tool_continuation|limit_fresh|limit_tools|limit_continuation|` +
				`unit_astral|parallel_initial|parallel_continuation|pending_first_query|pending_first_result|pending_user_query|pending_late_result)$`),
			"*.requests[].tool_choice":                    regexp.MustCompile(`^(|required|auto|none)$`),
			"*.requests[].error_code":                     reCode,
			"*.requests[].finish_reason":                  reEnumWord,
			"*.requests[].calls[].name":                   regexp.MustCompile(`^(probe_alpha|probe_beta|other)$`),
			"*.requests[].upstream[].chat_type":           regexp.MustCompile(`^(USER_QUERY|TOOL_RESPONSE)$`),
			"*.requests[].upstream[].error_code":          reCode,
			"*.requests[].upstream[].rule":                regexp.MustCompile(`^(|legacy_done|explicit_only|usage_after_output_v1)$`),
			"*.requests[].upstream[].row":                 reRow,
			"*.requests[].upstream[].outcome":             reCode,
			"*.requests[].upstream[].cause":               reCause,
			"*.requests[].upstream[].upstream_error_type": regexp.MustCompile(`^[A-Z][A-Z0-9_]{2,63}$`),
			"*.requests[].disclosure": regexp.MustCompile(`^(` + strings.Join([]string{app.DisclosedAfterFailure,
				app.DisclosedFromEarlierPoint, app.DisclosedChangedInstructions, app.DisclosedEarlierHistory}, "|") + `)$`),
			"*.cause": regexp.MustCompile(reCause.String() + "|" + reCode.String()),
			"*.requests[].upstream[].terminal_evidence[]": regexp.MustCompile(`^(done_marker|done_event|usage_after_output)$`),
			"*.requests[].upstream[].usage_position":      regexp.MustCompile(`^(|none|before_output|after_output|around_output|no_output)$`),
			"*.requests[].upstream[].usage_fields[]":      regexp.MustCompile(`^(` + strings.Join(postman.UsageFieldNames(), "|") + `)$`),
			"*.requests[].upstream[].event_types{}":       reEventType,
			"*.requests[].upstream[].would_complete{}":    regexp.MustCompile(`^(legacy_done|explicit_only|usage_after_output_v1)$`),
		},
	}
})

// idExempt are the fields whose patterns already allow hex runs.
var idExempt = map[string]bool{"commit": true, "config_fingerprint": true}

// hygiene walks the raw report and returns the first problem: a string at a
// path without a rule, a string not matching its rule, or one that looks like
// an id or secret. secrets (optional) are values that must not occur anywhere.
func hygiene(raw []byte, secrets []string) string {
	for _, s := range secrets {
		// Values shorter than 6 bytes would match numbers by chance; every
		// configured secret is far longer, markers too.
		if len(s) >= 6 && bytes.Contains(raw, []byte(s)) {
			return "the report contains a configured secret or a marker"
		}
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return "not JSON"
	}
	return walkHygiene(doc, "")
}

func walkHygiene(v any, path string) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		free := freeMap("." + path)
		for _, k := range keys {
			if free {
				if p := checkString(path+"{}", k); p != "" {
					return p
				}
				continue
			}
			if p := walkHygiene(x[k], strings.TrimPrefix(path+"."+k, ".")); p != "" {
				return p
			}
		}
	case []any:
		for _, e := range x {
			if p := walkHygiene(e, path+"[]"); p != "" {
				return p
			}
		}
	case string:
		return checkString(path, x)
	}
	return ""
}

func checkString(path, s string) string {
	rules := reportPatterns()
	rule := rules.fields[path]
	if rule == nil {
		if _, rest, ok := strings.Cut(path, "."); ok {
			rule = rules.fields["*."+rest]
			if rule == nil {
				if _, rest2, ok := strings.Cut(rest, "."); ok { // limits.phase.requests…
					rule = rules.fields["*."+rest2]
				}
			}
		}
	}
	if rule == nil {
		return fmt.Sprintf("field %s holds a string where none is expected", path)
	}
	if !rule.MatchString(s) {
		return fmt.Sprintf("field %s holds a value that looks like content, an id or a secret", path)
	}
	if !idExempt[path] && rules.idLike.MatchString(s) {
		return fmt.Sprintf("field %s holds a value that looks like an id or a secret", path)
	}
	return ""
}
