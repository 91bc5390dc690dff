package secret_test

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/pmgate/pmgate/domain/secret"

	"github.com/matryer/is"
)

// Fixture values: invented, never real credentials.
const (
	testCookie    = "s%3AFakeSid0123.Sig+/abc=="
	testToken     = "PMAK-fake-0123456789abcdef"
	downstreamKey = "sk-downstream-FAKE-0123456789"
)

func TestRedactorString(t *testing.T) {
	r := secret.NewRedactor(testCookie, testToken, "", downstreamKey)
	for _, tc := range []struct{ name, in, want string }{
		{"cookie value alone", "upstream said " + testCookie + " is bad", "upstream said [REDACTED] is bad"},
		{"token alone", "token=" + testToken + ".", "token=[REDACTED]."},
		{"downstream key", "key " + downstreamKey, "key [REDACTED]"},
		{"Bearer", "Bearer abc", "Bearer [REDACTED]"},
		{"bearer lowercase", "auth bearer abc.def-ghi done", "auth bearer [REDACTED] done"},
		{"postman.sid", "postman.sid=xyz", "postman.sid=[REDACTED]"},
		{"postman.sid in a cookie list", "a=1; postman.sid=xyz; b=2", "a=1; postman.sid=[REDACTED]; b=2"},
		{"postman.sid upper case", "POSTMAN.SID=xyz", "POSTMAN.SID=[REDACTED]"},
		{"postman.sid quoted", `postman.sid="xyz"`, `postman.sid="[REDACTED]"`},
		{"X-Access-Token header", "X-Access-Token: t", "X-Access-Token: [REDACTED]"},
		{"x-access-token lower case", "x-access-token:t2,next", "x-access-token:[REDACTED],next"},
		{"x-access-token JSON", `{"x-access-token":"t3"}`, `{"x-access-token":"[REDACTED]"}`},
		{"Cookie header", "Cookie: other=1; x=2", "Cookie: [REDACTED]; x=2"},
		{"Set-Cookie header", "Set-Cookie: postman.sid=abc; Path=/", "Set-Cookie: [REDACTED]; Path=/"},
		{"COOKIE upper case", "COOKIE: zzz", "COOKIE: [REDACTED]"},
		{"Authorization Bearer", "Authorization: Bearer abc", "Authorization: [REDACTED]"},
		{"Authorization Basic", "authorization: Basic dXNlcjpwYXNz", "authorization: [REDACTED]"},
		{"Authorization bare", "Authorization: rawtoken", "Authorization: [REDACTED]"},
		{"Authorization JSON", `{"Authorization":"Bearer abc"}`, `{"Authorization":"[REDACTED]"}`},
		{"URL userinfo", "dial https://user:pass@host.test/x failed", "dial https://[REDACTED]@host.test/x failed"},
		{"URL user only", "postgres://admin@db:5432/x", "postgres://[REDACTED]@db:5432/x"},
		{"URL without userinfo untouched", "https://host.test/a@b", "https://host.test/a@b"},
		{"plain text untouched", "nothing secret here: 42", "nothing secret here: 42"},
		{"cookie URL-escaped", url.QueryEscape(testCookie), "[REDACTED]"},
		{"cookie Go-quoted", strconv.Quote(testCookie), `"[REDACTED]"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(r.String(tc.in), tc.want) // redacted as documented
		})
	}
	t.Run("JSON-escaped secret", func(t *testing.T) {
		is := is.New(t)
		value := "a<b>&c"
		j, _ := json.Marshal("x" + value + "y")
		is.Equal(secret.NewRedactor(value).String(string(j)), `"x[REDACTED]y"`) // the \u003c spelling is removed
	})
	t.Run("nil and empty Redactors still apply the patterns", func(t *testing.T) {
		is := is.New(t)
		var nilR *secret.Redactor
		is.Equal(nilR.String("Bearer abc"), "Bearer [REDACTED]")                         // nil Redactor is usable
		is.Equal(secret.NewRedactor().String("postman.sid=q"), "postman.sid=[REDACTED]") // no secrets, patterns only
	})
}

// TestFailureRedaction: upstream text carrying fake Cookie, Bearer and session
// values comes out without any of them.
func TestFailureRedaction(t *testing.T) {
	is := is.New(t)
	r := secret.NewRedactor(testCookie)
	body := `HTTP 401 {"error":"bad session","echo":{"Cookie":"postman.sid=FAKESID123","Authorization":"Bearer FAKEBEARER456","x-access-token":"FAKETOKEN789"},"sid":"` + testCookie + `","url":"https://u:FAKEPASS@x.test/"}`
	out := r.String(body)
	for _, leaked := range []string{"FAKESID123", "FAKEBEARER456", "FAKETOKEN789", testCookie, "FAKEPASS"} {
		is.True(!strings.Contains(out, leaked)) // no fake credential survives
	}
	is.True(strings.Contains(out, "bad session")) // non-secret text is kept
}
