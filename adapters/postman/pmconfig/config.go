package pmconfig

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// Strategy is the upstream transport strategy (design §3.1). It is closed: only
// the two constants below are accepted.
type Strategy string

// The two transport strategies.
const (
	StrategyAccessToken Strategy = "access_token"
	StrategyWebSession  Strategy = "web_session"
)

// SafeValue marks strategies as safe for logs.
func (Strategy) SafeValue() {}

// TerminalRule is the web-session rule that decides when a stream is complete
// (CONTRACT §3, design §6.3). The wiring converts it to the completion package's
// rule type.
type TerminalRule string

// Web-session terminal rules.
const (
	// TerminalExplicitOnly: only an explicit [DONE] completes a stream.
	TerminalExplicitOnly TerminalRule = "explicit_only"
	// TerminalUsageAfterOutput: EOF also completes a whole stream whose last
	// output event was followed by a usage event and no failure.
	TerminalUsageAfterOutput TerminalRule = "usage_after_output_v1"
)

// SafeValue marks terminal rules as safe for logs.
func (TerminalRule) SafeValue() {}

// Environment variable names read by Parse.
const (
	EnvStrategy         = "POSTMAN_TRANSPORT_STRATEGY"
	EnvAccessToken      = "POSTMAN_ACCESS_TOKEN"
	EnvOrigin           = "POSTMAN_ORIGIN"
	EnvChatPath         = "POSTMAN_CHAT_PATH"
	EnvSessionCookie    = "POSTMAN_SESSION_COOKIE"
	EnvSubdomain        = "POSTMAN_WORKSPACE_SUBDOMAIN"
	EnvWorkspaceID      = "POSTMAN_WORKSPACE_ID"
	EnvModels           = "PROVIDER_MODELS"
	EnvModelMap         = "POSTMAN_MODEL_MAP"
	EnvSelectedModel    = "POSTMAN_WEB_SESSION_SELECTED_MODEL"
	EnvObservedModels   = "POSTMAN_WEB_SESSION_OBSERVED_MODELS"
	EnvUserAgent        = "POSTMAN_USER_AGENT"
	EnvAppVersion       = "POSTMAN_APP_VERSION"
	EnvTerminalRule     = "POSTMAN_WEB_SESSION_TERMINAL_RULE"
	EnvRequestTimeoutMS = "REQUEST_TIMEOUT_MS"
	EnvMaxBodyBytes     = "MAX_BODY_BYTES"
	EnvMaxEventBytes    = "MAX_EVENT_BYTES"
	EnvMaxOutputBytes   = "MAX_OUTPUT_BYTES"
	EnvMaxTools         = "MAX_TOOLS"
	EnvMaxToolArgBytes  = "MAX_TOOL_ARGUMENT_BYTES"
	EnvMaxToolResBytes  = "MAX_TOOL_RESULT_BYTES"
	EnvMaxQueryChars    = "POSTMAN_MAX_QUERY_CHARS"
	EnvMaxToolsUpstream = "POSTMAN_MAX_TOOLS_UPSTREAM"
	EnvParallelTools    = "POSTMAN_PARALLEL_TOOL_CALLS"
	EnvToolSchemaPolicy = "TOOL_SCHEMA_POLICY"
	EnvSchemaCombinator = "POSTMAN_SCHEMA_COMBINATORS"
)

// Defaults.
const (
	// DefaultUserAgent is the documented fixed User-Agent; it names the gateway
	// and imitates no browser (design §4.1).
	DefaultUserAgent = "pmgate/1 (+https://github.com/pmgate)"
	// DefaultChatPath is the access_token chat path and the fixed web-session path.
	DefaultChatPath = "/_gw/chat"
	// DefaultTerminalRule is the web-session default.
	DefaultTerminalRule = TerminalUsageAfterOutput
	// WebSessionDomain is the parent domain of every web-session host.
	WebSessionDomain = "postman.co"
	// DefaultMaxQueryChars is the input.query length (UTF-16 code units) the
	// service is reported to accept (docs/UPSTREAM.md).
	DefaultMaxQueryChars = 10000
	// DefaultMaxToolsUpstream is the number of tools the service is reported
	// to accept in one request (docs/UPSTREAM.md).
	DefaultMaxToolsUpstream = 20
)

// ParallelSetting is POSTMAN_PARALLEL_TOOL_CALLS: unset, true or false.
type ParallelSetting string

// The values of POSTMAN_PARALLEL_TOOL_CALLS.
const (
	ParallelUnset ParallelSetting = ""
	ParallelOn    ParallelSetting = "true"
	ParallelOff   ParallelSetting = "false"
)

// SafeValue marks the setting as safe for logs.
func (ParallelSetting) SafeValue() {}

// Bounds of the free-form values.
const (
	MaxSecretBytes    = 4096
	MaxWorkspaceBytes = 256
	MaxModelIDBytes   = 128
	MaxLabelBytes     = 128
	MaxModels         = 256
	MaxLabelsPerModel = 32
	MaxHeaderBytes    = 256 // POSTMAN_USER_AGENT, POSTMAN_APP_VERSION
	MaxChatPathBytes  = 1024
)

// ModelMapping maps one public model id to the operator-pinned upstream enum
// (devModeOptions.selectedModel) and the upstream model labels accepted as a
// match in event metadata (design §7).
type ModelMapping struct {
	Public   string
	Upstream string
	// Observed are the labels accepted in upstream metadata.model for this public
	// id; it always includes Upstream, first.
	Observed []string
}

// Config is the validated configuration of the Postman adapter. Build it with
// Parse; the methods derive everything else from its fields.
type Config struct {
	Strategy Strategy

	// access_token only.
	AccessToken string `json:"-"`
	Origin      string
	ChatPath    string

	// web_session only.
	SessionCookie string `json:"-"`
	Subdomain     string

	WorkspaceID string `json:"-"`

	PublicModels []string       // PROVIDER_MODELS, in order
	Models       []ModelMapping // one per public model, in PublicModels order

	UserAgent  string
	AppVersion string // "" means the header is not sent

	TerminalRule TerminalRule // web_session; "" for access_token

	RequestTimeout       time.Duration
	MaxBodyBytes         int
	MaxEventBytes        int
	MaxOutputBytes       int
	MaxToolArgumentBytes int
	MaxToolResultBytes   int
	MaxTools             int
	// ToolSchemaPolicy is how the ingress treats tool schema keywords outside
	// the bounded vocabulary (docs/TOOL-SCHEMAS.md).
	ToolSchemaPolicy toolschema.Policy
	// WidenCombinators is POSTMAN_SCHEMA_COMBINATORS=widen: for an upstream
	// that refuses anyOf/oneOf/allOf, lowering removes them by widening
	// (docs/TOOL-SCHEMAS.md); "forward" (the default) sends them unchanged.
	WidenCombinators bool

	// MaxQueryChars bounds input.query in UTF-16 code units
	// (POSTMAN_MAX_QUERY_CHARS).
	MaxQueryChars int
	// MaxToolsUpstream bounds the tools advertised upstream
	// (POSTMAN_MAX_TOOLS_UPSTREAM).
	MaxToolsUpstream int
	// ParallelToolCalls is POSTMAN_PARALLEL_TOOL_CALLS; see Parallel.
	ParallelToolCalls ParallelSetting
}

// Parallel decides devModeOptions.isParallelToolCallingSupported for a request
// with tools whose client asked for parallel_tool_calls = client: the setting
// when given; unset, false on web_session (the public project that documents
// the flag pins it false) and the client's choice on access_token.
func (c Config) Parallel(client bool) bool {
	switch c.ParallelToolCalls {
	case ParallelOn:
		return true
	case ParallelOff:
		return false
	}
	if c.Strategy == StrategyWebSession {
		return false
	}
	return client
}

// envName is a variable name; names are safe to log.
type envName string

// SafeValue marks variable names as safe for logs.
func (envName) SafeValue() {}

// refuse returns the one configuration error of Parse. The format and the
// variable name are safe; never pass a configured value.
func refuse(name envName, format string, args ...any) error {
	return errs.Newf(errs.ConfigInvalid, "%s: "+format, append([]any{name}, args...)...)
}

// Parse reads and validates the adapter's configuration through getenv. An
// empty value counts as unset. It returns every refusal it finds at once (an
// errors.Join of errors with code errs.ConfigInvalid; a single refusal is
// returned as it is): the strategy's own variables are checked only when the
// strategy is valid, everything else always.
func Parse(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var c Config
	var problems []error
	add := func(err error) {
		if err != nil {
			problems = append(problems, err)
		}
	}

	switch s := getenv(EnvStrategy); Strategy(s) {
	case StrategyAccessToken, StrategyWebSession:
		c.Strategy = Strategy(s)
	case "":
		add(refuse(EnvStrategy, "required; must be access_token or web_session"))
	default:
		add(refuse(EnvStrategy, "must be exactly access_token or web_session"))
	}

	if getenv(EnvAccessToken) != "" && getenv(EnvSessionCookie) != "" {
		add(refuse(EnvAccessToken+" and "+EnvSessionCookie,
			"both secrets are set; configure only the secret of POSTMAN_TRANSPORT_STRATEGY"))
	} else if c.Strategy == StrategyAccessToken {
		add(c.parseAccessToken(getenv))
	} else if c.Strategy == StrategyWebSession {
		add(c.parseWebSession(getenv))
	}

	c.WorkspaceID = getenv(EnvWorkspaceID)
	if c.WorkspaceID == "" {
		add(refuse(EnvWorkspaceID, "required"))
	} else if !visibleASCII(c.WorkspaceID, 1, MaxWorkspaceBytes) {
		add(refuse(EnvWorkspaceID, "must be 1-256 bytes of visible ASCII (0x21-0x7e)"))
	}

	add(c.parseModels(getenv))
	add(c.parseHeaderValues(getenv))
	add(c.parseTerminalRule(getenv))
	add(c.parseLimits(getenv))
	add(c.parseUpstreamConstraints(getenv))
	if err := joinProblems(problems); err != nil {
		return Config{}, err
	}
	if err := c.parseToolSchemaPolicy(getenv); err != nil {
		return Config{}, err
	}
	if err := c.parseSchemaCombinators(getenv); err != nil {
		return Config{}, err
	}
	return c, nil
}

// joinProblems is nil, the one refusal, or all of them joined (redaction-aware,
// so that logs keep every variable name and rule).
func joinProblems(problems []error) error {
	switch len(problems) {
	case 0:
		return nil
	case 1:
		return problems[0]
	}
	return errors.Join(problems...)
}

// parseUpstreamConstraints reads the service constraints the public projects
// report: the query length, the tool count and the parallel-calling flag.
func (c *Config) parseUpstreamConstraints(getenv func(string) string) error {
	var err error
	if c.MaxQueryChars, err = parseInt(getenv, EnvMaxQueryChars, DefaultMaxQueryChars, 1, 1000000); err != nil {
		return err
	}
	if c.MaxToolsUpstream, err = parseInt(getenv, EnvMaxToolsUpstream, DefaultMaxToolsUpstream, 0, 256); err != nil {
		return err
	}
	switch v := ParallelSetting(getenv(EnvParallelTools)); v {
	case ParallelUnset, ParallelOn, ParallelOff:
		c.ParallelToolCalls = v
	default:
		return refuse(EnvParallelTools, "must be exactly true or false")
	}
	return nil
}

func forbid(getenv func(string) string, s Strategy, names ...string) error {
	for _, n := range names {
		if getenv(n) != "" {
			return refuse(envName(n), "must not be set when POSTMAN_TRANSPORT_STRATEGY is %s", s)
		}
	}
	return nil
}

func (c *Config) parseAccessToken(getenv func(string) string) error {
	if err := forbid(getenv, c.Strategy, EnvSessionCookie, EnvSubdomain, EnvTerminalRule); err != nil {
		return err
	}
	var problems []error
	c.AccessToken = getenv(EnvAccessToken)
	if c.AccessToken == "" {
		problems = append(problems, refuse(EnvAccessToken, "required when POSTMAN_TRANSPORT_STRATEGY is access_token"))
	} else if !visibleASCII(c.AccessToken, 1, MaxSecretBytes) {
		problems = append(problems, refuse(EnvAccessToken, "must be 1-4096 bytes of visible ASCII (0x21-0x7e)"))
	}
	c.Origin = getenv(EnvOrigin)
	originOK := false
	if c.Origin == "" {
		problems = append(problems, refuse(EnvOrigin, "required when POSTMAN_TRANSPORT_STRATEGY is access_token"))
	} else if _, _, err := splitOrigin(c.Origin); err != nil {
		problems = append(problems, err)
	} else {
		originOK = true
	}
	c.ChatPath = getenv(EnvChatPath)
	if c.ChatPath == "" {
		c.ChatPath = DefaultChatPath
	}
	if err := checkChatPath(c.ChatPath); err != nil {
		problems = append(problems, err)
	} else if originOK && accessTokenURL(c.Origin, c.ChatPath) == nil {
		problems = append(problems, refuse(EnvChatPath, "together with POSTMAN_ORIGIN does not survive URL construction unchanged"))
	}
	return joinProblems(problems)
}

func (c *Config) parseWebSession(getenv func(string) string) error {
	if err := forbid(getenv, c.Strategy, EnvAccessToken, EnvOrigin, EnvChatPath); err != nil {
		return err
	}
	var problems []error
	c.SessionCookie = getenv(EnvSessionCookie)
	if c.SessionCookie == "" {
		problems = append(problems, refuse(EnvSessionCookie, "required when POSTMAN_TRANSPORT_STRATEGY is web_session"))
	} else if err := checkCookie(c.SessionCookie); err != nil {
		problems = append(problems, err)
	}
	c.Subdomain = getenv(EnvSubdomain)
	if c.Subdomain == "" {
		problems = append(problems, refuse(EnvSubdomain, "required when POSTMAN_TRANSPORT_STRATEGY is web_session"))
	} else if err := checkSubdomain(c.Subdomain); err != nil {
		problems = append(problems, err)
	} else if webSessionURL(c.Subdomain) == nil {
		problems = append(problems, refuse(EnvSubdomain, "the chat URL fails its post-construction checks"))
	}
	return joinProblems(problems)
}

func checkCookie(v string) error {
	if len(v) > MaxSecretBytes {
		return refuse(EnvSessionCookie, "must be at most 4096 bytes")
	}
	for i := 0; i < len(v); i++ {
		switch b := v[i]; {
		case b == ';' || b == ',' || b == '\\':
			return refuse(EnvSessionCookie, "must not contain ';', ',' or '\\' (the value of postman.sid only, not a Cookie header)")
		case b < 0x21 || b > 0x7e:
			return refuse(EnvSessionCookie, "must be visible ASCII (0x21-0x7e): no whitespace, CR, LF, NUL, control or non-ASCII bytes")
		}
	}
	if len(v) >= len(cookieName)+1 && strings.EqualFold(v[:len(cookieName)+1], cookieName+"=") {
		return refuse(EnvSessionCookie, "must be the value of postman.sid only; drop the leading \"postman.sid=\"")
	}
	return nil
}

var subdomainRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// reservedSubdomains are Postman hosts that are never a workspace (protocol §A).
var reservedSubdomains = []string{"go", "identity", "id", "www"}

func checkSubdomain(v string) error {
	if !subdomainRE.MatchString(v) {
		return refuse(EnvSubdomain, "must be one lowercase DNS label of 1-63 bytes matching ^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
	}
	if slices.Contains(reservedSubdomains, v) {
		return refuse(EnvSubdomain, "names a reserved Postman host (go, identity, id, www), not a workspace")
	}
	return nil
}

func (c *Config) parseModels(getenv func(string) string) error {
	raw := getenv(EnvModels)
	if raw == "" {
		return refuse(EnvModels, "required; a comma list of public model ids")
	}
	items := strings.Split(raw, ",")
	if len(items) > MaxModels {
		return refuse(EnvModels, "must list at most 256 ids")
	}
	for i, it := range items {
		id := strings.TrimSpace(it)
		if !visibleASCII(id, 1, MaxModelIDBytes) || strings.ContainsAny(id, "=|") {
			return refuse(EnvModels, "item %d must be 1-128 bytes of visible ASCII without '=' or '|'", redactSafeInt(i+1))
		}
		if slices.Contains(c.PublicModels, id) {
			return refuse(EnvModels, "item %d repeats an earlier id", redactSafeInt(i+1))
		}
		c.PublicModels = append(c.PublicModels, id)
	}

	mapRaw, selected, observed := getenv(EnvModelMap), getenv(EnvSelectedModel), getenv(EnvObservedModels)
	switch {
	case mapRaw != "" && (selected != "" || observed != ""):
		name := envName(EnvSelectedModel)
		if selected == "" {
			name = EnvObservedModels
		}
		return refuse(name, "must not be set together with POSTMAN_MODEL_MAP; use one form")
	case mapRaw != "":
		return c.parseModelMap(mapRaw)
	case selected != "":
		return c.parseSelectedModel(selected, observed)
	case observed != "":
		return refuse(EnvObservedModels, "requires POSTMAN_WEB_SESSION_SELECTED_MODEL")
	default:
		return refuse(EnvModelMap, "required (or POSTMAN_WEB_SESSION_SELECTED_MODEL when PROVIDER_MODELS has exactly one id)")
	}
}

var upstreamEnumRE = regexp.MustCompile(`^[A-Z0-9_]{1,64}$`)

func (c *Config) parseModelMap(raw string) error {
	byPublic := map[string]ModelMapping{}
	for i, entry := range strings.Split(raw, ",") {
		n := redactSafeInt(i + 1)
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return refuse(EnvModelMap, "entry %d is empty", n)
		}
		public, rest, ok := strings.Cut(entry, "=")
		if !ok {
			return refuse(EnvModelMap, "entry %d must be public=UPSTREAM_ENUM[|observed label|...]", n)
		}
		public = strings.TrimSpace(public)
		if !slices.Contains(c.PublicModels, public) {
			return refuse(EnvModelMap, "entry %d names a model that PROVIDER_MODELS does not list", n)
		}
		if _, dup := byPublic[public]; dup {
			return refuse(EnvModelMap, "entry %d maps a model that an earlier entry already maps", n)
		}
		parts := strings.Split(rest, "|")
		upstream := strings.TrimSpace(parts[0])
		if !upstreamEnumRE.MatchString(upstream) {
			return refuse(EnvModelMap, "entry %d: the upstream model must match ^[A-Z0-9_]{1,64}$", n)
		}
		labels := make([]string, 0, len(parts)-1)
		for j, l := range parts[1:] {
			l = strings.TrimSpace(l)
			if !visibleASCII(l, 1, MaxLabelBytes) {
				return refuse(EnvModelMap, "entry %d: observed label %d must be 1-128 bytes of visible ASCII", n, redactSafeInt(j+1))
			}
			labels = append(labels, l)
		}
		m, ok := mapping(public, upstream, labels)
		if !ok {
			return refuse(EnvModelMap, "entry %d has more than 32 observed labels", n)
		}
		byPublic[public] = m
	}
	for _, p := range c.PublicModels {
		m, ok := byPublic[p]
		if !ok {
			return refuse(EnvModelMap, "no entry for public model %q", p)
		}
		c.Models = append(c.Models, m)
	}
	return nil
}

func (c *Config) parseSelectedModel(selected, observed string) error {
	if len(c.PublicModels) != 1 {
		return refuse(EnvSelectedModel, "needs PROVIDER_MODELS to list exactly one id; use POSTMAN_MODEL_MAP")
	}
	if !upstreamEnumRE.MatchString(selected) {
		return refuse(EnvSelectedModel, "must match ^[A-Z0-9_]{1,64}$")
	}
	var labels []string
	if observed != "" {
		for j, l := range strings.Split(observed, ",") {
			l = strings.TrimSpace(l)
			if !visibleASCII(l, 1, MaxLabelBytes) {
				return refuse(EnvObservedModels, "item %d must be 1-128 bytes of visible ASCII", redactSafeInt(j+1))
			}
			labels = append(labels, l)
		}
	}
	m, ok := mapping(c.PublicModels[0], selected, labels)
	if !ok {
		return refuse(EnvObservedModels, "must list at most 32 labels")
	}
	c.Models = []ModelMapping{m}
	return nil
}

// mapping builds a ModelMapping whose Observed starts with upstream and holds
// every label once; ok is false when there are too many labels.
func mapping(public, upstream string, labels []string) (m ModelMapping, ok bool) {
	obs := []string{upstream}
	for _, l := range labels {
		if !slices.Contains(obs, l) {
			obs = append(obs, l)
		}
	}
	if len(obs)-1 > MaxLabelsPerModel {
		return ModelMapping{}, false
	}
	return ModelMapping{Public: public, Upstream: upstream, Observed: obs}, true
}

func (c *Config) parseHeaderValues(getenv func(string) string) error {
	c.UserAgent = getenv(EnvUserAgent)
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	} else if !printableASCII(c.UserAgent, 1, MaxHeaderBytes) ||
		c.UserAgent[0] == ' ' || c.UserAgent[len(c.UserAgent)-1] == ' ' {
		return refuse(EnvUserAgent, "must be 1-256 bytes of printable ASCII (0x20-0x7e) without leading or trailing space")
	}
	c.AppVersion = getenv(EnvAppVersion)
	if c.AppVersion != "" && !visibleASCII(c.AppVersion, 1, MaxHeaderBytes) {
		return refuse(EnvAppVersion, "must be 1-256 bytes of visible ASCII (0x21-0x7e)")
	}
	return nil
}

func (c *Config) parseTerminalRule(getenv func(string) string) error {
	if c.Strategy != StrategyWebSession {
		return nil // set on access_token is refused by parseAccessToken
	}
	switch r := TerminalRule(getenv(EnvTerminalRule)); r {
	case "":
		c.TerminalRule = DefaultTerminalRule
	case TerminalExplicitOnly, TerminalUsageAfterOutput:
		c.TerminalRule = r
	default:
		return refuse(EnvTerminalRule, "must be exactly explicit_only or usage_after_output_v1")
	}
	return nil
}

func (c *Config) parseToolSchemaPolicy(getenv func(string) string) error {
	raw := getenv(EnvToolSchemaPolicy)
	if raw == "" {
		c.ToolSchemaPolicy = toolschema.DefaultPolicy
		return nil
	}
	p, ok := toolschema.ParsePolicy(raw)
	if !ok {
		return refuse(EnvToolSchemaPolicy, "must be exactly lower or strict")
	}
	c.ToolSchemaPolicy = p
	return nil
}

// parseSchemaCombinators reads POSTMAN_SCHEMA_COMBINATORS: forward (default)
// or widen. Widening changes which arguments are valid, so it needs the lower
// policy, and it is the owner's call from their own evidence.
func (c *Config) parseSchemaCombinators(getenv func(string) string) error {
	switch getenv(EnvSchemaCombinator) {
	case "", "forward":
		c.WidenCombinators = false
	case "widen":
		if c.ToolSchemaPolicy != toolschema.DefaultPolicy {
			return refuse(EnvSchemaCombinator, "widen needs TOOL_SCHEMA_POLICY=lower")
		}
		c.WidenCombinators = true
	default:
		return refuse(EnvSchemaCombinator, "must be exactly forward or widen")
	}
	return nil
}

const (
	kib = 1 << 10
	mib = 1 << 20
)

func (c *Config) parseLimits(getenv func(string) string) error {
	var timeoutMS int
	var problems []error
	for _, l := range []struct {
		name     envName
		dst      *int
		def      int
		min, max int
	}{
		{EnvRequestTimeoutMS, &timeoutMS, 120000, 1000, 3600000},
		{EnvMaxBodyBytes, &c.MaxBodyBytes, 1 * mib, 1 * kib, 128 * mib},
		{EnvMaxEventBytes, &c.MaxEventBytes, 1 * mib, 1 * kib, 16 * mib},
		{EnvMaxOutputBytes, &c.MaxOutputBytes, 4 * mib, 1 * kib, 16 * mib},
		{EnvMaxTools, &c.MaxTools, 64, 0, 256},
		{EnvMaxToolArgBytes, &c.MaxToolArgumentBytes, 256 * kib, 256, 4 * mib},
	} {
		v, err := parseInt(getenv, l.name, l.def, l.min, l.max)
		if err != nil {
			problems = append(problems, err)
			v = l.def // so that the checks below still run
		}
		*l.dst = v
	}
	c.RequestTimeout = time.Duration(timeoutMS) * time.Millisecond

	raw := getenv(EnvMaxToolResBytes)
	if raw == "" {
		c.MaxToolResultBytes = min(256*kib, c.MaxBodyBytes)
		return joinProblems(problems)
	}
	v, ok := decimal(raw)
	if !ok || v < 256 || v > c.MaxBodyBytes {
		problems = append(problems, refuse(EnvMaxToolResBytes, "must be a decimal integer from 256 to MAX_BODY_BYTES (%d)", redactSafeInt(c.MaxBodyBytes)))
	}
	c.MaxToolResultBytes = v
	return joinProblems(problems)
}

func parseInt(getenv func(string) string, name envName, def, lo, hi int) (int, error) {
	raw := getenv(string(name))
	if raw == "" {
		return def, nil
	}
	v, ok := decimal(raw)
	if !ok || v < lo || v > hi {
		return 0, refuse(name, "must be a decimal integer from %d to %d", redactSafeInt(lo), redactSafeInt(hi))
	}
	return v, nil
}

// decimal parses ASCII decimal digits only (no sign, space or underscore).
func decimal(s string) (int, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.Atoi(s)
	return v, err == nil
}

// redactSafeInt is an int that prints unredacted: bounds and positions are not
// configured values.
type redactSafeInt int

// SafeValue marks the int as safe for logs.
func (redactSafeInt) SafeValue() {}

// visibleASCII reports whether s has lo..hi bytes, all in 0x21..0x7e.
func visibleASCII(s string, lo, hi int) bool {
	if len(s) < lo || len(s) > hi {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// printableASCII reports whether s has lo..hi bytes, all in 0x20..0x7e.
func printableASCII(s string, lo, hi int) bool {
	if len(s) < lo || len(s) > hi {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// Model returns the mapping of a public model id. The returned Observed slice
// is a copy.
func (c Config) Model(public string) (ModelMapping, bool) {
	for _, m := range c.Models {
		if m.Public == public {
			m.Observed = slices.Clone(m.Observed)
			return m, true
		}
	}
	return ModelMapping{}, false
}

// Secrets returns the active upstream secret (the access token or the session
// cookie value), for a Redactor. The downstream PROVIDER_API_KEY is not part of
// this configuration; the wiring adds it.
func (c Config) Secrets() []string {
	switch c.Strategy {
	case StrategyAccessToken:
		if c.AccessToken != "" {
			return []string{c.AccessToken}
		}
	case StrategyWebSession:
		if c.SessionCookie != "" {
			return []string{c.SessionCookie}
		}
	}
	return nil
}
