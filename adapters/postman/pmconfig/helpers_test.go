package pmconfig_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/errs"

	"github.com/matryer/is"
)

// Fixture values: invented, never real credentials.
const (
	testCookie    = "s%3AFakeSid0123.Sig+/abc=="
	testToken     = "PMAK-fake-0123456789abcdef"
	testSubdomain = "team-1"
	testWorkspace = "ws-0001-fake"
)

// providerModels is the process setting (parsed by cmd/gateway) that lists
// the public models; the tests keep it in their environment and hand its
// items to Parse as the caller does.
const providerModels = "PROVIDER_MODELS"

type env map[string]string

// webEnv is a valid web_session configuration.
func webEnv() env {
	return env{
		pmconfig.EnvStrategy:      "web_session",
		pmconfig.EnvSessionCookie: testCookie,
		pmconfig.EnvSubdomain:     testSubdomain,
		pmconfig.EnvWorkspaceID:   testWorkspace,
		providerModels:            "gpt-5.5,claude-sonnet-4-5",
		pmconfig.EnvModelMap:      "gpt-5.5=GPT_55,claude-sonnet-4-5=CLAUDE_45_SONNET_BEDROCK|claude-sonnet-4.5",
	}
}

// tokenEnv is a valid access_token configuration.
func tokenEnv() env {
	return env{
		pmconfig.EnvStrategy:    "access_token",
		pmconfig.EnvAccessToken: testToken,
		pmconfig.EnvOrigin:      "https://api.example.test",
		pmconfig.EnvWorkspaceID: testWorkspace,
		providerModels:          "gpt-5.5,claude-sonnet-4-5",
		pmconfig.EnvModelMap:    "gpt-5.5=GPT_55,claude-sonnet-4-5=CLAUDE_45_SONNET_BEDROCK|claude-sonnet-4.5",
	}
}

// with returns a copy of e with kv pairs applied; the value "<unset>" deletes.
func (e env) with(kv ...string) env {
	out := maps.Clone(e)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "<unset>" {
			delete(out, kv[i])
			continue
		}
		out[kv[i]] = kv[i+1]
	}
	return out
}

func (e env) get(k string) string { return e[k] }

// models are the items of PROVIDER_MODELS, trimmed; none when it is unset.
func (e env) models() []string {
	if e[providerModels] == "" {
		return nil
	}
	ids := strings.Split(e[providerModels], ",")
	for i := range ids {
		ids[i] = strings.TrimSpace(ids[i])
	}
	return ids
}

func (e env) parse() (pmconfig.Config, error) { return pmconfig.Parse(e.get, e.models()) }

// mustParse parses a configuration that must be accepted.
func mustParse(t *testing.T, e env) pmconfig.Config {
	t.Helper()
	is := is.New(t)
	c, err := e.parse()
	is.NoErr(err) // configuration accepted
	return c
}

// mustRefuse parses a configuration that must be refused with config_invalid
// naming variable, and returns the error.
func mustRefuse(t *testing.T, e env, variable string) error {
	t.Helper()
	is := is.New(t)
	c, err := e.parse()
	is.True(err != nil)                                       // configuration refused
	is.True(errs.Has(err, errs.ConfigInvalid))                // code is config_invalid
	is.Equal(errs.CodeOf(err), errs.ConfigInvalid)            // config_invalid is the outermost code
	is.True(strings.Contains(err.Error(), variable+":"))      // message names the variable
	is.True(strings.Contains(errs.Redact(err), variable+":")) // the redacted message still names it
	is.Equal(c.Strategy, pmconfig.Strategy(""))               // no partial config escapes
	is.True(c.AccessToken == "" && c.SessionCookie == "")     // no secret escapes with the error
	return err
}
