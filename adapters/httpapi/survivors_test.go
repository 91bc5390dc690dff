package httpapi_test

import (
	"crypto/sha256"
	"net/http"
	"strconv"
	"testing"

	"github.com/matryer/is"
)

// A wrong key whose SHA-256 digest shares its first bytes with the right
// key's is refused: the whole digest is compared, not a prefix.
func TestAWrongKeyWhoseDigestSharesAPrefixIsRefused(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	want := sha256.Sum256([]byte(apiKey))
	var wrong string
	for i := 0; wrong == "" && i < 1<<24; i++ { // 2 shared bytes: ~65,536 tries on average
		k := "pmg-wrong-key-" + strconv.Itoa(i)
		if d := sha256.Sum256([]byte(k)); d[0] == want[0] && d[1] == want[1] {
			wrong = k
		}
	}
	is.True(wrong != "")
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	r := chatRequest(withFields(""))
	r.Header.Set("Authorization", "Bearer "+wrong)
	rec := serve(h, r)
	is.Equal(rec.Code, http.StatusUnauthorized) // refused
	is.Equal(decodeError(t, rec.Body.Bytes()).Code, "invalid_api_key")
	is.Equal(svc.Calls(), 0)
	r = chatRequest(withFields(""))
	r.Header.Set("Authorization", "Bearer "+apiKey[:len(apiKey)-1]) // the right key but its last byte
	is.Equal(serve(h, r).Code, http.StatusUnauthorized)
}
