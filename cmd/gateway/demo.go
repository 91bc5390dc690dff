package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/setting"
)

const (
	demoModel     = "pmgate-demo"
	demoEnum      = "GPT_55"
	demoSubdomain = "pmgate-demo"
	demoWorkspace = "demo-workspace"
)

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// runDemo starts the emulator and a gateway wired to it through the real
// Postman adapter; only this wiring trusts the emulator's CA and maps the
// web-session host to the emulator's loopback listener.
func runDemo(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	strategy := fs.String("strategy", "web_session", "upstream strategy: web_session or access_token")
	port := fs.String("port", "8788", "gateway port (0 picks a free one)")
	profile := fs.String("profile", emulator.ProfileStrict, "emulator profile: "+strings.Join(emulator.Profiles(), ", "))
	key := fs.String("key", "", "the gateway's API key (default: DEMO_API_KEY, else a random one)")
	if done, err := parseFlags(fs, args, demoHelp, stdout); done || err != nil {
		return err
	}
	if *strategy != "web_session" && *strategy != "access_token" {
		return fmt.Errorf("%w: --strategy must be web_session or access_token", errUsage)
	}
	if n, ok := setting.Decimal(*port); !ok || n > 65535 {
		// The demo's own flag, not PROVIDER_PORT (which it does not read).
		return fmt.Errorf("%w: --port must be a decimal integer from 0 to 65535 (0 picks a free port)", errUsage)
	}
	if *key == "" {
		*key = getenv("DEMO_API_KEY")
	}
	if *key != "" && (len(*key) < 16 || len(*key) > 512 || !visibleASCII(*key)) {
		return fmt.Errorf("%w: --key (or DEMO_API_KEY) must be 16–512 visible ASCII characters", errUsage)
	}
	eu, err := startEmulatorUpstream(ctx, *strategy, *port, *profile, getenv)
	if err != nil {
		return err
	}
	defer eu.emu.Close()
	if *key != "" {
		eu.env["PROVIDER_API_KEY"] = *key
	}
	env := func(k string) string { return eu.env[k] }
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	log, lc := newLoggerControl(cfg, stderr)
	hup := notifyHUP() // caught from before "listening", as serve does
	gw, err := startGateway(ctx, cfg, log, eu.opts...)
	if err != nil {
		signal.Stop(hup)
		return err
	}
	gw.enableReload(hup, source{getenv: env}, env, lc, stamp{})
	// The Claude Code recipe's prompt file, written where the banner's line
	// finds it from any directory; removed when the demo ends.
	recipeDir, err := os.MkdirTemp("", "pmgate-demo-recipe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(recipeDir)
	if _, err := writeRecipe("claude-code", recipeParams{dir: recipeDir}, false); err != nil {
		return err
	}
	printDemo(stdout, "http://"+gw.addr()+"/v1", cfg.apiKey, *strategy, eu.emu.Origin(), filepath.Join(recipeDir, "system-prompt.md"))
	if *profile != emulator.ProfileStrict {
		fmt.Fprintf(stdout, "\nEmulator profile %q: its streams show what the public projects report; the default completion rules may refuse them.\n", *profile)
	}
	return gw.wait(ctx)
}

// emulatorUpstream is a started emulator, the gateway environment that uses it
// and the adapter options that reach it (trust its CA, dial it for the
// web-session host). Only the demo and `gateway probe --emulator` use it.
type emulatorUpstream struct {
	emu  *emulator.Server
	env  map[string]string
	opts []postman.Option
}

// startEmulatorUpstream starts the emulator with a profile and the owner's
// upstream limits (read through getenv, honoured on both sides); accept, where
// set, is what the emulated service accepts instead (probe --emulator).
func startEmulatorUpstream(ctx context.Context, strategy, port, profile string, getenv func(string) string, accept ...emulatorLimits) (*emulatorUpstream, error) {
	limits, err := upstreamLimits(getenv)
	if err != nil {
		return nil, err
	}
	for _, a := range accept {
		if a.queryChars > 0 {
			limits.queryChars = a.queryChars
		}
		if a.tools > 0 {
			limits.tools = a.tools
		}
		limits.queryCodePoints = limits.queryCodePoints || a.queryCodePoints
		limits.rateLimit = max(limits.rateLimit, a.rateLimit)
		limits.pendingKept = limits.pendingKept || a.pendingKept
	}
	// The emulator's credentials are fake and local to this process; the gateway
	// holds them exactly as it would hold real ones.
	cookie, token := randomHex(24), randomHex(24)
	emu, err := startEmulator(ctx, emulator.Config{WorkspaceID: demoWorkspace, Subdomain: demoSubdomain,
		SessionCookie: cookie, AccessToken: token, Models: map[string]string{demoEnum: demoEnum}}, profile, limits)
	if err != nil {
		return nil, err
	}
	env := map[string]string{
		"PROVIDER_PORT": port, "PROVIDER_API_KEY": "sk-pmgate-demo-" + randomHex(16), "PROVIDER_MODELS": demoModel,
		"POSTMAN_TRANSPORT_STRATEGY": strategy, "POSTMAN_WORKSPACE_ID": demoWorkspace,
		"POSTMAN_MODEL_MAP": demoModel + "=" + demoEnum, "LOG_FORMAT": "text",
	}
	// The upstream constraints an owner may set are honoured by both sides.
	for _, k := range limitSettings {
		if v := getenv(k); v != "" {
			env[k] = v
		}
	}
	if strategy == "web_session" {
		env["POSTMAN_SESSION_COOKIE"], env["POSTMAN_WORKSPACE_SUBDOMAIN"] = cookie, demoSubdomain
	} else {
		env["POSTMAN_ACCESS_TOKEN"], env["POSTMAN_ORIGIN"] = token, emu.Origin()
	}
	host := demoSubdomain + ".postman.co:443"
	dialer := &net.Dialer{}
	opts := []postman.Option{postman.WithRootCAs(emu.CertPool()),
		postman.WithDialContext(func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != host && "https://"+addr != emu.Origin() {
				return nil, errs.Newf(errs.UpstreamUnavailable, "the demo dials only its emulator")
			}
			return dialer.DialContext(ctx, network, emu.Addr())
		})}
	return &emulatorUpstream{emu: emu, env: env, opts: opts}, nil
}

// limitSettings are the upstream constraints `demo` and `emulator` honour on
// both sides (the gateway refuses before sending, the emulator like the
// service).
var limitSettings = []string{"POSTMAN_MAX_QUERY_CHARS", "POSTMAN_MAX_TOOLS_UPSTREAM", "POSTMAN_MAX_TOOL_RESULT_CHARS", "POSTMAN_PARALLEL_TOOL_CALLS"}

// emulatorLimits are the emulator's service constraints taken from the
// environment; zero keeps the emulator's default.
type emulatorLimits struct {
	queryChars, tools, toolResultChars int
	queryCodePoints                    bool // the query limit counts code points (else UTF-16 units)
	rateLimit                          int  // the service's rate-limit headers for a window of this many requests (0: none)
	pendingKept                        bool // a newer user query keeps a pending tool call answerable (else drops it)
}

// upstreamLimits reads POSTMAN_MAX_QUERY_CHARS, POSTMAN_MAX_TOOLS_UPSTREAM and
// POSTMAN_MAX_TOOL_RESULT_CHARS with the gateway's own rules (pmconfig), so
// both sides share one limit.
func upstreamLimits(getenv func(string) string) (emulatorLimits, error) {
	var l emulatorLimits
	for _, v := range []struct {
		name   setting.Name
		dst    *int
		lo, hi int
	}{
		{"POSTMAN_MAX_QUERY_CHARS", &l.queryChars, 1, 1000000},
		{"POSTMAN_MAX_TOOLS_UPSTREAM", &l.tools, 0, 256},
		{"POSTMAN_MAX_TOOL_RESULT_CHARS", &l.toolResultChars, 1, pmconfig.MaxToolResultCharsBound},
	} {
		n, err := setting.BoundedInt(getenv, v.name, 0, v.lo, v.hi) // unset: 0, the emulator's default
		if err != nil {
			return l, err
		}
		*v.dst = n
	}
	return l, nil
}

// startEmulator starts the emulator with a profile and the owner's limits.
func startEmulator(ctx context.Context, cfg emulator.Config, profile string, l emulatorLimits) (*emulator.Server, error) {
	if !slices.Contains(emulator.Profiles(), profile) {
		return nil, fmt.Errorf("%w: --profile must be one of %s", errUsage, strings.Join(emulator.Profiles(), ", "))
	}
	cfg.Profile, cfg.MaxQueryChars, cfg.MaxToolResultChars = profile, l.queryChars, l.toolResultChars
	cfg.QueryCharsInCodePoints, cfg.RateLimit = l.queryCodePoints, l.rateLimit
	if l.pendingKept {
		cfg.PendingOnQuery = emulator.PendingKept
	}
	// What a person runs (demo, emulator, probe --emulator): an agent runs
	// the tool calls' commands, so they only print that they are placeholders.
	cfg.PlaceholderCommands = true
	if l.tools > 0 {
		cfg.MaxTools = l.tools
	}
	return emulator.Start(ctx, cfg)
}

func printDemo(w io.Writer, base, key, strategy, origin, promptFile string) {
	fmt.Fprintf(w, `pmgate demo — the gateway, wired through the real Postman adapter (%s) to a built-in emulator at %s.
Nothing leaves this machine. Stop with Ctrl-C.

  base URL  %s
  API key   %s
  model     %s
  admin     %s   (the control page; sign in with the API key)
  metrics   %s   (Prometheus; Authorization: Bearer <API key>)

JSON:
  curl -s %s/chat/completions -H "Authorization: Bearer %s" -H "Content-Type: application/json" \
    -d '{"model":"%s","messages":[{"role":"user","content":"Hello!"}]}'

Streaming:
  curl -sN %s/chat/completions -H "Authorization: Bearer %s" -H "Content-Type: application/json" \
    -d '{"model":"%s","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello!"}]}'

OpenAI Python SDK:
  from openai import OpenAI
  client = OpenAI(base_url="%s", api_key="%s")
  print(client.chat.completions.create(model="%s", messages=[{"role": "user", "content": "Hello!"}]).choices[0].message.content)

OpenAI Go SDK (github.com/openai/openai-go/v3):
  client := openai.NewClient(option.WithBaseURL("%s"), option.WithAPIKey("%s"))

Claude Code (the Anthropic Messages API at /v1/messages; every model name it asks for pinned to the demo's;
the recipe that fits the service's budget, its prompt file written for this run — a copy that lasts:
gateway recipe claude-code --dir DIR):
%s

Try a fault: put "#scenario=ambiguous_eof" (or truncated_frame, failure_after_text, model_mismatch, …) in the
message text and the gateway answers with a stable error instead of a fake success.
`, strategy, origin, base, key, demoModel, strings.TrimSuffix(base, "/v1")+"/admin", strings.TrimSuffix(base, "/v1")+"/metrics", base, key, demoModel, base, key, demoModel, base, key, demoModel, base, key,
		strings.TrimSuffix(claudeCodeLines(base, shellWord(key), demoModel, promptFile), "\n"))
}

// runEmulator runs the emulator alone, as a fake upstream for clients and load tests.
func runEmulator(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("emulator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:8789", "listen address (loopback only)")
	subdomain := fs.String("subdomain", demoSubdomain, "web-session subdomain the emulator accepts")
	workspace := fs.String("workspace", demoWorkspace, "workspace id the emulator requires")
	profile := fs.String("profile", emulator.ProfileStrict, "emulator profile: "+strings.Join(emulator.Profiles(), ", "))
	rateLimit := fs.Int("rate-limit", 0, "requests per 60 s window, sent as the service's rate-limit headers (0: none)")
	if done, err := parseFlags(fs, args, emulatorHelp, stdout); done || err != nil {
		return err
	}
	if *rateLimit < 0 {
		return fmt.Errorf("%w: --rate-limit must not be negative", errUsage)
	}
	limits, err := upstreamLimits(getenv)
	if err != nil {
		return err
	}
	cookie, token := getenv("EMULATOR_SESSION_COOKIE"), getenv("EMULATOR_ACCESS_TOKEN")
	if cookie == "" {
		cookie = randomHex(24)
	}
	if token == "" {
		token = randomHex(24)
	}
	emu, err := startEmulator(ctx, emulator.Config{Addr: *addr, WorkspaceID: *workspace, Subdomain: *subdomain,
		SessionCookie: cookie, AccessToken: token, RateLimit: *rateLimit}, *profile, limits)
	if err != nil {
		return err
	}
	defer emu.Close()
	scen := emulator.Scenarios()
	sort.Strings(scen)
	fmt.Fprintf(stdout, `pmgate emulator (a fake Postman upstream; these credentials are its own, not real ones)
  origin     %s
  trust CA   %s   (e.g. SSL_CERT_FILE=%s)
  profile    %s  (of %s; docs/UPSTREAM.md)
  scenarios  %s  (put "#scenario=NAME" in the user text)

access_token gateway:
  POSTMAN_TRANSPORT_STRATEGY=access_token POSTMAN_ORIGIN=%s POSTMAN_ACCESS_TOKEN=%s POSTMAN_WORKSPACE_ID=%s
web_session (needs a resolver or dialer mapping %s.postman.co to %s):
  POSTMAN_TRANSPORT_STRATEGY=web_session POSTMAN_WORKSPACE_SUBDOMAIN=%s POSTMAN_SESSION_COOKIE=%s POSTMAN_WORKSPACE_ID=%s
`, emu.Origin(), emu.CAFile(), emu.CAFile(), *profile, strings.Join(emulator.Profiles(), ", "), strings.Join(scen, ", "), emu.Origin(), token, *workspace,
		*subdomain, emu.Addr(), *subdomain, cookie, *workspace)
	<-ctx.Done()
	return nil
}

// runCheckConfig validates the configuration: every problem at once, or a
// redacted summary and the warnings.
func runCheckConfig(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, done, err := configCommand("check-config", checkConfigHelp, args, getenv, stdout)
	if done {
		return nil
	}
	if err != nil {
		if !errs.Has(err, errs.ConfigInvalid) {
			return err
		}
		problems := problemsOf(err)
		fmt.Fprintf(stderr, "configuration refused: %d problem(s)\n", len(problems))
		for _, p := range problems {
			fmt.Fprintf(stderr, "  - %s\n", problemText(p))
		}
		for _, w := range cfg.fileWarnings { // a misspelt name is often why a value is missing
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
		return errs.Newf(errs.ConfigInvalid, "%d problem(s) listed above", safeCount(len(problems)))
	}
	m := cfg.summary()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintln(stdout, "configuration ok")
	for _, k := range keys {
		fmt.Fprintf(stdout, "  %s: %s\n", k, m[k])
	}
	for _, w := range configWarnings(cfg) {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	return nil
}

// safeCount is a count that prints unredacted.
type safeCount int

// SafeValue marks counts as safe for logs.
func (safeCount) SafeValue() {}
