package main

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/setting"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// The request settings: what one request may be and carry. The ingress
// enforces them on what clients send; the Postman adapter gets the limits it
// enforces too (on the body it builds and the stream it reads) from here.
const (
	envModels           = "PROVIDER_MODELS"
	envRequestTimeoutMS = "REQUEST_TIMEOUT_MS"
	envMaxBodyBytes     = "MAX_BODY_BYTES"
	envMaxEventBytes    = "MAX_EVENT_BYTES"
	envMaxOutputBytes   = "MAX_OUTPUT_BYTES"
	envMaxTools         = "MAX_TOOLS"
	envMaxToolArgBytes  = "MAX_TOOL_ARGUMENT_BYTES"
	envMaxToolResBytes  = "MAX_TOOL_RESULT_BYTES"
	envToolSchemaPolicy = "TOOL_SCHEMA_POLICY"
	// envSchemaCombinators is an ingress setting despite its prefix: lowering
	// tool schemas happens at the ingress, and its rule needs TOOL_SCHEMA_POLICY.
	envSchemaCombinators = "POSTMAN_SCHEMA_COMBINATORS"
)

// Bounds of PROVIDER_MODELS.
const (
	maxModels       = 256
	maxModelIDBytes = 128
)

const (
	kib = 1 << 10
	mib = 1 << 20
)

// requestConfig is the validated request settings.
type requestConfig struct {
	models []string // PROVIDER_MODELS, in order
	limits pmconfig.Limits
	// toolSchemaPolicy is how the ingress treats tool schema keywords outside
	// the bounded vocabulary (docs/TOOL-SCHEMAS.md).
	toolSchemaPolicy toolschema.Policy
	// widenCombinators is POSTMAN_SCHEMA_COMBINATORS=widen: for an upstream
	// that refuses anyOf/oneOf/allOf, lowering removes them by widening
	// (docs/TOOL-SCHEMAS.md); "forward" (the default) sends them unchanged.
	widenCombinators bool
}

// parseModels reads PROVIDER_MODELS: a comma list of at most 256 distinct
// public ids, each trimmed and 1-128 bytes of visible ASCII without '=' or '|'
// (so that every id can be written in POSTMAN_MODEL_MAP). Empty items are
// refused. Only the first refusal is reported.
func parseModels(getenv func(string) string) ([]string, error) {
	raw := getenv(envModels)
	if raw == "" {
		return nil, setting.Refuse(envModels, "required; a comma list of public model ids")
	}
	items := strings.Split(raw, ",")
	if len(items) > maxModels {
		return nil, setting.Refuse(envModels, "must list at most 256 ids")
	}
	var ids []string
	for i, it := range items {
		id := strings.TrimSpace(it)
		if len(id) < 1 || len(id) > maxModelIDBytes || !visibleASCII(id) || strings.ContainsAny(id, "=|") {
			return nil, setting.Refuse(envModels, "item %d must be 1-128 bytes of visible ASCII without '=' or '|'", setting.Int(i+1))
		}
		if slices.Contains(ids, id) {
			return nil, setting.Refuse(envModels, "item %d repeats an earlier id", setting.Int(i+1))
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// parseLimits reads the request limits; it returns every refusal (joined).
// MAX_TOOL_RESULT_BYTES defaults to min(256 KiB, MAX_BODY_BYTES) and may not
// exceed MAX_BODY_BYTES.
func parseLimits(getenv func(string) string) (pmconfig.Limits, error) {
	var l pmconfig.Limits
	var timeoutMS int
	var problems []error
	for _, b := range []struct {
		name     setting.Name
		dst      *int
		def      int
		min, max int
	}{
		{envRequestTimeoutMS, &timeoutMS, 120000, 1000, 3600000},
		{envMaxBodyBytes, &l.MaxBodyBytes, 32 * mib, 1 * kib, 128 * mib}, // what Claude Code itself sends at most
		{envMaxEventBytes, &l.MaxEventBytes, 1 * mib, 1 * kib, 16 * mib},
		{envMaxOutputBytes, &l.MaxOutputBytes, 4 * mib, 1 * kib, 16 * mib},
		{envMaxTools, &l.MaxTools, 64, 0, 256},
		{envMaxToolArgBytes, &l.MaxToolArgumentBytes, 256 * kib, 256, 4 * mib},
	} {
		v, err := setting.BoundedInt(getenv, b.name, b.def, b.min, b.max)
		if err != nil {
			problems = append(problems, err)
			v = b.def // so that the checks below still run
		}
		*b.dst = v
	}
	l.RequestTimeout = time.Duration(timeoutMS) * time.Millisecond

	l.MaxToolResultBytes = min(256*kib, l.MaxBodyBytes)
	if raw := getenv(envMaxToolResBytes); raw != "" {
		v, ok := setting.Decimal(raw)
		if !ok || v < 256 || v > l.MaxBodyBytes {
			problems = append(problems, setting.Refuse(envMaxToolResBytes, "must be a decimal integer from 256 to MAX_BODY_BYTES (%d)", setting.Int(l.MaxBodyBytes)))
		}
		l.MaxToolResultBytes = v
	}
	return l, setting.Join(problems)
}

// parseToolSchema reads TOOL_SCHEMA_POLICY (lower, the default, or strict) and
// POSTMAN_SCHEMA_COMBINATORS (forward, the default, or widen). Widening changes
// which arguments are valid, so it needs the lower policy, and it is the
// owner's call from their own evidence.
func parseToolSchema(getenv func(string) string) (toolschema.Policy, bool, error) {
	policy := toolschema.DefaultPolicy
	var policyErr error
	if raw := getenv(envToolSchemaPolicy); raw != "" {
		p, ok := toolschema.ParsePolicy(raw)
		if !ok {
			_, policyErr = setting.Enum(getenv, envToolSchemaPolicy, "", "lower", "strict")
		}
		policy = p
	}
	comb, err := setting.Enum(getenv, envSchemaCombinators, "forward", "forward", "widen")
	if err == nil && comb == "widen" && policyErr == nil && policy != toolschema.DefaultPolicy {
		err = setting.Refuse(envSchemaCombinators, "widen needs TOOL_SCHEMA_POLICY=lower")
	}
	if err := setting.Join(slices.DeleteFunc([]error{policyErr, err}, func(e error) bool { return e == nil })); err != nil {
		return "", false, err
	}
	return policy, comb == "widen", nil
}

// summary adds the request settings to a check-config summary.
func (r requestConfig) summary(m map[string]string) {
	m["models"] = strings.Join(r.models, ",")
	m["request_timeout_ms"] = strconv.FormatInt(r.limits.RequestTimeout.Milliseconds(), 10)
	m["max_body_bytes"] = strconv.Itoa(r.limits.MaxBodyBytes)
	m["max_event_bytes"] = strconv.Itoa(r.limits.MaxEventBytes)
	m["max_output_bytes"] = strconv.Itoa(r.limits.MaxOutputBytes)
	m["max_tools"] = strconv.Itoa(r.limits.MaxTools)
	m["max_tool_argument_bytes"] = strconv.Itoa(r.limits.MaxToolArgumentBytes)
	m["max_tool_result_bytes"] = strconv.Itoa(r.limits.MaxToolResultBytes)
	m["tool_schema_policy"] = string(r.toolSchemaPolicy)
	m["schema_combinators"] = map[bool]string{false: "forward", true: "widen"}[r.widenCombinators]
}
