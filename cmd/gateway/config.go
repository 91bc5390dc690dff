package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/keyfile"
	"github.com/pmgate/pmgate/adapters/otel"
	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/adapters/update"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/keyring"
	"github.com/pmgate/pmgate/domain/setting"
	ledger "github.com/pmgate/pmgate/domain/usage"
)

// config is the whole gateway configuration (docs/CONFIGURATION.md). The
// Postman adapter's part (POSTMAN_*) is parsed and validated by pmconfig; the
// request settings by request.go; this file owns the rest.
type config struct {
	host            string
	port            int
	apiKey          string
	keysFile        string          // PROVIDER_KEYS_FILE (exclusive with apiKey)
	keys            keyring.Ring    // the slots read from keysFile at start-up
	keysSum         [32]byte        // hash of that content, for the watcher
	upstream        pmconfig.Config // with its Limits set from request
	request         requestConfig
	maxConcurrent   int
	maxConnections  int
	bodyTimeout     time.Duration
	allowedHosts    []string // PROVIDER_HOST and ALLOWED_HOSTS; loopback is always served
	correlation     bool
	principalKey    []byte
	principalRandom bool
	limits          correlation.Limits
	policy          correlation.Policy
	store           string
	postgresURL     string
	continuity      bool
	resume          bool
	usageEstimates  bool // USAGE_ESTIMATES
	anchorLimits    conversation.Limits
	anchorPolicy    conversation.Policy
	attemptTTL      time.Duration // IDEMPOTENCY_TTL_MS
	attemptBytes    int           // IDEMPOTENCY_CACHE_BYTES; 0: repeats are not recognised
	logLevel        slog.Level
	logFormat       string
	adminEnabled    bool   // ADMIN_ENABLED: serve /admin
	metricsOpen     bool   // METRICS_AUTH=none: /metrics without a key
	probeReport     string // PROBE_REPORT: a probe report for /health's upstream_verified
	// updateManifest is UPDATE_MANIFEST_URL: where the control page's update
	// notice reads the latest release (nil: never checked, nothing fetched).
	updateManifest  *url.URL
	usageRetention  int  // USAGE_RETENTION_DAYS: days of the usage ledger kept
	readyNeedsProbe bool // PROBE_REQUIRED_FOR_READY: /readyz needs upstream_verified
	// drainDelay is SHUTDOWN_DELAY_MS: how long, after SIGINT/SIGTERM, the
	// gateway keeps serving with /readyz answering 503 draining before it
	// stops accepting (a load balancer's window to take it out).
	drainDelay time.Duration
	// sslCertFile and sslCertDir are SSL_CERT_FILE and SSL_CERT_DIR as the
	// configuration (env file included) says; the upstream's trust is built
	// from them (tls.go).
	sslCertFile, sslCertDir string
	// otelEndpoint is the OTLP/HTTP traces URL of the standard
	// OTEL_EXPORTER_OTLP_* variables ("" : tracing off); otelService is
	// OTEL_SERVICE_NAME.
	otelEndpoint, otelService string
	// fileWarnings are about the env file, shown whether or not the
	// configuration is accepted: names that look like settings but are not
	// read (with the nearest known name), and settings the real environment
	// overrides with a different value.
	fileWarnings []string
}

// invalid is a refusal in domain/setting's one wording. rule is a constant of
// this package (never a configured value): it is kept as the safe format, so
// the redacted form still names the variable and the rule.
func invalid(variable, rule string) error {
	return setting.Refuse(setting.Name(variable), strings.ReplaceAll(rule, "%", "%%"))
}

func loadConfig(getenv func(string) string) (config, error) {
	var c config
	var err error
	var problems []error
	bad := func(err error) {
		if err != nil {
			problems = append(problems, err)
		}
	}
	bad(refusePlaceholders(getenv))
	if c.host = getenv("PROVIDER_HOST"); c.host == "" {
		c.host = "127.0.0.1"
	}
	if c.host != "localhost" && net.ParseIP(c.host) == nil {
		bad(invalid("PROVIDER_HOST", "must be an IP address or localhost"))
	}
	c.port, err = intVar(getenv, "PROVIDER_PORT", 8788, 0, 65535)
	bad(err)
	c.apiKey, c.keysFile = getenv("PROVIDER_API_KEY"), getenv("PROVIDER_KEYS_FILE")
	switch {
	case c.apiKey != "" && c.keysFile != "":
		bad(invalid("PROVIDER_KEYS_FILE", "exclusive with PROVIDER_API_KEY: set one of them"))
	case c.keysFile == "":
		bad(checkAPIKey(c.apiKey))
	}
	models, modelsErr := parseModels(getenv)
	c.upstream, err = pmconfig.Parse(getenv, models)
	c.request.models = models
	limits, limitsErr := parseLimits(getenv)
	c.request.limits, c.upstream.Limits = limits, limits
	bad(err)
	bad(modelsErr)
	bad(limitsErr)
	// Every independent problem is reported in one run: the tool schema
	// settings and the key file are checked whatever else failed (the key
	// file's allowlists against the models only when those parsed).
	c.request.toolSchemaPolicy, c.request.widenCombinators, err = parseToolSchema(getenv)
	bad(err)
	if c.keysFile != "" {
		if c.keys, c.keysSum, err = keyfile.Load(c.keysFile, c.request.models); err != nil {
			bad(err)
		} else if len(c.keys.Slots) == 0 {
			bad(invalid("PROVIDER_KEYS_FILE", "has no slot: add one with `gateway keys new`"))
		}
	}
	c.maxConcurrent, err = intVar(getenv, "MAX_CONCURRENT_REQUESTS", 16, 1, 4096)
	bad(err)
	c.maxConnections, err = intVar(getenv, "MAX_CONNECTIONS", httpapi.DefaultMaxConnections, 1, 65536)
	bad(err)
	bodyMS, err := intVar(getenv, "BODY_READ_TIMEOUT_MS", 30000, 100, 3600000)
	bad(err)
	c.bodyTimeout = time.Duration(bodyMS) * time.Millisecond
	hosts, ok := httpapi.ParseAllowedHosts(getenv("ALLOWED_HOSTS"))
	if !ok {
		bad(invalid("ALLOWED_HOSTS", "must be a comma list of host names or IP addresses, without port, scheme or wildcard"))
	}
	c.allowedHosts = append([]string{c.host}, hosts...)
	c.correlation, err = boolVar(getenv, "CORRELATION_ENABLED", true)
	bad(err)
	c.store, err = setting.Enum(getenv, "CORRELATION_STORE", "memory", "memory", "postgres")
	bad(err)
	c.postgresURL = getenv("CORRELATION_POSTGRES_URL")
	if c.store == "postgres" && c.postgresURL == "" {
		bad(invalid("CORRELATION_POSTGRES_URL", "required with CORRELATION_STORE=postgres"))
	}
	if c.store == "memory" && c.postgresURL != "" {
		bad(invalid("CORRELATION_POSTGRES_URL", "only with CORRELATION_STORE=postgres"))
	}
	if k := getenv("CORRELATION_PRINCIPAL_KEY"); k != "" {
		c.principalKey, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(k, "="))
		switch {
		case err != nil:
			bad(invalid("CORRELATION_PRINCIPAL_KEY", "must be base64url of at least 32 bytes: it is not base64url (A-Z a-z 0-9 - _)"))
		case len(c.principalKey) < 32:
			bad(setting.Refuse("CORRELATION_PRINCIPAL_KEY", "too short: decodes to %d bytes, needs at least 32 (`openssl rand -base64 32 | tr '+/' '-_'` makes one)", setting.Int(len(c.principalKey))))
		}
	} else {
		if c.store == "postgres" {
			bad(invalid("CORRELATION_PRINCIPAL_KEY", "required with a shared store"))
		}
		c.principalKey, c.principalRandom = make([]byte, 32), true
		if _, err := rand.Read(c.principalKey); err != nil {
			return c, err // the CSPRNG failed: nothing else matters
		}
	}
	pending, err := intVar(getenv, "CORRELATION_PENDING_TTL_MS", 900000, 1000, 86400000)
	bad(err)
	terminal, err := intVar(getenv, "CORRELATION_TERMINAL_TTL_MS", 900000, 1000, 86400000)
	bad(err)
	c.policy = correlation.Policy{
		PendingTTL:  time.Duration(pending) * time.Millisecond,
		TerminalTTL: time.Duration(terminal) * time.Millisecond,
		// A claim's hard deadline is the request timeout plus 30 s
		// (docs/CORRELATION.md).
		InflightTTL: c.request.limits.RequestTimeout + 30*time.Second,
	}
	c.limits.MaxGroups, err = intVar(getenv, "CORRELATION_MAX_GROUPS", 1000, 1, 1000000)
	bad(err)
	c.limits.MaxCalls, err = intVar(getenv, "CORRELATION_MAX_CALLS", 4096, 1, 4000000)
	bad(err)
	// One key's share of the pool: a quarter by default, so that one key's
	// abandoned tool calls never refuse another key's turn
	// (docs/CORRELATION.md); setting it to CORRELATION_MAX_GROUPS restores
	// one pool.
	c.limits.MaxGroupsPerKey, err = intVar(getenv, "CORRELATION_MAX_GROUPS_PER_KEY", max(1, (c.limits.MaxGroups+3)/4), 1, max(1, c.limits.MaxGroups))
	bad(err)
	c.limits.ResponseCacheBytes, err = intVar(getenv, "CORRELATION_RESPONSE_CACHE_BYTES", 8<<20, 0, 1<<30)
	bad(err)
	c.continuity, err = boolVar(getenv, "CONVERSATION_CONTINUITY", true)
	bad(err)
	c.resume, err = boolVar(getenv, "CONVERSATION_RESUME", true)
	bad(err)
	c.usageEstimates, err = boolVar(getenv, "USAGE_ESTIMATES", true)
	bad(err)
	convTTL, err := intVar(getenv, "CONVERSATION_TTL_MS", 1800000, 1000, 86400000)
	bad(err)
	c.anchorLimits.MaxAnchors, err = intVar(getenv, "CONVERSATION_MAX_ANCHORS", 10000, 1, 1000000)
	bad(err)
	// Tombstones live as long as the correlation's; a claim's hard deadline is
	// that of a tool continuation: the request timeout plus a margin.
	c.anchorPolicy = conversation.Policy{TTL: time.Duration(convTTL) * time.Millisecond,
		ClaimTTL: c.policy.InflightTTL, TerminalTTL: c.policy.TerminalTTL}
	// A retry never spends twice (docs/USAGE.md): how long an outcome is
	// kept for a repeat of its request, and the byte budget of the records.
	attemptTTL, err := intVar(getenv, "IDEMPOTENCY_TTL_MS", 600000, 1000, 86400000)
	bad(err)
	c.attemptTTL = time.Duration(attemptTTL) * time.Millisecond
	c.attemptBytes, err = intVar(getenv, "IDEMPOTENCY_CACHE_BYTES", 8<<20, 0, 1<<30)
	bad(err)
	c.usageRetention, err = intVar(getenv, "USAGE_RETENTION_DAYS", ledger.DefaultRetentionDays, 1, 3660)
	bad(err)
	bad(c.loadOperate(getenv))
	// The level is read in any case: the summary and the log lines print it
	// upper case (INFO), and either is what an owner copies.
	switch v := strings.ToLower(getenv("LOG_LEVEL")); v {
	case "", "info":
		c.logLevel = slog.LevelInfo
	case "debug":
		c.logLevel = slog.LevelDebug
	case "warn":
		c.logLevel = slog.LevelWarn
	case "error":
		c.logLevel = slog.LevelError
	default:
		bad(invalid("LOG_LEVEL", "must be debug, info, warn or error (in any case)"))
	}
	c.logFormat, err = setting.Enum(getenv, "LOG_FORMAT", "json", "json", "text")
	bad(err)
	c.probeReport = getenv("PROBE_REPORT")
	if raw := getenv("UPDATE_MANIFEST_URL"); raw != "" {
		u, err := update.ParseURL(raw)
		if err != nil {
			bad(invalid("UPDATE_MANIFEST_URL", err.Error()))
		}
		c.updateManifest = u
	}
	c.readyNeedsProbe, err = boolVar(getenv, "PROBE_REQUIRED_FOR_READY", false)
	bad(err)
	drainMS, err := intVar(getenv, "SHUTDOWN_DELAY_MS", 0, 0, 120000)
	bad(err)
	c.drainDelay = time.Duration(drainMS) * time.Millisecond
	c.otelEndpoint, err = otel.Endpoint(getenv)
	bad(err)
	c.otelService = getenv(otel.EnvServiceName)
	c.sslCertFile, c.sslCertDir = getenv("SSL_CERT_FILE"), getenv("SSL_CERT_DIR")
	bad(checkTrust(c.sslCertFile, c.sslCertDir))
	if len(problems) > 0 {
		return c, errors.Join(problems...) // every problem at once (check-config lists them)
	}
	return c, nil
}

// checkAPIKey refuses a PROVIDER_API_KEY that is unset, or set but not
// 16–512 visible ASCII characters, saying which (its length, never its
// value).
func checkAPIKey(k string) error {
	const rule = "16–512 visible ASCII characters"
	switch n := len(k); {
	case n == 0:
		return invalid("PROVIDER_API_KEY", "required (or PROVIDER_KEYS_FILE): "+rule)
	case n < 16:
		return setting.Refuse("PROVIDER_API_KEY", "too short: %d characters, needs at least 16 (`openssl rand -hex 24` makes one)", setting.Int(n))
	case n > 512:
		return setting.Refuse("PROVIDER_API_KEY", "too long: %d characters, at most 512", setting.Int(n))
	case !visibleASCII(k):
		return invalid("PROVIDER_API_KEY", "must be "+rule+": it holds a space, a control character or a non-ASCII character (quotes or a pasted line end?)")
	}
	return nil
}

func intVar(getenv func(string) string, name string, def, lo, hi int) (int, error) {
	return setting.BoundedInt(getenv, setting.Name(name), def, lo, hi)
}

func boolVar(getenv func(string) string, name string, def bool) (bool, error) {
	return setting.Bool(getenv, setting.Name(name), def)
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// summary is the redacted configuration for check-config and the start-up log.
func (c config) summary() map[string]string {
	m := c.upstream.Summary()
	c.request.summary(m)
	m["listen"] = net.JoinHostPort(c.host, strconv.Itoa(c.port))
	if c.keysFile != "" {
		m["keys_file"] = strconv.Itoa(len(c.keys.Slots)) + " slots"
	} else {
		m["api_key"] = "set"
	}
	m["max_concurrent_requests"] = strconv.Itoa(c.maxConcurrent)
	m["max_connections"] = strconv.Itoa(c.maxConnections)
	m["body_read_timeout"] = c.bodyTimeout.String()
	m["allowed_hosts"] = strings.Join(c.allowedHosts, ",")
	m["correlation_enabled"] = strconv.FormatBool(c.correlation)
	m["correlation_store"] = c.store
	if c.principalRandom {
		m["correlation_principal_key"] = "random per process"
	} else {
		m["correlation_principal_key"] = "set"
	}
	m["correlation_pending_ttl"] = c.policy.PendingTTL.String()
	m["correlation_terminal_ttl"] = c.policy.TerminalTTL.String()
	m["correlation_max_groups"] = strconv.Itoa(c.limits.MaxGroups)
	m["correlation_max_calls"] = strconv.Itoa(c.limits.MaxCalls)
	m["correlation_max_groups_per_key"] = strconv.Itoa(c.limits.MaxGroupsPerKey)
	m["correlation_response_cache_bytes"] = strconv.Itoa(c.limits.ResponseCacheBytes)
	if c.postgresURL != "" {
		m["correlation_postgres_url"] = "set"
	}
	m["conversation_continuity"] = strconv.FormatBool(c.continuity)
	m["conversation_resume"] = strconv.FormatBool(c.resume)
	m["conversation_ttl"] = c.anchorPolicy.TTL.String()
	m["conversation_max_anchors"] = strconv.Itoa(c.anchorLimits.MaxAnchors)
	m["admin_enabled"] = strconv.FormatBool(c.adminEnabled)
	m["metrics_auth"] = map[bool]string{false: "key", true: "none"}[c.metricsOpen]
	if c.probeReport != "" {
		m["probe_report"] = "set"
	}
	m["shutdown_delay"] = c.drainDelay.String()
	m["log_level"] = c.logLevel.String()
	m["log_format"] = c.logFormat
	return m
}

// envFile returns a getenv that reads KEY=VALUE lines from path first and lets
// the real environment win (readEnvFile has the syntax).
func envFile(path string, getenv func(string) string) (func(string) string, error) {
	vals, err := readEnvFile(path)
	if err != nil {
		return nil, err
	}
	return func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return vals[k]
	}, nil
}

// readEnvFile reads an env file (docs/CONFIGURATION.md, "The env file"):
// `KEY=VALUE` lines, optionally prefixed with `export `; blank lines and
// lines starting with # are skipped. A value may be wrapped in single or
// double quotes, and then holds exactly what is between them. After an
// unquoted value, and after a closing quote, a # preceded by a space or tab
// starts a comment; a # anywhere else (`a#b`) is part of the value. Errors
// name the line number, never its content (it may hold a secret). The file is
// read with readRegular: a FIFO or a device is refused, never waited on. A
// leading UTF-8 byte order mark is skipped.
func readEnvFile(path string) (map[string]string, error) {
	raw, err := readRegular(path, maxEnvFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: --env-file %s", errUsage, fileProblem(err))
	}
	// A UTF-8 byte order mark (some Windows editors write one) is not part of
	// the first name: dropped, so that line 1 is read like the others.
	raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
	vals := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), maxEnvFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\"'") {
			return nil, fmt.Errorf("%w: --env-file line %d is not KEY=VALUE", errUsage, n)
		}
		v, ok = envValue(strings.TrimSpace(v))
		if !ok {
			return nil, fmt.Errorf("%w: --env-file line %d: an unterminated quote, or text after the closing quote that is not a # comment", errUsage, n)
		}
		vals[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: --env-file: %v", errUsage, err)
	}
	return vals, nil
}

// envValue applies the value rule of readEnvFile to a trimmed raw value.
func envValue(v string) (string, bool) {
	if v != "" && (v[0] == '"' || v[0] == '\'') {
		end := strings.IndexByte(v[1:], v[0])
		if end < 0 {
			return "", false
		}
		rest := strings.TrimSpace(v[end+2:])
		if rest != "" && (!strings.HasPrefix(rest, "#") || !strings.ContainsAny(v[end+2:end+3], " \t")) {
			return "", false
		}
		return v[1 : end+1], true
	}
	for i := 1; i < len(v); i++ {
		if v[i] == '#' && (v[i-1] == ' ' || v[i-1] == '\t') {
			return strings.TrimSpace(v[:i]), true
		}
	}
	return v, true
}

// configFromArgs parses the --env-file flag of a command and loads the
// configuration from the environment (the file's lines first, the real
// environment wins).
func configFromArgs(command string, args []string, getenv func(string) string) (config, error) {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	envPath := fs.String("env-file", "", "read KEY=VALUE lines first; the real environment wins")
	if err := fs.Parse(args); err != nil {
		return config{}, fmt.Errorf("%w: %v", errUsage, err)
	}
	if *envPath != "" {
		var err error
		if getenv, err = envFile(*envPath, getenv); err != nil {
			return config{}, err
		}
	}
	return loadConfig(getenv)
}

// loadOperate parses the control-plane settings: ADMIN_ENABLED (default true
// when listening on loopback, false otherwise) and METRICS_AUTH (key, the
// default, or none, which is allowed on loopback only).
func (c *config) loadOperate(getenv func(string) string) error {
	loopback := c.host == "localhost"
	if ip := net.ParseIP(c.host); ip != nil {
		loopback = ip.IsLoopback()
	}
	adminEnabled, adminErr := boolVar(getenv, "ADMIN_ENABLED", loopback)
	c.adminEnabled = adminEnabled
	auth, err := setting.Enum(getenv, "METRICS_AUTH", "key", "key", "none")
	if err == nil && auth == "none" {
		if !loopback {
			err = invalid("METRICS_AUTH", "none is allowed only when PROVIDER_HOST is a loopback address")
		}
		c.metricsOpen = true
	}
	return setting.Join(slices.DeleteFunc([]error{adminErr, err}, func(e error) bool { return e == nil }))
}
