package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/app/specgen"
	"github.com/pmgate/pmgate/domain/errs"
)

// errUsage marks command-line mistakes (exit code 2).
var errUsage = errors.New("usage")

// errStale marks a stale spec/ directory (exit code 3).
var errStale = errors.New("spec is stale")

// Exit codes are stable: 1 runtime failure, 2 usage, 3 stale spec, 78
// configuration refused (EX_CONFIG).
func exitCode(err error) int {
	switch {
	case errs.Has(err, errs.ConfigInvalid):
		return 78
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errStale):
		return 3
	case errors.Is(err, errVerify):
		return 1
	default:
		return 1
	}
}

// describe renders a command error for the terminal: the stable code first for
// catalogued errors (messages are secret-free by construction).
func describe(err error) string {
	c := errs.CodeOf(err)
	if c == errs.InternalError {
		return err.Error()
	}
	if ps := problemsOf(err); len(ps) > 1 { // every configuration problem, one per line
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %d problems:", c, len(ps))
		for _, p := range ps {
			_, msg, _ := strings.Cut(p.Error(), ": ") // drop the catalog's fixed sentence
			b.WriteString("\n  - " + msg)
		}
		return b.String()
	}
	return string(c) + ": " + err.Error()
}

func runDiagram(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("diagram", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", "spec", "directory of the generated files")
	check := fs.Bool("check", false, "exit non-zero when the directory is stale instead of writing")
	if done, err := parseFlags(fs, args, diagramHelp, stdout); done || err != nil {
		return err
	}
	if *check {
		stale, err := specgen.Check(*dir)
		if err != nil {
			return err
		}
		if len(stale) > 0 {
			return fmt.Errorf("%w: %s (run `make spec`)", errStale, strings.Join(stale, ", "))
		}
		fmt.Fprintf(stdout, "%s is up to date\n", *dir)
		return nil
	}
	if err := specgen.Write(*dir); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *dir)
	return nil
}

// parseFlags parses a subcommand's flags; -h/--help prints help to stdout and
// reports done. Flag errors are usage errors that repeat the help's first line.
func parseFlags(fs *flag.FlagSet, args []string, help string, stdout io.Writer) (done bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			return true, nil
		}
		first, _, _ := strings.Cut(help, "\n")
		return true, fmt.Errorf("%w: %v (%s; see --help)", errUsage, err, first)
	}
	return false, nil
}
