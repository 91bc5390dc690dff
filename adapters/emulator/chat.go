package emulator

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const redacted = "REDACTED"

// secretHeaders are replaced by "REDACTED" in recorded headers.
var secretHeaders = []string{"Cookie", "X-Access-Token", "Authorization"}

// serveChat handles every path other than /_emulator/*: strategy recognition,
// strict checks, then the turn and its stream.
func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	strategy := s.strategyOf(r.Host)
	rec := Request{Strategy: strategy, Header: redactHeader(r.Header)}
	refuse := func(status int, msg string) {
		rec.Status, rec.Rejected = status, true
		s.record(rec)
		writeError(w, status, msg)
	}

	path := s.cfg.ChatPath
	if strategy == StrategyWebSession {
		path = webChatPath
	}
	if r.URL.Path != path || r.URL.RawPath != "" || r.URL.RawQuery != "" {
		refuse(http.StatusNotFound, "Not found")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		refuse(http.StatusMethodNotAllowed, "Method not allowed")
		return
	}
	if rej := s.checkHeaders(strategy, r); rej != nil {
		refuse(rej.status, rej.msg)
		return
	}
	if !s.countRate(w.Header(), time.Now()) {
		refuse(http.StatusTooManyRequests, "Too many requests")
		return
	}
	if r.ContentLength > maxBodyBytes {
		refuse(http.StatusRequestEntityTooLarge, msgTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	rec.Body = body
	if err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			refuse(http.StatusRequestEntityTooLarge, msgTooLarge)
		} else {
			refuse(http.StatusBadRequest, msgInvalidBody)
		}
		return
	}
	req, chatType, rej := s.parseChat(strategy, body)
	rec.ChatType = chatType
	if req != nil {
		rec.ConversationID = req.conversationID
	}
	if rej != nil {
		refuse(rej.status, rej.msg)
		return
	}
	scenario, loop, toolName, msg := directives(req)
	if msg != "" {
		refuse(http.StatusBadRequest, msg)
		return
	}
	approval, ok := approvalDirective(req)
	if !ok {
		refuse(http.StatusBadRequest, msgBadDirective)
		return
	}
	if approval == 0 {
		approval = s.cfg.LoopApprovalAfter
	}
	chunks, ok := textChunksDirective(req)
	if !ok {
		refuse(http.StatusBadRequest, msgBadDirective)
		return
	}
	usageMode, ok := usageDirective(req)
	if !ok {
		refuse(http.StatusBadRequest, msgBadDirective)
		return
	}
	silence, ok := delayDirective(req)
	if !ok {
		refuse(http.StatusBadRequest, msgBadDirective)
		return
	}
	if req.pending, ok = pendingDirective(req); !ok {
		refuse(http.StatusBadRequest, msgBadDirective)
		return
	}
	if usageMode == "" {
		usageMode = s.cfg.Usage
	}
	rec.Scenario = scenario
	if scenario == ScenarioRateWindowSpent {
		setRateHeaders(w.Header(), spentLimit, 0, time.Now().Add(spentReset), spentWindow)
	}
	if scenarios[scenario] == scenarioHTTP {
		s.serveHTTPScenario(w, scenario, rec)
		return
	}
	if refusal, failure := s.refusalOf(req); failure != nil {
		// Refused the way the service is reported to: a failure event, and no
		// conversation is touched.
		rec.Refusal, rec.Status = refusal, http.StatusOK
		s.record(rec)
		b := &streamBuilder{strategy: strategy}
		b.event("failure", failure)
		s.writeStream(r.Context(), w, b.frames, 0)
		return
	}

	t := s.runTurn(strategy, req, loop, approval, toolName, scenarios[scenario] != scenarioText, scenario, usageMode)
	if t.convID != "" {
		rec.ConversationID = t.convID
	}
	rec.Turn, rec.Repeated = t.turnNo, t.repeated
	t.textChunks = chunks
	frames, tokens := s.render(strategy, s.cfg.Models[req.model], len(body), t, scenario, req.chatType)
	s.addContext(t.convID, tokens)
	var delay time.Duration
	if scenario == ScenarioSlowStream {
		delay = s.cfg.SlowDelay
	}
	rec.Status = http.StatusOK
	s.record(rec)
	if silence > 0 {
		t := time.NewTimer(silence)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	s.writeStream(r.Context(), w, frames, delay)
}

// The rate_window_spent scenario's window: the measured policy (30;w=60) and
// the fixture's reset, 59 s after the answer.
const (
	spentLimit  = 30
	spentWindow = 60 * time.Second
	spentReset  = 59 * time.Second
)

// countRate counts one authenticated request against Config.RateLimit (when
// set) and writes the window's headers into h. It reports false when the
// window had no request left: the request is refused 429.
func (s *Server) countRate(h http.Header, now time.Time) bool {
	if s.cfg.RateLimit <= 0 {
		return true
	}
	s.rateMu.Lock()
	if s.rateStart.IsZero() || !now.Before(s.rateStart.Add(s.cfg.RateWindow)) {
		s.rateStart, s.rateUsed = now, 0
	}
	ok := s.rateUsed < s.cfg.RateLimit
	if ok {
		s.rateUsed++
	}
	remaining, reset := s.cfg.RateLimit-s.rateUsed, s.rateStart.Add(s.cfg.RateWindow)
	s.rateMu.Unlock()
	setRateHeaders(h, s.cfg.RateLimit, remaining, reset, s.cfg.RateWindow)
	return ok
}

// setRateHeaders writes the service's rate-limit headers: the reset in
// epoch milliseconds, the policy as "<limit>;w=<seconds>".
func setRateHeaders(h http.Header, limit, remaining int, reset time.Time, window time.Duration) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.UnixMilli(), 10))
	h.Set("RateLimit-Policy", fmt.Sprintf("%d;w=%d", limit, int(window/time.Second)))
}

// refusalOf applies the request-side constraints the public projects report:
// at most MaxTools tools, no anyOf/$ref in schemas (with ForbidSchemaKeywords)
// and a query of at most MaxQueryChars UTF-16 code units; and, when
// MaxToolResultChars is set, tool results of at most that many. It returns the name
// of the refusal and the failure event's data, or ("", nil).
func (s *Server) refusalOf(req *chatRequest) (string, *failureData) {
	if len(req.tools) > s.cfg.MaxTools {
		return "too_many_tools", failForbiddenInput
	}
	if s.cfg.ForbidSchemaKeywords {
		for _, t := range req.tools {
			if t.forbidden {
				return "forbidden_schema", failForbiddenInput
			}
		}
	}
	n := utf16Len(req.query)
	if s.cfg.QueryCharsInCodePoints {
		n = utf8.RuneCountInString(req.query)
	}
	if n > s.cfg.MaxQueryChars {
		return "query_too_long", &failureData{ErrorType: "INPUT_VALIDATION_ERROR", UserMessage: fmt.Sprintf(queryLimitText, s.cfg.MaxQueryChars)}
	}
	if req.cont != nil && s.cfg.MaxToolResultChars > 0 {
		for _, r := range req.cont.results {
			if utf16Len(r.content) > s.cfg.MaxToolResultChars {
				return "tool_result_too_long", &failureData{ErrorType: "INPUT_VALIDATION_ERROR", UserMessage: fmt.Sprintf(queryLimitText, s.cfg.MaxToolResultChars)}
			}
		}
	}
	return "", nil
}

// strategyOf: Host "<Subdomain>.postman.co[:port]" is web_session, anything else access_token.
func (s *Server) strategyOf(host string) string {
	if s.cfg.Subdomain != "" && strings.EqualFold(hostname(host), s.cfg.Subdomain+".postman.co") {
		return StrategyWebSession
	}
	return StrategyAccessToken
}

func hostname(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// checkHeaders authenticates the request and checks the strategy's header
// policy. Order: TLS server name (web_session), credential (401), forbidden
// headers (400), required headers (400).
func (s *Server) checkHeaders(strategy string, r *http.Request) *rejection {
	h := r.Header
	if strategy == StrategyWebSession {
		if r.TLS == nil || !strings.EqualFold(r.TLS.ServerName, hostname(r.Host)) {
			return reject(http.StatusMisdirectedRequest, "Misdirected request")
		}
		cookies := h.Values("Cookie")
		if len(cookies) != 1 || !secretEqual(cookies[0], "postman.sid="+s.cfg.SessionCookie) {
			return reject(http.StatusUnauthorized, "Unauthorized")
		}
		if present(h, "X-Access-Token") || present(h, "Authorization") {
			return reject(http.StatusBadRequest, "Forbidden request header")
		}
		origin := "https://" + s.cfg.Subdomain + ".postman.co"
		if !jsonContentType(h) ||
			!single(h, "Accept", func(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "text/event-stream") }) ||
			!single(h, "X-Pstmn-Req-Service", equals("agent-mode-service")) ||
			!single(h, "Origin", equals(origin)) ||
			!single(h, "Referer", equals(origin+"/")) {
			return reject(http.StatusBadRequest, "Invalid request headers")
		}
		return nil
	}
	tokens := h.Values("X-Access-Token")
	if s.cfg.AccessToken == "" || len(tokens) != 1 || !secretEqual(tokens[0], s.cfg.AccessToken) {
		return reject(http.StatusUnauthorized, "Unauthorized")
	}
	if present(h, "Cookie") || present(h, "Authorization") {
		return reject(http.StatusBadRequest, "Forbidden request header")
	}
	if !jsonContentType(h) {
		return reject(http.StatusBadRequest, "Invalid request headers")
	}
	return nil
}

func present(h http.Header, name string) bool { return len(h.Values(name)) > 0 }

func equals(want string) func(string) bool { return func(v string) bool { return v == want } }

// single reports whether header name appears exactly once and satisfies ok.
func single(h http.Header, name string, ok func(string) bool) bool {
	v := h.Values(name)
	return len(v) == 1 && ok(v[0])
}

// jsonContentType accepts "application/json", optionally with charset=utf-8.
func jsonContentType(h http.Header) bool {
	return single(h, "Content-Type", func(v string) bool {
		mt, params, err := mime.ParseMediaType(v)
		if err != nil || mt != "application/json" {
			return false
		}
		for k, val := range params {
			if k != "charset" || !strings.EqualFold(val, "utf-8") {
				return false
			}
		}
		return true
	})
}

// secretEqual compares in constant time, length included (both sides hashed).
func secretEqual(got, want string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

func redactHeader(h http.Header) http.Header {
	out := h.Clone()
	for _, name := range secretHeaders {
		for i := range out[name] {
			out[name][i] = redacted
		}
	}
	return out
}

// serveHTTPScenario answers an HTTP-level fault; the conversation is untouched.
func (s *Server) serveHTTPScenario(w http.ResponseWriter, scenario string, rec Request) {
	status, msg := http.StatusOK, ""
	switch scenario {
	case ScenarioAuthFailure:
		status, msg = http.StatusUnauthorized, "Unauthorized"
	case ScenarioForbidden:
		status, msg = http.StatusForbidden, "Forbidden"
	case ScenarioRateLimited:
		status, msg = http.StatusTooManyRequests, "Too many requests"
		w.Header().Set("Retry-After", "7")
	case ScenarioServerError:
		status, msg = http.StatusServiceUnavailable, "Service unavailable"
	case ScenarioJSON200:
		msg = "Agent Mode is temporarily unavailable"
	case ScenarioRedirect:
		rec.Status = http.StatusFound
		s.record(rec)
		w.Header().Set("Location", "https://example.invalid/login")
		w.WriteHeader(http.StatusFound)
		return
	case ScenarioFirewallBlock:
		rec.Status = http.StatusForbidden
		s.record(rec)
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=UTF-8")
		h.Set("Server", "cloudflare")
		h.Set("Cf-Ray", "8f3a1c2b4d5e6f70-FRA")
		h.Set("Cf-Mitigated", "challenge")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, firewallPage)
		return
	case ScenarioDropAfterRequest:
		rec.Status = 0
		s.record(rec)
		dropConnection(w)
		return
	}
	rec.Status = status
	s.record(rec)
	writeError(w, status, msg)
}

// dropConnection closes the TCP connection under the response without writing
// anything (no TLS close_notify either).
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // aborts the connection without a response
	}
	if tc, ok := conn.(*tls.Conn); ok {
		_ = tc.NetConn().Close()
		return
	}
	_ = conn.Close()
}

// firewallPage is the shape of Cloudflare's block page: its title, the
// sentence and the ray id (ps2Api internal/provider/errors.go:109-113).
const firewallPage = `<!DOCTYPE html>
<html lang="en-US"><head><title>Attention Required! | Cloudflare</title></head>
<body><div id="cf-wrapper"><h1>Sorry, you have been blocked</h1>
<h2>You are unable to access postman.co</h2>
<p>This website is using a security service to protect itself from online attacks.</p>
<p>Cloudflare Ray ID: <strong>8f3a1c2b4d5e6f70</strong></p></div></body></html>
`
