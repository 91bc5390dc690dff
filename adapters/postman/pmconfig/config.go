package pmconfig

import (
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pmgate/pmgate/domain/budget"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/setting"
)

// Strategy is the upstream transport strategy. It is closed: only the two
// constants below are accepted.
type Strategy string

// The two transport strategies.
const (
	StrategyAccessToken Strategy = "access_token"
	StrategyWebSession  Strategy = "web_session"
)

// SafeValue marks strategies as safe for logs.
func (Strategy) SafeValue() {}

// Environment variable names read by Parse. Only POSTMAN_* variables: the
// public model list and the request limits are process settings, read by
// cmd/gateway (see Parse and Limits).
const (
	EnvStrategy         = "POSTMAN_TRANSPORT_STRATEGY"
	EnvAccessToken      = "POSTMAN_ACCESS_TOKEN"
	EnvOrigin           = "POSTMAN_ORIGIN"
	EnvChatPath         = "POSTMAN_CHAT_PATH"
	EnvSessionCookie    = "POSTMAN_SESSION_COOKIE"
	EnvSubdomain        = "POSTMAN_WORKSPACE_SUBDOMAIN"
	EnvWorkspaceID      = "POSTMAN_WORKSPACE_ID"
	EnvModelMap         = "POSTMAN_MODEL_MAP"
	EnvSelectedModel    = "POSTMAN_WEB_SESSION_SELECTED_MODEL"
	EnvObservedModels   = "POSTMAN_WEB_SESSION_OBSERVED_MODELS"
	EnvUserAgent        = "POSTMAN_USER_AGENT"
	EnvAppVersion       = "POSTMAN_APP_VERSION"
	EnvTerminalRule     = "POSTMAN_WEB_SESSION_TERMINAL_RULE"
	EnvMaxQueryChars    = "POSTMAN_MAX_QUERY_CHARS"
	EnvMaxToolsUpstream = "POSTMAN_MAX_TOOLS_UPSTREAM"
	EnvMaxToolResult    = "POSTMAN_MAX_TOOL_RESULT_CHARS"
	EnvParallelTools    = "POSTMAN_PARALLEL_TOOL_CALLS"
)

// Defaults.
const (
	// DefaultUserAgent is the documented fixed User-Agent; it names the gateway
	// and imitates no browser (docs/UPSTREAM.md).
	DefaultUserAgent = "pmgate/1 (+https://github.com/pmgate)"
	// DefaultChatPath is the access_token chat path and the fixed web-session path.
	DefaultChatPath = "/_gw/chat"
	// WebSessionDomain is the parent domain of every web-session host.
	WebSessionDomain = "postman.co"
	// DefaultMaxQueryChars is the input.query length (UTF-16 code units) the
	// service is reported to accept (docs/UPSTREAM.md).
	DefaultMaxQueryChars = 10000
	// DefaultMaxToolsUpstream is the number of tools the service is reported
	// to accept in one request (docs/UPSTREAM.md).
	DefaultMaxToolsUpstream = 20
	// MaxQueryCharsBound and MaxToolsUpstreamBound are the largest values
	// the two limits accept (from the setting or a measurement).
	MaxQueryCharsBound    = 1000000
	MaxToolsUpstreamBound = 256
	// MaxToolResultCharsBound is the largest POSTMAN_MAX_TOOL_RESULT_CHARS
	// (a result is also bounded by MAX_TOOL_RESULT_BYTES and MAX_BODY_BYTES).
	MaxToolResultCharsBound = 128 << 20
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
	MaxLabelBytes     = 128
	MaxLabelsPerModel = 32
	MaxHeaderBytes    = 256 // POSTMAN_USER_AGENT, POSTMAN_APP_VERSION
	MaxChatPathBytes  = 1024
)

// ModelMapping maps one public model id to the operator-pinned upstream enum
// (devModeOptions.selectedModel) and the upstream model labels accepted as a
// match in event metadata (docs/UPSTREAM.md).
type ModelMapping struct {
	Public   string
	Upstream string
	// Observed are the labels accepted in upstream metadata.model for this public
	// id; it always includes Upstream, first.
	Observed []string
}

// Limits are the request limits the adapter enforces too: on the body it
// builds, the events and output it reads and the time a request may take. They
// are process settings (REQUEST_TIMEOUT_MS, MAX_BODY_BYTES, MAX_EVENT_BYTES,
// MAX_OUTPUT_BYTES, MAX_TOOLS, MAX_TOOL_ARGUMENT_BYTES, MAX_TOOL_RESULT_BYTES)
// that the ingress enforces on what clients send; cmd/gateway parses and
// validates them and sets them on the Config. Parse leaves them zero and
// postman.New refuses a Config without them.
type Limits struct {
	RequestTimeout       time.Duration
	MaxBodyBytes         int
	MaxEventBytes        int
	MaxOutputBytes       int
	MaxToolArgumentBytes int
	MaxToolResultBytes   int
	MaxTools             int
}

// Config is the validated configuration of the Postman adapter. Build it with
// Parse and set its Limits; the methods derive everything else from its fields.
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

	Models []ModelMapping // one per public model given to Parse, in that order

	UserAgent  string
	AppVersion string // "" means the header is not sent

	// TerminalRule is the configured web-session completion rule
	// (completion.DefaultWebRule when unset); "" for access_token. Rule gives
	// the rule either strategy's streams are judged by.
	TerminalRule completion.Rule

	Limits // set by the wiring, not by Parse

	// MaxQueryChars bounds input.query in UTF-16 code units
	// (POSTMAN_MAX_QUERY_CHARS).
	MaxQueryChars int
	// MaxToolsUpstream bounds the tools advertised upstream
	// (POSTMAN_MAX_TOOLS_UPSTREAM).
	MaxToolsUpstream int
	// MaxQueryCharsSource and MaxToolsUpstreamSource say where the two
	// limits came from: the setting, or (set by the wiring) a verified probe
	// report's measurement; "" is the default.
	MaxQueryCharsSource    budget.Source
	MaxToolsUpstreamSource budget.Source
	// MaxToolResultChars bounds one tool result of a continuation in UTF-16
	// code units (POSTMAN_MAX_TOOL_RESULT_CHARS); 0, the default, is no
	// limit: the service's own is not known yet.
	MaxToolResultChars int
	// ParallelToolCalls is POSTMAN_PARALLEL_TOOL_CALLS; see Parallel.
	ParallelToolCalls ParallelSetting
	// ParallelMeasured: a verified live probe saw the service accept a
	// parallel group answered with toolResponses[] and its group id on
	// web_session, so with the setting unset the client's
	// parallel_tool_calls decides there too (the serve command sets it from
	// PROBE_REPORT; the setting always wins).
	ParallelMeasured bool
}

// QueryLimit is the query limit that applies and where it came from.
func (c Config) QueryLimit() budget.Limit {
	return budget.Limit{Value: c.MaxQueryChars, Source: sourceOr(c.MaxQueryCharsSource), Setting: EnvMaxQueryChars}
}

// ToolsLimit is the tool-count limit that applies and where it came from.
func (c Config) ToolsLimit() budget.Limit {
	return budget.Limit{Value: c.MaxToolsUpstream, Source: sourceOr(c.MaxToolsUpstreamSource), Setting: EnvMaxToolsUpstream}
}

func sourceOr(s budget.Source) budget.Source {
	if s == "" {
		return budget.SourceDefault
	}
	return s
}

// Parallel decides devModeOptions.isParallelToolCallingSupported for a request
// with tools whose client asked for parallel_tool_calls = client: the setting
// when given; unset, false on web_session (the public project that documents
// the flag pins it false) unless a verified probe measured the array form
// accepted there (ParallelMeasured), and the client's choice on access_token.
func (c Config) Parallel(client bool) bool {
	switch c.ParallelToolCalls {
	case ParallelOn:
		return true
	case ParallelOff:
		return false
	}
	if c.Strategy == StrategyWebSession && !c.ParallelMeasured {
		return false
	}
	return client
}

// envName is a variable name; names are safe to log.
type envName = setting.Name

// redactSafeInt is an int that prints unredacted (a bound or a position).
type redactSafeInt = setting.Int

// refuse returns one configuration refusal. The format and the variable name
// are safe; never pass a configured value.
var refuse = setting.Refuse

// Parse reads and validates the adapter's configuration through getenv. An
// empty value counts as unset. models are the public model ids, in order, that
// the caller read from PROVIDER_MODELS: the model mapping must map each of
// them. With no models the mapping is not checked (the caller has refused
// PROVIDER_MODELS already) and the Config maps no model, which postman.New
// refuses.
//
// It returns every refusal it finds at once (an errors.Join of errors with
// code errs.ConfigInvalid; a single refusal is returned as it is): the
// strategy's own variables are checked only when the strategy is valid,
// everything else always.
func Parse(getenv func(string) string, models []string) (Config, error) {
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

	if getenv(EnvStrategy) == "" {
		add(refuse(EnvStrategy, "required; must be access_token or web_session"))
	} else if s, err := setting.Enum(getenv, EnvStrategy, "", string(StrategyAccessToken), string(StrategyWebSession)); err != nil {
		add(err)
	} else {
		c.Strategy = Strategy(s)
	}

	// The strategy's own variables are checked under the strategy meant
	// even when its name is refused, so that one run reports every problem;
	// the configuration is refused all the same.
	if getenv(EnvAccessToken) != "" && getenv(EnvSessionCookie) != "" {
		add(refuse(EnvAccessToken+" and "+EnvSessionCookie,
			"both secrets are set; configure only the secret of POSTMAN_TRANSPORT_STRATEGY"))
	} else {
		switch meant := strategyMeant(getenv); meant {
		case StrategyAccessToken:
			add(c.parseAccessToken(getenv, meant))
		case StrategyWebSession:
			add(c.parseWebSession(getenv, meant))
		}
	}

	c.WorkspaceID = getenv(EnvWorkspaceID)
	if c.WorkspaceID == "" {
		add(refuse(EnvWorkspaceID, "required"))
	} else if !visibleASCII(c.WorkspaceID, 1, MaxWorkspaceBytes) {
		add(refuse(EnvWorkspaceID, "must be 1-256 bytes of visible ASCII (0x21-0x7e)"))
	} else if looksLikeURL(c.WorkspaceID) {
		add(refuse(EnvWorkspaceID, "is a URL, not the id: the workspace id is not in the address bar; "+
			"it is mandatoryContext.workspaceId of a /_gw/chat request in the browser's developer tools (docs/CONNECT.md)"))
	}

	if len(models) > 0 {
		add(c.parseModels(getenv, models))
	}
	add(c.parseHeaderValues(getenv))
	add(c.parseTerminalRule(getenv))
	add(c.parseUpstreamConstraints(getenv))
	if err := joinProblems(problems); err != nil {
		return Config{}, err
	}
	return c, nil
}

// joinProblems is nil, the one refusal, or all of them joined.
var joinProblems = setting.Join

// strategyMeant is the strategy whose variables Parse checks: the configured
// one, or the one its refused value stands for (a wrong case or a label),
// or else the one whose secret is set; "" when none can be told.
func strategyMeant(getenv func(string) string) Strategy {
	raw := getenv(EnvStrategy)
	for _, s := range []Strategy{StrategyAccessToken, StrategyWebSession} {
		if raw == "" {
			break
		}
		if _, err := setting.Enum(func(string) string { return raw }, EnvStrategy, "", string(s)); err == nil ||
			strings.Contains(err.Error(), "did you mean") {
			return s
		}
	}
	switch {
	case getenv(EnvSessionCookie) != "" || getenv(EnvSubdomain) != "":
		return StrategyWebSession
	case getenv(EnvAccessToken) != "" || getenv(EnvOrigin) != "":
		return StrategyAccessToken
	}
	return ""
}

// looksLikeURL reports a value pasted from the address bar: a scheme or a
// Postman host (an opaque id may hold a '/' or a ':').
func looksLikeURL(v string) bool {
	v = strings.ToLower(v)
	return strings.Contains(v, "://") || strings.Contains(v, "postman.co")
}

// parseUpstreamConstraints reads the service constraints the public projects
// report: the query length, the tool count and the parallel-calling flag; and
// the length of one tool result, which none reports (unset: no limit).
func (c *Config) parseUpstreamConstraints(getenv func(string) string) error {
	var problems []error
	add := func(err error) {
		if err != nil {
			problems = append(problems, err)
		}
	}
	var err error
	c.MaxQueryChars, err = setting.BoundedInt(getenv, EnvMaxQueryChars, DefaultMaxQueryChars, 1, MaxQueryCharsBound)
	add(err)
	c.MaxToolsUpstream, err = setting.BoundedInt(getenv, EnvMaxToolsUpstream, DefaultMaxToolsUpstream, 0, MaxToolsUpstreamBound)
	add(err)
	c.MaxToolResultChars, err = setting.BoundedInt(getenv, EnvMaxToolResult, 0, 1, MaxToolResultCharsBound)
	add(err)
	for _, l := range []struct {
		env string
		src *budget.Source
	}{{EnvMaxQueryChars, &c.MaxQueryCharsSource}, {EnvMaxToolsUpstream, &c.MaxToolsUpstreamSource}} {
		if getenv(l.env) != "" {
			*l.src = budget.SourceSetting
		}
	}
	v, err := setting.Enum(getenv, EnvParallelTools, "", string(ParallelOn), string(ParallelOff))
	add(err)
	c.ParallelToolCalls = ParallelSetting(v)
	return joinProblems(problems)
}

// forbid refuses each of names that is set under strategy s.
func forbid(getenv func(string) string, s Strategy, names ...string) []error {
	var problems []error
	for _, n := range names {
		if getenv(n) != "" {
			problems = append(problems, refuse(envName(n), "must not be set when POSTMAN_TRANSPORT_STRATEGY is %s", s))
		}
	}
	return problems
}

// parseAccessToken checks the access_token variables; s is the strategy
// meant (strategyMeant), whether or not its name was accepted.
func (c *Config) parseAccessToken(getenv func(string) string, s Strategy) error {
	problems := forbid(getenv, s, EnvSessionCookie, EnvSubdomain, EnvTerminalRule)
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

// parseWebSession checks the web_session variables; s is the strategy
// meant (strategyMeant), whether or not its name was accepted.
func (c *Config) parseWebSession(getenv func(string) string, s Strategy) error {
	problems := forbid(getenv, s, EnvAccessToken, EnvOrigin, EnvChatPath)
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

// subdomainRE is one DNS label. Compiled on first use: only the web_session
// strategy and postman.co origins need it, and its bounded repetition costs
// about 50 KB to compile.
var subdomainRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`) })

// reservedSubdomains are Postman hosts that are never a workspace
// (docs/UPSTREAM.md).
var reservedSubdomains = []string{"go", "identity", "id", "www"}

func checkSubdomain(v string) error {
	if strings.Contains(v, ".") || strings.Contains(v, "/") {
		return refuse(EnvSubdomain, "is a URL or a host name, not the subdomain: set one lowercase DNS label, "+
			"TEAM of https://TEAM.postman.co/workspace/… (no scheme, dot or path)")
	}
	if subdomainRE().MatchString(strings.ToLower(v)) && !subdomainRE().MatchString(v) {
		return refuse(EnvSubdomain, "must be one lowercase DNS label: lower case, as the address bar shows it (TEAM of https://TEAM.postman.co/…)")
	}
	if !subdomainRE().MatchString(v) {
		return refuse(EnvSubdomain, "must be one lowercase DNS label of 1-63 bytes matching ^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
	}
	if slices.Contains(reservedSubdomains, v) {
		return refuse(EnvSubdomain, "names a reserved Postman host (go, identity, id, www), not a workspace")
	}
	return nil
}

func (c *Config) parseHeaderValues(getenv func(string) string) error {
	var problems []error
	c.UserAgent = getenv(EnvUserAgent)
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	} else if !printableASCII(c.UserAgent, 1, MaxHeaderBytes) ||
		c.UserAgent[0] == ' ' || c.UserAgent[len(c.UserAgent)-1] == ' ' {
		problems = append(problems, refuse(EnvUserAgent, "must be 1-256 bytes of printable ASCII (0x20-0x7e) without leading or trailing space"))
	}
	c.AppVersion = getenv(EnvAppVersion)
	if c.AppVersion != "" && !visibleASCII(c.AppVersion, 1, MaxHeaderBytes) {
		problems = append(problems, refuse(EnvAppVersion, "must be 1-256 bytes of visible ASCII (0x21-0x7e)"))
	}
	return joinProblems(problems)
}

func (c *Config) parseTerminalRule(getenv func(string) string) error {
	if strategyMeant(getenv) != StrategyWebSession {
		return nil // set on access_token is refused by parseAccessToken
	}
	raw, err := setting.Enum(getenv, EnvTerminalRule, "", string(completion.RuleExplicitOnly), string(completion.RuleUsageAfterOutput))
	if err != nil {
		return err
	}
	r, err := completion.RuleFor(true, completion.Rule(raw))
	if err != nil {
		return refuse(EnvTerminalRule, "must be explicit_only or usage_after_output_v1")
	}
	c.TerminalRule = r
	return nil
}

// Rule is the completion rule the configuration's streams are judged by
// (completion.RuleFor): legacy_done on access_token, the configured web rule
// on web_session. An unknown strategy is a config_invalid error.
func (c Config) Rule() (completion.Rule, error) {
	switch c.Strategy {
	case StrategyAccessToken, StrategyWebSession:
		return completion.RuleFor(c.Strategy == StrategyWebSession, c.TerminalRule)
	}
	return "", errs.Newf(errs.ConfigInvalid, "unknown transport strategy")
}

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
