package gemapi_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi/gemapi"
	"github.com/pmgate/pmgate/adapters/httpapi/rules"
)

// The package is usable without the transport: the translation needs only
// the settings, and countTokens reads a wrapped request where
// generateContent refuses one.
func TestDecodeAndCountWithoutTheTransport(t *testing.T) {
	is := is.New(t)
	in := rules.New(rules.Settings{Models: []string{"pm-test"}, MaxTools: 8, MaxToolResultBytes: 1 << 10})
	const hi = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`

	gr, err := gemapi.Decode(in, []byte(hi), "pm-test", true)
	is.NoErr(err)
	is.Equal(gr.Chat.Model, "pm-test")
	is.True(gr.Chat.Stream)
	is.Equal(len(gr.Chat.Messages), 1)

	var ref *rules.Refusal
	_, err = gemapi.Decode(in, []byte(`{"generateContentRequest":`+hi+`}`), "pm-test", false)
	is.True(errors.As(err, &ref)) // generateContent does not read the wrapper

	gr, err = gemapi.DecodeCount(in, []byte(`{"generateContentRequest":`+hi+`}`), "pm-test")
	is.NoErr(err)
	out, err := json.Marshal(gemapi.Count(gr))
	is.NoErr(err)
	var c struct{ TotalTokens int64 }
	is.NoErr(json.Unmarshal(out, &c))
	is.True(c.TotalTokens >= 1)

	_, err = gemapi.DecodeCount(in, []byte(`{"contents":[],"generateContentRequest":`+hi+`}`), "pm-test")
	is.True(errors.As(err, &ref)) // one or the other, never both
}
