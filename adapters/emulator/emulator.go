package emulator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Strategy names, as recorded in Request.Strategy.
const (
	StrategyWebSession  = "web_session"
	StrategyAccessToken = "access_token"
)

// Kinds accepted by Count.
const (
	KindUserQuery    = "USER_QUERY"
	KindToolResponse = "TOOL_RESPONSE"
	KindRejected     = "rejected"
	// KindRefusedInStream counts accepted requests the emulator refused the way
	// the service is reported to: a failure event (query too long, too many
	// tools, a forbidden schema keyword).
	KindRefusedInStream = "refused_in_stream"
	// KindContinuedQuery counts USER_QUERY requests that continued a known
	// conversation.
	KindContinuedQuery = "continued_user_query"
	// KindRepeatedGroup counts tool groups issued again because a parallel
	// group was answered with a flat form.
	KindRepeatedGroup = "repeated_tool_group"
)

// Continuation shapes accepted on the access_token strategy (Config.ContinuationShape).
const (
	ShapeBoth    = "both"
	ShapeGrouped = "grouped"
	ShapeFlat    = "flat"
)

const (
	defaultAddr          = "127.0.0.1:0"
	defaultChatPath      = "/_gw/chat"
	webChatPath          = "/_gw/chat"
	defaultChunkBytes    = 24
	defaultSlowDelay     = 200 * time.Millisecond
	defaultMaxQueryChars = 10000
	defaultMaxTools      = 20
	maxBodyBytes         = 8 << 20
	// maxRecorded and maxRecordedBytes bound the request log kept for Requests
	// (oldest dropped first); Count stays exact.
	maxRecorded      = 4096
	maxRecordedBytes = 64 << 20
	// maxConversations bounds the conversation table; the oldest is forgotten first.
	maxConversations = 4096
	// defaultRateWindow is the service's measured window (RateLimit-Policy
	// 30;w=60).
	defaultRateWindow = 60 * time.Second
)

// Config configures Start. Zero values take the documented defaults.
type Config struct {
	Addr        string // listen address, default "127.0.0.1:0"; must be a loopback address
	WorkspaceID string // required mandatoryContext.workspaceId

	// web_session strategy (both or neither)
	Subdomain     string // accepted Host is "<Subdomain>.postman.co" (any port)
	SessionCookie string // required `Cookie: postman.sid=<SessionCookie>`

	// access_token strategy
	AccessToken string // required `x-access-token`
	ChatPath    string // default "/_gw/chat"

	// Models maps an upstream selectedModel enum to the observed label sent in
	// metadata.model. Default: GPT_56_SOL, GPT_55, CLAUDE_OPUS_48_BEDROCK, each
	// labelled with its own enum.
	Models     map[string]string
	ChunkBytes int           // text chunk size in bytes, default 24
	SlowDelay  time.Duration // per-event delay of the slow_stream scenario, default 200ms
	CADir      string        // where ca.pem is written; default a new temp dir (removed by Close)
	// ContinuationShape selects the access_token continuation shapes accepted:
	// "both" (default), "grouped" or "flat".
	ContinuationShape string

	// Profile selects the whole behaviour (see Profiles): "strict" (default),
	// "usage_last_eof", "observed", "done_event" or "forbid_schemas".
	Profile string
	// MaxQueryChars is the input.query length, in UTF-16 code units, above which
	// a USER_QUERY is refused with the service's INPUT_VALIDATION_ERROR failure
	// (default 10000, as POSTMAN_MAX_QUERY_CHARS).
	MaxQueryChars int
	// QueryCharsInCodePoints counts MaxQueryChars in Unicode code points
	// instead of UTF-16 code units. The service's unit is open between the
	// two (ps2Api's CJK test cannot tell them apart); the probe's
	// --measure-query-unit settles it, and this lets it be watched offline.
	QueryCharsInCodePoints bool
	// MaxTools is the number of tools above which a request is refused as
	// Forbidden (default 20).
	MaxTools int
	// MaxToolResultChars is the length of one tool result, in UTF-16 code
	// units, above which a TOOL_RESPONSE is refused like an over-long query
	// (0, the default: no limit; the service's own is not known). As
	// POSTMAN_MAX_TOOL_RESULT_CHARS.
	MaxToolResultChars int
	// PlaceholderCommands makes a call's top-level string argument named
	// command or cmd (any case) the harmless, recognisable PlaceholderCommand
	// instead of "value-<name>": an agent runs what a bash-like tool is
	// given, and a person trying the demo should see what ran and why. Off in
	// tests that count the rounds by a "value-command" executable on PATH.
	PlaceholderCommands bool
	// ForbidSchemaKeywords refuses tools whose schema uses anyOf or $ref as
	// Forbidden (on with the forbid_schemas profile).
	ForbidSchemaKeywords bool
	// LoopApprovalAfter makes the next tool round of a conversation a
	// loopApprovalChunk once it has had this many tool rounds (0: never; the
	// "#approval_after=N" directive sets it per conversation).
	LoopApprovalAfter int
	// Usage says what the usage events count: UsagePerRequest (default, ""
	// too) counts one exchange (its body and its output); UsagePerConversation
	// reports the conversation's context: its prompt tokens grow with every
	// exchange of the conversation, as the service's context does (Codex
	// decides when to compact from them). "#usage=request|conversation" in a
	// USER_QUERY sets it for that conversation.
	Usage string
	// RateLimit, when positive, makes every authenticated answer carry the
	// service's rate-limit headers for a window of RateLimit requests per
	// RateWindow (default 60 s), as the service's chat route does
	// (X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset in epoch
	// milliseconds, RateLimit-Policy "<limit>;w=<seconds>"; ps2Api
	// internal/provider/ossfunc_test.go:43). A request beyond the limit is
	// answered 429 with the headers and no Retry-After (no source shows the
	// service's 429 body) and counted as rejected.
	RateLimit  int
	RateWindow time.Duration
	// PendingOnQuery says what a USER_QUERY does to the conversation's pending
	// tool group, which nobody has measured on the service yet:
	// PendingDropped (default, "" too) abandons it, so its TOOL_RESPONSE
	// afterwards fails with TOOL_CALL_NOT_FOUND; PendingKept keeps it
	// answerable after the new turn (until it is answered or another group is
	// kept in its place). "#pending=drop|keep" in a USER_QUERY sets it for
	// that conversation from then on.
	PendingOnQuery string
}

// The modes of Config.PendingOnQuery and "#pending=…".
const (
	PendingDropped = "drop"
	PendingKept    = "keep"
)

// The usage modes of Config.Usage and "#usage=…".
const (
	UsagePerRequest      = "request"
	UsagePerConversation = "conversation"
)

// Request is one recorded chat request.
type Request struct {
	Strategy       string // "web_session" or "access_token"
	ChatType       string // input.chatType when it was readable and valid, else ""
	ConversationID string // input.conversationId, or the id created for it
	Scenario       string // the selected scenario, "" for none or an unknown name
	Status         int    // HTTP status sent; 0 when the connection was dropped
	Rejected       bool   // refused by validation (counted as "rejected" by Count)
	// Refusal names an in-stream refusal: "query_too_long", "too_many_tools"
	// or "forbidden_schema"; "" for none.
	Refusal string
	// Turn is the conversation's USER_QUERY turn number (1 for a new
	// conversation, 2… when a USER_QUERY continued it); 0 for a TOOL_RESPONSE.
	Turn int
	// Repeated: the answer repeated a parallel group answered with a flat form.
	Repeated bool
	Body     []byte // the raw body as read (at most 8 MiB)
	// Header is a copy of the request headers with Cookie, x-access-token and
	// Authorization values replaced by "REDACTED".
	Header http.Header
}

// Server is a running emulator.
type Server struct {
	cfg      Config
	caCert   *x509.Certificate
	caFile   string
	ownDir   string // temp CA dir created by Start, removed by Close
	addr     string
	httpSrv  *http.Server
	serveErr chan error
	closing  chan struct{}

	closeOnce sync.Once
	closeErr  error

	lifeMu   sync.Mutex
	closed   bool
	handlers sync.WaitGroup
	active   atomic.Int64

	recMu    sync.Mutex
	records  []Request
	recBytes int // sum of len(Body) over records
	counts   map[string]int

	convMu    sync.Mutex
	convs     map[string]*conversation
	convOrder []string

	rateMu    sync.Mutex
	rateStart time.Time // the current window's start; zero before the first request
	rateUsed  int       // requests counted in the current window
	once      onceTurns // the "#once" messages that have applied (once.go)

	credMu  sync.Mutex
	credits Credits // the plan the usage events report (credits.go)
}

var subdomainRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`) })

// Start validates cfg, generates the TLS material, writes <CADir>/ca.pem and
// serves until Close is called or ctx is done.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	ca, leaf, err := newCertificates(time.Now())
	if err != nil {
		return nil, fmt.Errorf("emulator: certificates: %w", err)
	}

	s := &Server{
		cfg:      cfg,
		caCert:   ca.cert,
		serveErr: make(chan error, 1),
		closing:  make(chan struct{}),
		counts:   map[string]int{},
		convs:    map[string]*conversation{},
		credits:  DefaultCredits(time.Now()),
	}
	dir := cfg.CADir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "pmgate-emulator-"); err != nil {
			return nil, fmt.Errorf("emulator: CA dir: %w", err)
		}
		s.ownDir = dir
	} else if err = os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("emulator: CA dir: %w", err)
	}
	s.caFile = filepath.Join(dir, "ca.pem")
	if err = os.WriteFile(s.caFile, ca.pem, 0o644); err != nil {
		s.removeOwnDir()
		return nil, fmt.Errorf("emulator: write CA: %w", err)
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		s.removeOwnDir()
		return nil, fmt.Errorf("emulator: listen: %w", err)
	}
	s.addr = ln.Addr().String()
	tlsCfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{leaf},
		// HTTP/1.1 only: drop_after_request hijacks the connection.
		NextProtos: []string{"http/1.1"},
	}
	s.httpSrv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { s.serveErr <- s.httpSrv.Serve(tls.NewListener(ln, tlsCfg)) }()
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.closing:
		}
	}()
	return s, nil
}

func withDefaults(cfg Config) (Config, error) {
	if cfg.Addr == "" {
		cfg.Addr = defaultAddr
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return cfg, errors.New("emulator: Addr must be host:port")
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return cfg, errors.New("emulator: Addr must be a loopback address")
	}
	if cfg.WorkspaceID == "" {
		return cfg, errors.New("emulator: WorkspaceID is required")
	}
	if (cfg.Subdomain == "") != (cfg.SessionCookie == "") {
		return cfg, errors.New("emulator: Subdomain and SessionCookie go together")
	}
	if cfg.Subdomain != "" && !subdomainRE().MatchString(cfg.Subdomain) {
		return cfg, errors.New("emulator: Subdomain must be one lowercase DNS label")
	}
	if cfg.Subdomain == "" && cfg.AccessToken == "" {
		return cfg, errors.New("emulator: configure web_session (Subdomain, SessionCookie) or access_token (AccessToken)")
	}
	if cfg.ChatPath == "" {
		cfg.ChatPath = defaultChatPath
	}
	if cfg.ChatPath[0] != '/' || strings.HasPrefix(cfg.ChatPath, "//") || strings.ContainsAny(cfg.ChatPath, "?#% ") ||
		strings.Contains(cfg.ChatPath, "..") || strings.HasPrefix(cfg.ChatPath, "/_emulator/") {
		return cfg, errors.New("emulator: ChatPath must be an absolute path without query, fragment, '%', '..' or /_emulator/")
	}
	if len(cfg.Models) == 0 {
		cfg.Models = map[string]string{
			"GPT_56_SOL":             "GPT_56_SOL",
			"GPT_55":                 "GPT_55",
			"CLAUDE_OPUS_48_BEDROCK": "CLAUDE_OPUS_48_BEDROCK",
		}
	} else {
		cfg.Models = maps.Clone(cfg.Models)
	}
	for enum, label := range cfg.Models {
		if enum == "" || label == "" {
			return cfg, errors.New("emulator: Models entries must be non-empty")
		}
	}
	if cfg.ChunkBytes <= 0 {
		cfg.ChunkBytes = defaultChunkBytes
	}
	if cfg.SlowDelay <= 0 {
		cfg.SlowDelay = defaultSlowDelay
	}
	switch cfg.Profile {
	case "":
		cfg.Profile = ProfileStrict
	default:
		if _, ok := profiles[cfg.Profile]; !ok {
			return cfg, errors.New("emulator: unknown Profile")
		}
	}
	if profiles[cfg.Profile].forbidSchemas {
		cfg.ForbidSchemaKeywords = true
	}
	if cfg.MaxQueryChars <= 0 {
		cfg.MaxQueryChars = defaultMaxQueryChars
	}
	if cfg.MaxTools <= 0 {
		cfg.MaxTools = defaultMaxTools
	}
	if cfg.RateLimit < 0 || cfg.RateWindow < 0 {
		return cfg, errors.New("emulator: RateLimit and RateWindow must not be negative")
	}
	if cfg.RateLimit > 0 && cfg.RateWindow == 0 {
		cfg.RateWindow = defaultRateWindow
	}
	if cfg.LoopApprovalAfter < 0 {
		return cfg, errors.New("emulator: LoopApprovalAfter must not be negative")
	}
	switch cfg.Usage {
	case "":
		cfg.Usage = UsagePerRequest
	case UsagePerRequest, UsagePerConversation:
	default:
		return cfg, errors.New(`emulator: Usage must be "request" or "conversation"`)
	}
	switch cfg.PendingOnQuery {
	case "":
		cfg.PendingOnQuery = PendingDropped
	case PendingDropped, PendingKept:
	default:
		return cfg, errors.New(`emulator: PendingOnQuery must be "drop" or "keep"`)
	}
	switch cfg.ContinuationShape {
	case "":
		cfg.ContinuationShape = ShapeBoth
	case ShapeBoth, ShapeGrouped, ShapeFlat:
	default:
		return cfg, errors.New(`emulator: ContinuationShape must be "both", "grouped" or "flat"`)
	}
	return cfg, nil
}

// Origin is the access_token origin, "https://127.0.0.1:PORT".
func (s *Server) Origin() string { return "https://" + s.addr }

// Addr is the listen address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return s.addr }

// CAFile is the path of the PEM CA certificate to trust.
func (s *Server) CAFile() string { return s.caFile }

// CertPool returns a new pool holding only the emulator's CA.
func (s *Server) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(s.caCert)
	return pool
}

// Requests returns a copy of the recorded requests, oldest first: every request
// to a path other than /_emulator/*, rejected ones included (a wrong path is a
// rejected 404). The log keeps at most 4096 requests and 64 MiB of bodies.
func (s *Server) Requests() []Request {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	out := make([]Request, len(s.records))
	for i, r := range s.records {
		r.Body = append([]byte(nil), r.Body...)
		r.Header = r.Header.Clone()
		out[i] = r
	}
	return out
}

// Count is the number of requests of a kind since Start or Reset: "USER_QUERY"
// and "TOOL_RESPONSE" count accepted requests by chat type, "rejected" counts
// requests refused by validation. Scenario responses are not rejections.
func (s *Server) Count(kind string) int {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	return s.counts[kind]
}

// Reset forgets the recorded requests and counts; conversations are kept.
func (s *Server) Reset() {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	s.records, s.recBytes = nil, 0
	s.counts = map[string]int{}
}

// ForgetConversations drops every conversation the emulator holds, as the
// service does when it loses one: a later turn naming one fails with
// CONVERSATION_NOT_FOUND.
func (s *Server) ForgetConversations() {
	s.convMu.Lock()
	defer s.convMu.Unlock()
	clear(s.convs)
	s.convOrder = s.convOrder[:0]
}

// Close stops the server, ends every open stream, waits for the handlers to
// return and removes a CA directory that Start created. It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.lifeMu.Lock()
		s.closed = true
		s.lifeMu.Unlock()
		close(s.closing)
		err := s.httpSrv.Close()
		if serveErr := <-s.serveErr; err == nil && !errors.Is(serveErr, http.ErrServerClosed) {
			err = serveErr
		}
		s.handlers.Wait()
		s.removeOwnDir()
		s.closeErr = err
	})
	return s.closeErr
}

func (s *Server) removeOwnDir() {
	if s.ownDir != "" {
		_ = os.RemoveAll(s.ownDir)
	}
}

// enter registers a running handler; it fails once Close has begun.
func (s *Server) enter() bool {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	s.active.Add(1)
	return true
}

func (s *Server) leave() {
	s.active.Add(-1)
	s.handlers.Done()
}

// record stores a request; it runs before the response body is written, so a
// client that has seen the response always finds the record.
func (s *Server) record(rec Request) {
	kind := rec.ChatType
	if rec.Rejected || kind == "" {
		kind = KindRejected
		rec.Rejected = true
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	s.counts[kind]++
	if rec.Refusal != "" {
		s.counts[KindRefusedInStream]++
	}
	if rec.Turn > 1 {
		s.counts[KindContinuedQuery]++
	}
	if rec.Repeated {
		s.counts[KindRepeatedGroup]++
	}
	s.records = append(s.records, rec)
	s.recBytes += len(rec.Body)
	for len(s.records) > maxRecorded || len(s.records) > 1 && s.recBytes > maxRecordedBytes {
		s.recBytes -= len(s.records[0].Body)
		s.records[0] = Request{} // release the body
		s.records = s.records[1:]
	}
}

// ServeHTTP routes the emulator's own endpoints and the chat endpoint.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		writeError(w, http.StatusServiceUnavailable, "Service unavailable")
		return
	}
	defer s.leave()
	switch r.URL.Path {
	case "/_emulator/health":
		s.serveHealth(w, r)
	case "/_emulator/requests":
		s.serveRequestList(w, r)
	default:
		s.serveChat(w, r)
	}
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

type requestSummary struct {
	Strategy string `json:"strategy"`
	ChatType string `json:"chat_type"`
	Scenario string `json:"scenario"`
	Status   int    `json:"status"`
	Refusal  string `json:"refusal,omitempty"`
	Turn     int    `json:"turn,omitempty"`
	Repeated bool   `json:"repeated,omitempty"`
}

func (s *Server) serveRequestList(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed")
		return
	}
	s.recMu.Lock()
	list := make([]requestSummary, len(s.records))
	for i, rec := range s.records {
		list[i] = requestSummary{Strategy: rec.Strategy, ChatType: rec.ChatType, Scenario: rec.Scenario, Status: rec.Status,
			Refusal: rec.Refusal, Turn: rec.Turn, Repeated: rec.Repeated}
	}
	s.recMu.Unlock()
	writeJSON(w, http.StatusOK, list)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"Internal error"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

type errorBody struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

// writeError writes {"error":{"message":msg}}. msg is always a constant of this
// package, never request data.
func writeError(w http.ResponseWriter, status int, msg string) {
	var e errorBody
	e.Error.Message = msg
	writeJSON(w, status, e)
}
