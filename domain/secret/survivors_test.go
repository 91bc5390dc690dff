package secret_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/secret"
)

// Two secrets where one is a prefix of the other: neither leaks, not even the
// tail of the longer one, whatever order they were configured in.
func TestSecretsThatArePrefixesOfEachOtherNeverLeakATail(t *testing.T) {
	short, long := "tok-ABCDEF123456", "tok-ABCDEF123456-TAILsecret"
	for _, order := range [][]string{{short, long}, {long, short}} {
		is := is.New(t)
		r := secret.NewRedactor(order...)
		for _, text := range []string{"a " + long + " b", "a " + short + " b", long + long, short + long + short} {
			out := r.String(text)
			is.True(!strings.Contains(out, "ABCDEF")) // no part of either
			is.True(!strings.Contains(out, "TAIL"))   // not even the longer one's tail
		}
	}
}
