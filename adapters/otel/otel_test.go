package otel_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/otel"
	"github.com/pmgate/pmgate/domain/errs"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestTheEndpointFollowsTheStandardVariables: off unless an endpoint is set;
// the traces endpoint wins over the base one, which gets /v1/traces;
// OTEL_SDK_DISABLED turns it off; anything but an http(s) URL without
// credentials is refused, naming the variable.
func TestTheEndpointFollowsTheStandardVariables(t *testing.T) {
	is := is.New(t)
	for _, c := range []struct {
		vars map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{otel.EnvEndpoint: "http://127.0.0.1:4318"}, "http://127.0.0.1:4318/v1/traces"},
		{map[string]string{otel.EnvEndpoint: "http://127.0.0.1:4318/"}, "http://127.0.0.1:4318/v1/traces"},
		{map[string]string{otel.EnvEndpoint: "http://a:1", otel.EnvTracesEndpoint: "https://c.example/x"}, "https://c.example/x"},
		{map[string]string{otel.EnvEndpoint: "http://a:1", otel.EnvSDKDisabled: "true"}, ""},
	} {
		got, err := otel.Endpoint(env(c.vars))
		is.NoErr(err)
		is.Equal(got, c.want)
	}
	for _, bad := range []string{"127.0.0.1:4318", "grpc://c:4317", "http://user:secret@c:4318", "http://"} {
		_, err := otel.Endpoint(env(map[string]string{otel.EnvTracesEndpoint: bad}))
		is.True(errs.Has(err, errs.ConfigInvalid))
		is.True(!strings.Contains(err.Error(), "secret")) // the refusal names the variable, not the value
	}
}
