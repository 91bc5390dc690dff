package system_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/system"
)

func TestPublicToolCallIDsAre192RandomBits(t *testing.T) {
	is := is.New(t)
	seen := map[string]bool{}
	for range 1000 {
		id, err := system.IDs{}.PublicToolCallID()
		is.NoErr(err)
		rest, ok := strings.CutPrefix(id, "call_pmn_")
		is.True(ok) // the public prefix
		raw, err := base64.RawURLEncoding.DecodeString(rest)
		is.NoErr(err)          // base64url
		is.Equal(len(raw), 24) // of 24 bytes
		is.True(!seen[id])     // never repeated
		seen[id] = true
	}
}
