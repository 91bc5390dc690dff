package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode"

	"github.com/matryer/is"
)

// containerEnvFile reads an env file as `podman run --env-file` and `docker
// run --env-file` do: leading white space dropped, blank lines and lines
// starting with # skipped, and every other line split at its first `=` with
// the value taken literally (quotes, `export ` and a trailing # comment are
// all part of the name or the value). A line with no `=` takes the value
// from the host's environment: recorded here as a problem, because the
// example must not depend on the shell it runs in.
func containerEnvFile(t *testing.T, path string) (map[string]string, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vals := map[string]string{}
	var problems []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimLeftFunc(sc.Text(), unicode.IsSpace)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("line %d:", n)+" no = (a container runtime takes the host's value)")
		case strings.ContainsAny(k, " \t"):
			problems = append(problems, fmt.Sprintf("line %d:", n)+" white space in the name (docker refuses it)")
		default:
			vals[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vals, problems
}

// The example file is what CONNECT.md has the owner copy to my.env, and
// INSTALL.md passes my.env to `podman run --env-file`: the container runtime
// must read every line as pmgate does (no quotes, no export, no trailing
// comment), and the file must not set PROVIDER_HOST, which would win over the
// image's 0.0.0.0 and leave the published port reaching nothing.
func TestTheExampleEnvFileReadsTheSameInAContainerRuntime(t *testing.T) {
	is := is.New(t)
	const example = "../../examples/gateway.env.example"
	ours, err := readEnvFile(example)
	is.NoErr(err)
	theirs, problems := containerEnvFile(t, example)
	is.Equal(problems, nil)
	is.Equal(theirs, ours) // podman and docker see the values pmgate sees
	_, pinned := ours["PROVIDER_HOST"]
	is.True(!pinned) // PROVIDER_HOST is left to the default (loopback) or the image (0.0.0.0)
}
