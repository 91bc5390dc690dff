package main

import (
	"bufio"
	"bytes"
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

// A my.env line written with quotes or a trailing comment reaches a
// container's environment literally (podman and docker --env-file): the
// gateway names each such setting, never its value, even when the quotes make
// the configuration refused; a plain value gets no such warning.
func TestAQuotedValueFromAContainerEnvFileIsNamed(t *testing.T) {
	is := is.New(t)
	env := map[string]string{}
	for _, l := range goodEnv {
		k, v, _ := strings.Cut(l, "=")
		env[k] = v
	}
	check := func() (string, int) {
		var out, errOut bytes.Buffer
		err := run(t.Context(), []string{"check-config"}, func(k string) string { return env[k] }, &out, &errOut)
		if err == nil {
			return out.String() + errOut.String(), 0
		}
		return out.String() + errOut.String(), exitCode(err)
	}
	out, code := check()
	if code != 0 {
		t.Fatalf("the plain configuration is refused:\n%s", out)
	}
	is.True(!strings.Contains(out, "in the environment holds quotes")) // plain values: nothing to say

	env["POSTMAN_SESSION_COOKIE"] = `"testdata-cookie-9d8e7f6a5b4c"`
	env["PROVIDER_MODELS"] = "pmgate-demo   # the demo's"
	env["POSTMAN_WORKSPACE_ID"] = "'demo-workspace'"
	out, code = check()
	is.Equal(code, 78) // the quoted workspace id is refused...
	for _, n := range []string{"POSTMAN_SESSION_COOKIE", "PROVIDER_MODELS", "POSTMAN_WORKSPACE_ID"} {
		is.True(strings.Contains(out, "warning: "+n+" in the environment holds quotes or a trailing # comment")) // ...and each named
	}
	is.True(!strings.Contains(out, "testdata-cookie")) // never the value
}
