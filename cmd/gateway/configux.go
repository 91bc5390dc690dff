package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	"github.com/cockroachdb/errors"
)

// placeholders are the values examples/gateway.env.example ships with. A
// configuration that still holds one is refused: it cannot work, and the
// upstream would only answer it with an authentication failure.
var placeholders = map[string][]string{
	"PROVIDER_API_KEY":            {"replace-with-a-long-random-key"},
	"POSTMAN_SESSION_COOKIE":      {"replace-with-the-postman.sid-value"},
	"POSTMAN_WORKSPACE_SUBDOMAIN": {"your-team"},
	"POSTMAN_ACCESS_TOKEN":        {"replace-with-your-token"},
	"POSTMAN_ORIGIN":              {"https://example.invalid"},
	"POSTMAN_WORKSPACE_ID":        {"replace-with-your-team-id"},
}

// placeholderOrder keeps the refusals in the example file's order.
var placeholderOrder = []string{"PROVIDER_API_KEY", "POSTMAN_SESSION_COOKIE", "POSTMAN_WORKSPACE_SUBDOMAIN",
	"POSTMAN_ACCESS_TOKEN", "POSTMAN_ORIGIN", "POSTMAN_WORKSPACE_ID"}

// refusePlaceholders refuses every variable that still holds the example's
// placeholder (or any "replace-with-…" value).
func refusePlaceholders(getenv func(string) string) error {
	var problems []error
	for _, name := range placeholderOrder {
		v := getenv(name)
		if v == "" {
			continue
		}
		hit := strings.HasPrefix(v, "replace-with-")
		for _, p := range placeholders[name] {
			hit = hit || v == p
		}
		if hit {
			problems = append(problems, invalid(name, "still holds the example file's placeholder; put your own value (docs/CONNECT.md says where to find it)"))
		}
	}
	return errors.Join(problems...)
}

// configWarnings are accepted settings worth a second look; check-config
// prints them and serve logs them at start-up.
func configWarnings(c config) []string {
	var out []string
	if ip := net.ParseIP(c.host); c.host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		out = append(out, "PROVIDER_HOST is not a loopback address: the gateway will be reachable from other machines; "+
			"anyone who can reach it and holds PROVIDER_API_KEY spends your Postman account")
		if !c.adminEnabled {
			out = append(out, "the control page (/admin) is off: it is off by default when PROVIDER_HOST is not loopback; ADMIN_ENABLED=true turns it on")
		}
	}
	return append(out, c.fileWarnings...)
}

// configVariablesHelp lists the variables the gateway configuration reads
// (docs/CONFIGURATION.md has each one's default and rule; a test keeps the two
// in step).
const configVariablesHelp = `variables read (the real environment wins over --env-file):
  PROVIDER_HOST PROVIDER_PORT PROVIDER_API_KEY (or PROVIDER_KEYS_FILE) PROVIDER_MODELS
  POSTMAN_TRANSPORT_STRATEGY
  access_token: POSTMAN_ACCESS_TOKEN POSTMAN_ORIGIN POSTMAN_CHAT_PATH
  web_session:  POSTMAN_SESSION_COOKIE POSTMAN_WORKSPACE_SUBDOMAIN POSTMAN_WEB_SESSION_TERMINAL_RULE
  POSTMAN_WORKSPACE_ID POSTMAN_MODEL_MAP (or POSTMAN_WEB_SESSION_SELECTED_MODEL,
    POSTMAN_WEB_SESSION_OBSERVED_MODELS) POSTMAN_USER_AGENT POSTMAN_APP_VERSION
  POSTMAN_MAX_QUERY_CHARS POSTMAN_MAX_TOOLS_UPSTREAM POSTMAN_MAX_TOOL_RESULT_CHARS POSTMAN_PARALLEL_TOOL_CALLS
  TOOL_SCHEMA_POLICY POSTMAN_SCHEMA_COMBINATORS
  REQUEST_TIMEOUT_MS BODY_READ_TIMEOUT_MS MAX_BODY_BYTES MAX_EVENT_BYTES MAX_OUTPUT_BYTES MAX_TOOLS
    MAX_TOOL_ARGUMENT_BYTES MAX_TOOL_RESULT_BYTES MAX_CONCURRENT_REQUESTS MAX_CONNECTIONS
  ALLOWED_HOSTS ADMIN_ENABLED METRICS_AUTH
  CORRELATION_ENABLED CORRELATION_STORE CORRELATION_POSTGRES_URL CORRELATION_PRINCIPAL_KEY
    CORRELATION_PENDING_TTL_MS CORRELATION_TERMINAL_TTL_MS CORRELATION_MAX_GROUPS
    CORRELATION_MAX_GROUPS_PER_KEY CORRELATION_MAX_CALLS CORRELATION_RESPONSE_CACHE_BYTES
  CONVERSATION_CONTINUITY CONVERSATION_RESUME CONVERSATION_TTL_MS CONVERSATION_MAX_ANCHORS
  IDEMPOTENCY_TTL_MS IDEMPOTENCY_CACHE_BYTES
  USAGE_ESTIMATES USAGE_RETENTION_DAYS
  PROBE_REPORT PROBE_REQUIRED_FOR_READY SHUTDOWN_DELAY_MS LOG_LEVEL LOG_FORMAT
  UPDATE_MANIFEST_URL (a release manifest; unset, nothing is fetched)
  SSL_CERT_FILE SSL_CERT_DIR (the upstream's trust store; when set, in the environment or the
    env file, the upstream is trusted for exactly these certificates)
` + otelHelp

// otelHelp names the tracing variables (docs/OPERATE.md).
const otelHelp = `  OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT OTEL_SERVICE_NAME OTEL_SDK_DISABLED
    (OpenTelemetry traces over OTLP/HTTP when an endpoint is set; off otherwise)
`

const serveHelp = `usage: gateway serve [--env-file FILE]

Runs the gateway with the configuration from the environment. Stops on
SIGINT/SIGTERM after in-flight requests finish (at most 30 s).

flags:
  --env-file FILE   read KEY=VALUE lines first (blank lines and # comments skipped)

` + configVariablesHelp

const checkConfigHelp = `usage: gateway check-config [--env-file FILE]

Validates the configuration, lists every problem at once (exit 78) or prints a
redacted summary and any warnings (exit 0). Secrets are shown only as "set".

flags:
  --env-file FILE   read KEY=VALUE lines first (blank lines and # comments skipped)

` + configVariablesHelp

const demoHelp = `usage: gateway demo [--strategy S] [--port P] [--profile P] [--key KEY]

Starts the built-in emulator of the Postman upstream and a gateway wired to it
through the real adapter, offline, serving the model pmgate-demo; prints
ready-to-paste snippets.

flags:
  --strategy S   web_session (default) or access_token
  --port P       the gateway's port (default 8788; 0 picks a free one)
  --profile P    the emulator's profile: strict (default), usage_last_eof, observed,
                 done_event or forbid_schemas (docs/UPSTREAM.md says what each one
                 sends)
  --key KEY      the gateway's API key, 16–512 visible ASCII (default: DEMO_API_KEY,
                 else a random one per run), so a client configured against the demo
                 keeps working across restarts

variables read:
  DEMO_API_KEY   the API key when --key is not given
`

const emulatorHelp = `usage: gateway emulator [--addr A] [--subdomain S] [--workspace W] [--profile P] [--rate-limit N]

Runs the emulator of the Postman upstream alone (loopback HTTPS with its own CA)
and prints its origin, CA file and matching gateway settings.

flags:
  --addr A        listen address, loopback only (default 127.0.0.1:8789)
  --subdomain S   web-session subdomain it accepts (default pmgate-demo)
  --workspace W   workspace id it requires (default demo-workspace)
  --profile P     strict (default), usage_last_eof, observed, done_event or
                  forbid_schemas
  --rate-limit N  answer like the service with X-RateLimit-* and RateLimit-Policy
                  headers for a window of N requests per 60 s, and 429 beyond it
                  (default 0: no such headers)

variables read:
  EMULATOR_SESSION_COOKIE EMULATOR_ACCESS_TOKEN   the credentials it accepts (random when unset)
`

const diagramHelp = `usage: gateway diagram [--dir spec] [--check]

Writes the generated diagrams and tables of the declared machines, or checks
that they are current (exit 3 when stale).

flags:
  --dir D    directory of the generated files (default spec)
  --check    check instead of writing

variables read: none
`

const versionHelp = `usage: gateway version   (or gateway --version)

Prints the version and build information (Go version, VCS revision).

variables read: none
`

// configCommand parses a configuration command's flags (--env-file, --help)
// and loads the configuration; done means help was printed.
func configCommand(command, help string, args []string, getenv func(string) string, stdout io.Writer) (config, bool, error) {
	src, done, err := configSource(command, help, args, getenv, stdout)
	if done || err != nil {
		return config{}, done && err == nil, err
	}
	cfg, _, err := src.load()
	return cfg, false, err // the env file's warnings even with a refusal
}

// source is where a command's configuration comes from: the environment and
// the optional env file, which serve reads again on reload.
type source struct {
	envPath string
	getenv  func(string) string
}

// configSource parses a configuration command's flags; done means help was
// printed.
func configSource(command, help string, args []string, getenv func(string) string, stdout io.Writer) (source, bool, error) {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	envPath := fs.String("env-file", "", "")
	if done, err := parseFlags(fs, args, help, stdout); done || err != nil {
		return source{}, done && err == nil, err
	}
	if fs.NArg() > 0 {
		return source{}, false, fmt.Errorf("%w: %s takes no arguments (see --help)", errUsage, command)
	}
	return source{envPath: *envPath, getenv: getenv}, false, nil
}

// load reads the env file (when there is one) and loads the configuration; it
// also returns the getenv the configuration was read through.
func (s source) load() (config, func(string) string, error) {
	getenv := s.getenv
	var names, overridden []string
	if s.envPath != "" {
		vals, err := readEnvFile(s.envPath)
		if err != nil {
			return config{}, nil, err
		}
		base := s.getenv
		for k, v := range vals {
			names = append(names, k)
			if e := base(k); e != "" && e != v {
				overridden = append(overridden, k)
			}
		}
		getenv = func(k string) string {
			if v := base(k); v != "" {
				return v
			}
			return vals[k]
		}
	}
	cfg, err := loadConfig(getenv)
	cfg.fileWarnings = append(unknownSettings(names), overriddenSettings(overridden)...)
	cfg.fileWarnings = append(cfg.fileWarnings, literalSettings(s.getenv)...)
	return cfg, getenv, err
}

// overriddenSettings warns of each name that the env file and the real
// environment both set, to different values: the environment's wins, which
// is easy to miss when a shell exports it (SSL_CERT_FILE). Only names: the
// values may be secrets.
func overriddenSettings(names []string) []string {
	slices.Sort(names)
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, fmt.Sprintf("%s is set both in the environment and in the env file, to different values: "+
			"the environment's is used (`unset %s` in the shell to use the file's)", n, n))
	}
	return out
}

// literalSettings warns of each setting whose value in the real environment
// an env file line would have read differently (readEnvFile's value rule):
// quotes around it or a trailing # comment. podman's and docker's --env-file
// pass such a line on literally, so this is how a my.env written with quotes
// reaches a container (docs/INSTALL.md#container-image). Only names.
func literalSettings(getenv func(string) string) []string {
	var out []string
	for _, n := range knownSettings() {
		v := getenv(n)
		if v == "" {
			continue
		}
		if read, ok := envValue(strings.TrimSpace(v)); ok && read == v {
			continue
		}
		out = append(out, fmt.Sprintf("%s in the environment holds quotes or a trailing # comment that an env file line would not keep: "+
			"podman's and docker's --env-file keep them as part of the value; write that line as NAME=value "+
			"(docs/INSTALL.md#container-image)", n))
	}
	return out
}

// problemText is a configuration refusal as check-config and the reload log
// show it: the variable and the rule, without the catalog's fixed sentence
// (refusals never hold a secret's value).
func problemText(p error) string {
	_, msg, _ := strings.Cut(p.Error(), ": ")
	return msg
}

// problemsOf lists the refusals of a (possibly joined) configuration error.
func problemsOf(err error) []error {
	// A join may sit under wrappers (a stack trace); a single refusal has none.
	for e := err; e != nil; {
		if m, ok := e.(interface{ Unwrap() []error }); ok {
			var out []error
			for _, c := range m.Unwrap() {
				out = append(out, problemsOf(c)...)
			}
			return out
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return []error{err}
}

// nearest returns the known name closest to s, or "": within 3 edits, and
// within half of s's length (at least 1), so that a short word that shares
// nothing with a name (xyz, keys) is not taken for it.
func nearest(s string, known []string) string {
	best, bestD := "", min(3, max(1, len(s)/2))+1
	for _, k := range known {
		if d := editDistance(s, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// settingPrefixes are the prefixes of the gateway's settings: a name of the
// env file with one of them that the gateway does not read is a mistake
// worth a warning.
var settingPrefixes = []string{"PROVIDER_", "POSTMAN_", "MAX_", "REQUEST_", "TOOL_SCHEMA_", "CORRELATION_",
	"CONVERSATION_", "LOG_", "PROBE_", "SHUTDOWN_", "ADMIN_", "METRICS_", "ALLOWED_", "BODY_READ_", "SSL_CERT_", "USAGE_", "DEMO_"}

// knownSettings are the names the configuration reads, taken from the help
// (which a test keeps equal to docs/CONFIGURATION.md): one list, not two.
func knownSettings() []string {
	var out []string
	for _, w := range strings.FieldsFunc(configVariablesHelp+otelHelp, func(r rune) bool {
		return !(r == '_' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		if strings.Contains(w, "_") && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// unknownSettings returns a warning for every name that looks like a setting
// (a known prefix, or within three edits of a known name) but is not one,
// with the nearest known name.
func unknownSettings(names []string) []string {
	known := knownSettings()
	slices.Sort(names)
	var out []string
	for _, n := range names {
		if slices.Contains(known, n) {
			continue
		}
		near := nearest(n, known)
		prefixed := slices.ContainsFunc(settingPrefixes, func(p string) bool { return strings.HasPrefix(n, p) })
		switch {
		case near != "":
			out = append(out, fmt.Sprintf("%s in the env file is not a setting the gateway reads; did you mean %s?", n, near))
		case prefixed:
			out = append(out, fmt.Sprintf("%s in the env file is not a setting the gateway reads (docs/CONFIGURATION.md lists them)", n))
		}
	}
	return out
}
