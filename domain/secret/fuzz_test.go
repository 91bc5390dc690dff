package secret_test

import (
	"strings"
	"testing"

	"github.com/pmgate/pmgate/domain/secret"
)

// FuzzRedact: a configured secret never survives redaction, wherever it sits
// in the text. Secrets that contain '[' or ']' or are part of the marker itself
// are skipped: the marker "[REDACTED]" can rebuild them from its own bytes.
func FuzzRedact(f *testing.F) {
	f.Add(testCookie, "before ", " after")
	f.Add(testToken, "x-access-token: ", "")
	f.Add("abc", "Bearer ", "abc")
	f.Add("aa", "a", "a")
	f.Add("a<b>&c\"d", `{"v":"`, `"}`)
	f.Add("postman.sid", "", "=q")
	f.Add("x y", "https://", "@h/")
	f.Fuzz(func(t *testing.T, value, prefix, suffix string) {
		if value == "" || strings.ContainsAny(value, "[]") || strings.Contains(secret.Redacted, value) {
			t.Skip()
		}
		r := secret.NewRedactor(value)
		for _, in := range []string{prefix + value + suffix, prefix + suffix, value + prefix + value + suffix + value} {
			if out := r.String(in); strings.Contains(out, value) {
				t.Fatalf("secret survived: in=%q out=%q", in, out)
			}
		}
	})
}
