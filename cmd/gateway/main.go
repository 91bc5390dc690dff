// Command gateway is pmgate: an OpenAI-compatible gateway to the Postman Agent
// Mode chat service. main only builds a program from the process and runs it;
// tests build their own.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/pmgate/pmgate/adapters/postman"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := program{getenv: os.Getenv, stdout: os.Stdout, stderr: os.Stderr}.run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", describe(err))
		os.Exit(exitCode(err))
	}
}

// usage is printed for `gateway help` and unknown commands.
const usage = `usage: gateway <command> [flags]

commands:
  serve [--env-file FILE]          run the gateway (configuration from the environment)
  demo [--strategy S] [--port P]   run the gateway against the built-in emulator, offline
  emulator [--addr A]              run the Postman emulator alone
  check-config [--env-file FILE]   validate the configuration and print a redacted summary
  diagram [--dir spec] [--check]   write (or check) the generated machine diagrams and tables
  probe --live|--emulator [...]    verify the upstream end to end; writes an evidence report
  verify REPORT                    check an evidence report (the closure gate)
  keys new|set|list|revoke         manage the API key slots of PROVIDER_KEYS_FILE
  recipe claude-code|codex|opencode  write an agent's recipe files and print its command lines
  usage [--since D] [--until D]    what each key spent, by key, model and day (--json, --csv)
  version                          print version and build information (also --version, -v)
  ready [--url URL]                exit 0 when a running gateway's /readyz says ready (health checks)

Every command has --help listing its flags and the variables it reads.
`

// commands are the subcommands, for the nearest-command suggestion.
var commands = []string{"serve", "demo", "emulator", "check-config", "diagram", "probe", "verify", "keys", "recipe", "usage", "version", "help", "ready"}

// program is everything a run of the gateway takes from its process, handed in
// rather than read from globals, so that tests run the real commands with their
// own environment, streams and upstream.
type program struct {
	getenv         func(string) string
	stdout, stderr io.Writer
	// upstream are extra options of the Postman adapter of serve and probe
	// --live (a test trusts its in-test emulator's CA and dials it); none in
	// the binary.
	upstream []postman.Option
	// started, if set, is called with serve's gateway once it listens
	// (tests); nil in the binary.
	started func(*gateway)
}

// run is a program of the given environment and streams, without extra
// upstream options.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return program{getenv: getenv, stdout: stdout, stderr: stderr}.run(ctx, args)
}

func (p program) run(ctx context.Context, args []string) error {
	getenv, stdout, stderr := p.getenv, p.stdout, p.stderr
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("%w: a command is needed, one of those above; `gateway demo` runs the whole gateway offline", errUsage)
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], getenv, stdout, stderr, p.upstream, p.started)
	case "demo":
		return runDemo(ctx, args[1:], getenv, stdout, stderr)
	case "emulator":
		return runEmulator(ctx, args[1:], getenv, stdout)
	case "check-config":
		return runCheckConfig(args[1:], getenv, stdout, stderr)
	case "diagram":
		return runDiagram(args[1:], stdout)
	case "probe":
		return runProbe(ctx, args[1:], getenv, stdout, stderr, p.upstream)
	case "verify":
		return runVerify(args[1:], getenv, stdout, stderr)
	case "keys":
		return runKeys(args[1:], getenv, stdout, stderr)
	case "recipe":
		return runRecipeCommand(args[1:], getenv, stdout)
	case "usage":
		return runUsage(ctx, args[1:], getenv, stdout)
	case "ready":
		return runReady(ctx, args[1:], getenv, stdout)
	case "version", "--version", "-version", "-v":
		if len(args) > 1 && (args[1] == "--help" || args[1] == "-h") {
			fmt.Fprint(stdout, versionHelp)
			return nil
		}
		return runVersion(stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		if n := nearest(args[0], commands); n != "" {
			return fmt.Errorf("%w: unknown command %q; did you mean %q?", errUsage, args[0], n)
		}
		return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
}
