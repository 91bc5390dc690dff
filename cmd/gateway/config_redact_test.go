package main

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
)

// Every setting refuses in the one wording of domain/setting, and the
// redacted form (what a log keeps) still names the variable and the rule:
// one refusal per kind of setting.
func TestConfigurationRefusalsKeepTheirNameWhenRedacted(t *testing.T) {
	for name, c := range map[string]struct {
		env  map[string]string
		want string
	}{
		"integer":     {map[string]string{"MAX_CONCURRENT_REQUESTS": "lots"}, "MAX_CONCURRENT_REQUESTS: must be a decimal integer from 1 to 4096"},
		"integer big": {map[string]string{"CONVERSATION_MAX_ANCHORS": "99999999999999999999"}, "CONVERSATION_MAX_ANCHORS: must be a decimal integer from 1 to 1000000"},
		"boolean":     {map[string]string{"CORRELATION_ENABLED": "yes-please"}, "CORRELATION_ENABLED: must be true or false"},
		"choice":      {map[string]string{"LOG_LEVEL": "loud"}, "LOG_LEVEL: must be debug, info, warn or error"},
		"address":     {map[string]string{"PROVIDER_HOST": "gw.example"}, "PROVIDER_HOST: must be an IP address or localhost"},
		"host list":   {map[string]string{"ALLOWED_HOSTS": "http://x"}, "ALLOWED_HOSTS: must be a comma list of host names or IP addresses"},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			_, err := loadConfig(func(k string) string { return c.env[k] })
			is.True(errs.Has(err, errs.ConfigInvalid))
			red := errs.Redact(err)
			is.True(strings.Contains(red, c.want)) // the name and the rule survive redaction
			for _, v := range c.env {
				is.True(!strings.Contains(err.Error(), v)) // the value never appears
			}
		})
	}
}

func TestTheDemosIntegerSettingsRefuseInTheSameWording(t *testing.T) {
	is := is.New(t)
	_, err := upstreamLimits(func(k string) string { return map[string]string{"POSTMAN_MAX_TOOLS_UPSTREAM": "-3"}[k] })
	is.True(errs.Has(err, errs.ConfigInvalid))
	is.True(strings.Contains(errs.Redact(err), "POSTMAN_MAX_TOOLS_UPSTREAM: must be a decimal integer from 0 to 256"))
	_, err = upstreamLimits(func(k string) string { return map[string]string{"POSTMAN_MAX_QUERY_CHARS": "1_000"}[k] })
	is.True(strings.Contains(errs.Redact(err), "POSTMAN_MAX_QUERY_CHARS: must be a decimal integer from 1 to 1000000"))
}
