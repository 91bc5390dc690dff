package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// goodEnv are the lines of testdata/probe/web_session.env: a configuration
// check-config accepts.
var goodEnv = []string{"PROVIDER_API_KEY=sk-pmgate-testdata-4f1c9e2a7b", "PROVIDER_MODELS=pmgate-demo",
	"POSTMAN_TRANSPORT_STRATEGY=web_session", "POSTMAN_SESSION_COOKIE=testdata-cookie-9d8e7f6a5b4c",
	"POSTMAN_WORKSPACE_SUBDOMAIN=pmgate-demo", "POSTMAN_WORKSPACE_ID=demo-workspace", "POSTMAN_MODEL_MAP=pmgate-demo=GPT_55"}

// checkConfig runs check-config on an env file of lines (raw bytes before
// them) with the real environment env.
func checkConfig(t *testing.T, env map[string]string, prefix string, lines ...string) (stdout, stderr string, code int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "my.env")
	if err := os.WriteFile(path, []byte(prefix+strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"check-config", "--env-file", path}, func(k string) string { return env[k] }, &out, &errOut)
	if err == nil {
		return out.String(), errOut.String(), 0
	}
	return out.String(), errOut.String(), exitCode(err)
}

func TestCheckConfigNamesEveryMistakeOfAFirstEnvFileInOneRun(t *testing.T) {
	is := is.New(t)
	_, errOut, code := checkConfig(t, map[string]string{"LOG_FORMAT": "text"}, "",
		"PROVIDR_API_KEY=sk-pmgate-testdata-4f1c9e2a7b", "PROVIDER_MODELS=pmgate-demo",
		"POSTMAN_TRANSPORT_STRATEGY=Web Session", "POSTMAN_SESSION_COOKIE=testdata-cookie-9d8e7f6a5b4c",
		"POSTMAN_WORKSPACE_SUBDOMAIN=https://acme.postman.co/", "POSTMAN_WORKSPACE_ID=https://acme.postman.co/workspace/Space~77/overview",
		"POSTMAN_MODEL_MAP=pmgate-demo=gpt-5.4", "LOG_FORMAT=JSON", "CORRELATION_STORE=Postgres", "METRICS_AUTH=None",
		"TOOL_SCHEMA_POLICY=Strict", "POSTMAN_SCHEMA_COMBINATORS=Widen", "ADMIN_ENABLED=TRUE", "CORRELATION_PRINCIPAL_KEY=c2hvcnQ")
	is.Equal(code, 78)
	for _, want := range []string{
		"  - PROVIDER_API_KEY: required",
		"warning: PROVIDR_API_KEY in the env file is not a setting the gateway reads; did you mean PROVIDER_API_KEY?", // even when refused
		"  - POSTMAN_TRANSPORT_STRATEGY: must be access_token or web_session, exactly as written here: did you mean web_session?",
		"  - POSTMAN_WORKSPACE_SUBDOMAIN: is a URL or a host name, not the subdomain",
		"  - POSTMAN_WORKSPACE_ID: is a URL, not the id",
		"  - POSTMAN_MODEL_MAP: entry 1: the upstream model must match ^[A-Z0-9_]{1,64}$: the upstream enum is upper case",
		"  - CORRELATION_STORE: must be memory or postgres, exactly as written here: did you mean postgres?",
		"  - METRICS_AUTH: must be key or none, exactly as written here: did you mean none?",
		"  - TOOL_SCHEMA_POLICY: must be lower or strict, exactly as written here: did you mean strict?",
		"  - POSTMAN_SCHEMA_COMBINATORS: must be forward or widen, exactly as written here: did you mean widen?",
		"  - ADMIN_ENABLED: must be true or false, exactly as written here: did you mean true?",
		"  - CORRELATION_PRINCIPAL_KEY: too short: decodes to 5 bytes, needs at least 32",
		"warning: LOG_FORMAT is set both in the environment and in the env file, to different values: the environment's is used",
	} {
		is.True(strings.Contains(errOut, want)) // every mistake, in one run
	}
	for _, secret := range []string{"sk-pmgate-testdata", "testdata-cookie", "acme", "Space~77", "c2hvcnQ", "=text"} {
		is.True(!strings.Contains(errOut, secret)) // never a value
	}
}

func TestCheckConfigTellsASetButShortKeyFromAMissingOne(t *testing.T) {
	is := is.New(t)
	for key, want := range map[string]string{
		"short":                   "PROVIDER_API_KEY: too short: 5 characters, needs at least 16",
		strings.Repeat("k", 513):  "PROVIDER_API_KEY: too long: 513 characters, at most 512",
		"sk-pmgate-with a-space1": "PROVIDER_API_KEY: must be 16–512 visible ASCII characters: it holds a space",
	} {
		_, errOut, code := checkConfig(t, map[string]string{"PROVIDER_API_KEY": key}, "", goodEnv[1:]...)
		is.Equal(code, 78)
		is.True(strings.Contains(errOut, want)) // what is wrong with it
		is.True(!strings.Contains(errOut, "required"))
		is.True(len(key) < 6 || !strings.Contains(errOut, key)) // never the value
	}
}

func TestAnEnvFileWithAByteOrderMarkReadsItsFirstLine(t *testing.T) {
	is := is.New(t)
	out, errOut, code := checkConfig(t, nil, "\xef\xbb\xbf", goodEnv...) // PROVIDER_API_KEY is line 1
	is.Equal(code, 0)                                                    // accepted: line 1 was read
	is.True(strings.Contains(out, "configuration ok"))
	is.True(!strings.Contains(out+errOut, "warning")) // and no name looks misspelt
}

func TestLogLevelIsReadInAnyCase(t *testing.T) {
	is := is.New(t)
	for _, v := range []string{"WARN", "Warn", "warn"} {
		out, _, code := checkConfig(t, nil, "", append(goodEnv, "LOG_LEVEL="+v)...)
		is.Equal(code, 0) // as the summary prints it
		is.True(strings.Contains(out, "log_level: WARN"))
	}
	_, errOut, code := checkConfig(t, nil, "", append(goodEnv, "LOG_LEVEL=loud")...)
	is.Equal(code, 78)
	is.True(strings.Contains(errOut, "LOG_LEVEL: must be debug, info, warn or error (in any case)"))
}

func TestAValueTheEnvironmentOverridesIsNamedOnlyWhenTheTwoDiffer(t *testing.T) {
	is := is.New(t)
	env := map[string]string{"POSTMAN_SESSION_COOKIE": "another-cookie-value-123", "POSTMAN_WORKSPACE_ID": "demo-workspace"}
	out, _, code := checkConfig(t, env, "", goodEnv...)
	is.Equal(code, 0)
	is.True(strings.Contains(out, "warning: POSTMAN_SESSION_COOKIE is set both in the environment and in the env file, to different values"))
	is.True(!strings.Contains(out, "POSTMAN_WORKSPACE_ID is set both")) // same value: nothing to say
	is.True(!strings.Contains(out, "another-cookie") && !strings.Contains(out, "testdata-cookie"))
}

func TestTheEnvFileExampleOfConfigurationMDIsAcceptedAsWritten(t *testing.T) {
	is := is.New(t)
	doc, err := os.ReadFile("../../docs/CONFIGURATION.md")
	is.NoErr(err)
	_, rest, ok := strings.Cut(string(doc), "### The env file\n\n```text\n")
	is.True(ok) // the example is where the page says
	block, _, ok := strings.Cut(rest, "```")
	is.True(ok)
	path := filepath.Join(t.TempDir(), "example.env")
	is.NoErr(os.WriteFile(path, []byte(block), 0o600))
	vals, err := readEnvFile(path)
	is.NoErr(err) // the syntax
	env := map[string]string{}
	for _, l := range goodEnv {
		k, v, _ := strings.Cut(l, "=")
		env[k] = v
	}
	for k, v := range vals {
		env[k] = v
	}
	if m := vals["PROVIDER_MODELS"]; m != "" {
		env["POSTMAN_MODEL_MAP"] = m + "=GPT_55"
	}
	_, err = loadConfig(func(k string) string { return env[k] })
	is.NoErr(err) // and every value the example sets is one its setting accepts
}

func TestTheFirstCommandLineMistakesSayWhatToDo(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	err := run(t.Context(), nil, noEnv, &out, &out)
	is.Equal(exitCode(err), 2)
	is.True(strings.Contains(err.Error(), "a command is needed")) // not a bare "usage"
	is.True(strings.Contains(err.Error(), "gateway demo"))

	err = run(t.Context(), []string{"xyz"}, noEnv, &out, &out)
	is.True(!strings.Contains(err.Error(), "did you mean")) // xyz shares nothing with keys

	out.Reset()
	is.NoErr(run(t.Context(), []string{"-v"}, noEnv, &out, &out)) // as --version and version
	is.True(strings.HasPrefix(out.String(), "gateway "))

	err = run(t.Context(), []string{"demo", "--port", "abc"}, noEnv, &out, &out)
	is.Equal(exitCode(err), 2)
	is.True(strings.Contains(err.Error(), "--port must be a decimal integer from 0 to 65535")) // the flag given
	is.True(!strings.Contains(err.Error(), "PROVIDER_PORT"))                                   // not a setting the user never set
}

func TestServeRefusingAConfigurationStillGivesTheDidYouMeanHint(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "my.env")
	is.NoErr(os.WriteFile(path, []byte(strings.Join(append([]string{"PROVIDR_API_KEY=sk-pmgate-testdata-4f1c9e2a7b"}, goodEnv[1:]...), "\n")), 0o600))
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"serve", "--env-file", path}, noEnv, &out, &errOut)
	is.Equal(exitCode(err), 78) // refused: the key is missing
	is.True(strings.Contains(errOut.String(), "gateway: warning: PROVIDR_API_KEY in the env file is not a setting the gateway reads; did you mean PROVIDER_API_KEY?"))
}
