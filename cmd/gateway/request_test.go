package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// requestEnv is a valid web_session configuration with kv pairs applied; the
// value "<unset>" deletes.
func requestEnv(kv ...string) func(string) string {
	e := map[string]string{"PROVIDER_API_KEY": testKey, "POSTMAN_TRANSPORT_STRATEGY": "web_session",
		"POSTMAN_SESSION_COOKIE": testCookie, "POSTMAN_WORKSPACE_SUBDOMAIN": testSubdomain, "POSTMAN_WORKSPACE_ID": testWorkspace,
		"PROVIDER_MODELS": "gpt-5.5,claude-sonnet-4-5", "POSTMAN_MODEL_MAP": "gpt-5.5=GPT_55,claude-sonnet-4-5=CLAUDE_45_SONNET_BEDROCK"}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "<unset>" {
			delete(e, kv[i])
			continue
		}
		e[kv[i]] = kv[i+1]
	}
	return func(k string) string { return e[k] }
}

func mustLoad(t *testing.T, getenv func(string) string) config {
	t.Helper()
	c, err := loadConfig(getenv)
	if err != nil {
		t.Fatalf("configuration refused: %v", err)
	}
	return c
}

// requestRefusal is one request setting that must be refused.
type requestRefusal struct {
	name     string
	env      func(string) string
	variable string // the variable the message must name
	rule     string // a fragment of the rule the message must state
}

func runRequestRefusals(t *testing.T, rows []requestRefusal) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			is := is.New(t)
			_, err := loadConfig(r.env)
			is.True(errs.Has(err, errs.ConfigInvalid))                  // refused with config_invalid
			is.Equal(exitCode(err), 78)                                 // check-config's exit code
			is.True(strings.Contains(err.Error(), r.variable+": "))     // naming the variable
			is.True(strings.Contains(errs.Redact(err), r.variable+":")) // also in the redacted form
			is.True(strings.Contains(err.Error(), r.rule))              // and the broken rule
		})
	}
}

func TestProviderModels(t *testing.T) {
	is := is.New(t)
	c := mustLoad(t, requestEnv("PROVIDER_MODELS", " gpt-5.5 , claude-sonnet-4-5 "))
	is.Equal(c.request.models, []string{"gpt-5.5", "claude-sonnet-4-5"}) // ids trimmed, order kept
	is.Equal(len(c.upstream.Models), 2)                                  // each one mapped upstream
	is.Equal(c.summary()["models"], "gpt-5.5,claude-sonnet-4-5")         // shown by check-config

	ids := make([]string, 256)
	entries := make([]string, 256)
	for i := range ids {
		ids[i] = "m" + strconv.Itoa(i)
		entries[i] = ids[i] + "=M"
	}
	id128 := strings.Repeat("m", 128)
	is.Equal(len(mustLoad(t, requestEnv("PROVIDER_MODELS", strings.Join(ids, ","), "POSTMAN_MODEL_MAP", strings.Join(entries, ","))).request.models), 256) // 256 models accepted
	is.Equal(mustLoad(t, requestEnv("PROVIDER_MODELS", id128, "POSTMAN_MODEL_MAP", id128+"=M")).request.models, []string{id128})                           // a maximal id accepted

	ids257 := append(ids, "m256")
	m := func(models, mapping string) func(string) string {
		return requestEnv("PROVIDER_MODELS", models, "POSTMAN_MODEL_MAP", mapping)
	}
	runRequestRefusals(t, []requestRefusal{
		{"models missing", requestEnv("PROVIDER_MODELS", "<unset>"), "PROVIDER_MODELS", "required"},
		{"empty item", m("a,,b", "a=A,b=B"), "PROVIDER_MODELS", "item 2"},
		{"trailing comma", m("a,", "a=A"), "PROVIDER_MODELS", "item 2"},
		{"blank list", m(" ", "a=A"), "PROVIDER_MODELS", "item 1"},
		{"duplicate id", m("a,b, a", "a=A,b=B"), "PROVIDER_MODELS", "repeats"},
		{"129-byte id", m(strings.Repeat("m", 129), "m=M"), "PROVIDER_MODELS", "1-128 bytes"},
		{"id with =", m("a=b", "a=A"), "PROVIDER_MODELS", "without '=' or '|'"},
		{"id with |", m("a|b", "a=A"), "PROVIDER_MODELS", "without '=' or '|'"},
		{"id with space", m("a b", "a=A"), "PROVIDER_MODELS", "visible ASCII"},
		{"non-ASCII id", m("modèle", "a=A"), "PROVIDER_MODELS", "visible ASCII"},
		{"257 ids", m(strings.Join(ids257, ","), "m0=M"), "PROVIDER_MODELS", "at most 256"},
		{"map naming an unlisted model", m("a", "a=A,z=Z"), "POSTMAN_MODEL_MAP", "does not list"},
		{"selected model with two models", requestEnv("PROVIDER_MODELS", "a,b", "POSTMAN_MODEL_MAP", "<unset>",
			"POSTMAN_WEB_SESSION_SELECTED_MODEL", "A"), "POSTMAN_WEB_SESSION_SELECTED_MODEL", "exactly one id"},
	})
	t.Run("a refused list leaves the model map unchecked", func(t *testing.T) {
		is := is.New(t)
		_, err := loadConfig(m("a b", "z=Z"))
		is.True(strings.Contains(err.Error(), "PROVIDER_MODELS: "))
		is.True(!strings.Contains(err.Error(), "POSTMAN_MODEL_MAP")) // only the first refusal of the model settings
	})
}

func TestRequestLimitDefaults(t *testing.T) {
	is := is.New(t)
	c := mustLoad(t, requestEnv())
	l := c.request.limits
	is.Equal(l.RequestTimeout, 120*time.Second) // REQUEST_TIMEOUT_MS default
	is.Equal(l.MaxBodyBytes, 32<<20)            // MAX_BODY_BYTES default: what the agents allow
	is.Equal(l.MaxEventBytes, 1<<20)            // MAX_EVENT_BYTES default
	is.Equal(l.MaxOutputBytes, 4<<20)           // MAX_OUTPUT_BYTES default
	is.Equal(l.MaxTools, 64)                    // MAX_TOOLS default
	is.Equal(l.MaxToolArgumentBytes, 256<<10)   // MAX_TOOL_ARGUMENT_BYTES default
	is.Equal(l.MaxToolResultBytes, 256<<10)     // MAX_TOOL_RESULT_BYTES default
	is.Equal(c.upstream.Limits, l)              // the adapter enforces the same limits
	s := c.summary()
	is.Equal(s["max_body_bytes"], "33554432")   // limits shown by check-config
	is.Equal(s["request_timeout_ms"], "120000") // timeout
	c = mustLoad(t, requestEnv("MAX_BODY_BYTES", "1024"))
	is.Equal(c.request.limits.MaxToolResultBytes, 1024) // the default never exceeds MAX_BODY_BYTES
}

func TestRequestLimitBounds(t *testing.T) {
	type bound struct {
		name   string
		lo, hi int
		read   func(config) int
	}
	bounds := []bound{
		{"REQUEST_TIMEOUT_MS", 1000, 3600000, func(c config) int { return int(c.request.limits.RequestTimeout / time.Millisecond) }},
		{"MAX_BODY_BYTES", 1 << 10, 128 << 20, func(c config) int { return c.request.limits.MaxBodyBytes }},
		{"MAX_EVENT_BYTES", 1 << 10, 16 << 20, func(c config) int { return c.request.limits.MaxEventBytes }},
		{"MAX_OUTPUT_BYTES", 1 << 10, 16 << 20, func(c config) int { return c.request.limits.MaxOutputBytes }},
		{"MAX_TOOLS", 0, 256, func(c config) int { return c.request.limits.MaxTools }},
		{"MAX_TOOL_ARGUMENT_BYTES", 256, 4 << 20, func(c config) int { return c.request.limits.MaxToolArgumentBytes }},
		{"MAX_TOOL_RESULT_BYTES", 256, 32 << 20, func(c config) int { return c.request.limits.MaxToolResultBytes }},
	}
	var rows []requestRefusal
	for _, b := range bounds {
		t.Run(b.name+" edges accepted", func(t *testing.T) {
			is := is.New(t)
			is.Equal(b.read(mustLoad(t, requestEnv(b.name, strconv.Itoa(b.lo)))), b.lo)     // lower bound accepted
			is.Equal(b.read(mustLoad(t, requestEnv(b.name, strconv.Itoa(b.hi)))), b.hi)     // upper bound accepted
			is.Equal(b.read(mustLoad(t, requestEnv(b.name, "0"+strconv.Itoa(b.lo)))), b.lo) // leading zeros are digits
		})
		rule := "decimal integer from " + strconv.Itoa(b.lo)
		if b.lo > 0 {
			rows = append(rows, requestRefusal{b.name + " lower-1", requestEnv(b.name, strconv.Itoa(b.lo-1)), b.name, rule})
		}
		rows = append(rows, requestRefusal{b.name + " upper+1", requestEnv(b.name, strconv.Itoa(b.hi+1)), b.name, rule})
		for _, v := range []string{"-1", "+" + strconv.Itoa(b.lo), " " + strconv.Itoa(b.lo), strconv.Itoa(b.lo) + " ", "1_024", "0x400", "1e3", "１０２４", "1.0", "99999999999999999999999", "abc"} {
			rows = append(rows, requestRefusal{b.name + " malformed " + strconv.Quote(v), requestEnv(b.name, v), b.name, rule})
		}
	}
	rows = append(rows, requestRefusal{"tool result above MAX_BODY_BYTES",
		requestEnv("MAX_BODY_BYTES", "2048", "MAX_TOOL_RESULT_BYTES", "2049"), "MAX_TOOL_RESULT_BYTES", "MAX_BODY_BYTES (2048)"})
	runRequestRefusals(t, rows)
	t.Run("tool result equal to MAX_BODY_BYTES", func(t *testing.T) {
		is := is.New(t)
		c := mustLoad(t, requestEnv("MAX_BODY_BYTES", "2048", "MAX_TOOL_RESULT_BYTES", "2048"))
		is.Equal(c.request.limits.MaxToolResultBytes, 2048) // upper bound follows MAX_BODY_BYTES
	})
}

func TestRequestAndUpstreamRefusalsAreReportedAtOnce(t *testing.T) {
	is := is.New(t)
	_, err := loadConfig(requestEnv("POSTMAN_SESSION_COOKIE", "<unset>", "POSTMAN_WORKSPACE_SUBDOMAIN", "www",
		"POSTMAN_WORKSPACE_ID", "<unset>", "MAX_TOOLS", "999", "MAX_EVENT_BYTES", "x"))
	is.Equal(exitCode(err), 78)
	for _, v := range []string{"POSTMAN_SESSION_COOKIE", "POSTMAN_WORKSPACE_SUBDOMAIN", "POSTMAN_WORKSPACE_ID", "MAX_TOOLS", "MAX_EVENT_BYTES"} {
		is.True(strings.Contains(err.Error(), v+":"))      // every broken variable is named
		is.True(strings.Contains(errs.Redact(err), v+":")) // also in the redacted form
	}
	is.Equal(len(problemsOf(err)), 5) // one problem each
}

func TestToolSchemaSettings(t *testing.T) {
	is := is.New(t)
	c := mustLoad(t, requestEnv())
	is.Equal(c.request.toolSchemaPolicy, toolschema.PolicyLower) // lower by default
	is.True(!c.request.widenCombinators)                         // combinators forwarded by default
	is.Equal(c.summary()["tool_schema_policy"], "lower")         // shown by check-config
	is.Equal(c.summary()["schema_combinators"], "forward")
	c = mustLoad(t, requestEnv("TOOL_SCHEMA_POLICY", "strict"))
	is.Equal(c.request.toolSchemaPolicy, toolschema.PolicyStrict) // strict when asked
	is.Equal(c.summary()["tool_schema_policy"], "strict")
	c = mustLoad(t, requestEnv("POSTMAN_SCHEMA_COMBINATORS", "widen"))
	is.True(c.request.widenCombinators) // widen when asked
	is.Equal(c.summary()["schema_combinators"], "widen")
	runRequestRefusals(t, []requestRefusal{
		{"unknown policy", requestEnv("TOOL_SCHEMA_POLICY", "refuse"), "TOOL_SCHEMA_POLICY", "lower or strict"},
		{"case differs", requestEnv("TOOL_SCHEMA_POLICY", "Lower"), "TOOL_SCHEMA_POLICY", "lower or strict"},
		{"unknown combinators", requestEnv("POSTMAN_SCHEMA_COMBINATORS", "drop"), "POSTMAN_SCHEMA_COMBINATORS", "forward or widen"},
		{"widen with strict", requestEnv("TOOL_SCHEMA_POLICY", "strict", "POSTMAN_SCHEMA_COMBINATORS", "widen"),
			"POSTMAN_SCHEMA_COMBINATORS", "widen needs TOOL_SCHEMA_POLICY=lower"},
	})
}

// TestRequestRefusalsNeverEchoTheValue: a refused request setting is named,
// never repeated, in any rendering of the refusal.
func TestRequestRefusalsNeverEchoTheValue(t *testing.T) {
	const marker = "Jh3Ty8Rb5Nc1"
	paths := map[string]func(string) string{
		"models bad": requestEnv("PROVIDER_MODELS", "a b"+marker),
		"models dup": requestEnv("PROVIDER_MODELS", marker+","+marker),
		"policy":     requestEnv("TOOL_SCHEMA_POLICY", marker),
		"combinator": requestEnv("POSTMAN_SCHEMA_COMBINATORS", marker),
	}
	for _, n := range []string{"REQUEST_TIMEOUT_MS", "MAX_BODY_BYTES", "MAX_EVENT_BYTES", "MAX_OUTPUT_BYTES", "MAX_TOOLS",
		"MAX_TOOL_ARGUMENT_BYTES", "MAX_TOOL_RESULT_BYTES"} {
		paths[n] = requestEnv(n, marker)
	}
	for name, getenv := range paths {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			_, err := loadConfig(getenv)
			is.True(errs.Has(err, errs.ConfigInvalid)) // this path is a refusal
			for _, text := range []string{err.Error(), errs.Redact(err), describe(err)} {
				for i := 0; i+5 <= len(marker); i++ {
					is.True(!strings.Contains(text, marker[i:i+5])) // not even part of the value
				}
			}
		})
	}
}
