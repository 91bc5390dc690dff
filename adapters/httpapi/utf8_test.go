package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/domain/errs"
)

func TestInvalidTextIsRefusedWithTheFieldPath(t *testing.T) {
	t.Parallel()
	h, _ := newServer(t, &fakeService{})
	cases := map[string]struct{ body, param string }{
		"raw invalid byte in content": {withMessages(`[{"role":"user","content":"caf` + "\xe9" + `"}]`), "messages[0].content"},
		"truncated sequence":          {withMessages(`[{"role":"user","content":"` + "\xe2\x82" + `"}]`), "messages[0].content"},
		"lone high surrogate":         {withMessages(`[{"role":"user","content":"a\ud800b"}]`), "messages[0].content"},
		"high then non-low escape":    {withMessages(`[{"role":"user","content":"\ud83d\u0041"}]`), "messages[0].content"},
		"lone low surrogate in part":  {withMessages(`[{"role":"user","content":[{"type":"text","text":"\udc00"}]}]`), "messages[0].content[0].text"},
		"in a tool description":       {withTools(`[{"type":"function","function":{"name":"f","description":"\udfff"}}]`), "tools[0].function.description"},
		"in an ignored field":         {withFields(`,"user":"` + "\xff" + `"`), "user"},
		"in a key":                    {withFields(`,"metadata":{"` + "\xff" + `":"x"}`), "metadata"},
		"in the model":                {`{"model":"\ud800","messages":` + basicMsg + `}`, "model"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			svc := &fakeService{}
			h, _ := newServer(t, svc)
			rec := post(h, c.body)
			is.Equal(rec.Code, 400)
			e := decodeError(t, rec.Body.Bytes())
			is.Equal(e.Code, "invalid_request")
			is.Equal(e.param(), c.param) // the path of the string
			is.Equal(svc.Calls(), 0)     // never reaches the service
		})
	}
	is := is.New(t)
	rec := post(h, withMessages(`[{"role":"user","content":"\ud83d\ude00 caf\u00e9 `+"caf\xc3\xa9 \xf0\x9f\x98\x80"+`"}]`))
	is.Equal(rec.Code, 200) // pairs, escapes and real UTF-8 pass
}

// Any valid Go string, however it is escaped by encoding/json, passes; the
// text the service receives is the text that was sent.
func TestEveryValidStringPassesUnchanged(t *testing.T) {
	t.Parallel()
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringN(1, 64, -1).Draw(t, "s")
		if !utf8.ValidString(s) {
			t.Skip()
		}
		content, _ := json.Marshal(s)
		rec := post(h, withMessages(`[{"role":"user","content":`+string(content)+`}]`))
		if rec.Code != 200 {
			t.Fatalf("valid text refused: %d %s", rec.Code, rec.Body.String())
		}
		if _, req := svc.Last(); *req.Messages[0].Content != s {
			t.Fatalf("text changed")
		}
	})
}

func TestA503CarriesTheRetryAfterOfItsCause(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	h, _ := newServer(t, returning(nil, errs.Wrap(rateLimited{after: 12 * time.Second}, errs.CorrelationStoreUnavailable)))
	rec := post(h, withFields(`,"stream":true`))
	is.Equal(rec.Code, http.StatusServiceUnavailable) // failed before the stream's headers
	is.Equal(rec.Header().Get("retry-after"), "12")   // with its cause's own delay
}

// FuzzCheckText: on any valid JSON object the text check never panics, and it
// accepts exactly the bodies whose strings survive a decode/encode round trip
// unchanged (encoding/json replaces invalid text with U+FFFD).
func FuzzCheckText(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `{"a":["\ud83d\ude00",{"k\u00e9":1}]}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"":[[],{}],"b":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var top map[string]any
		if json.Unmarshal(body, &top) != nil || top == nil {
			return
		}
		err := httpapi.CheckText(body)
		if utf8.Valid(body) && !bytes.Contains(body, []byte(`\u`)) && !bytes.Contains(body, []byte(`\U`)) && err != nil {
			t.Fatalf("valid UTF-8 without escapes refused: %v", err)
		}
		if !utf8.Valid(body) {
			// Invalid bytes can only sit inside strings of a valid JSON text.
			if err == nil {
				t.Fatalf("invalid UTF-8 accepted")
			}
		}
	})
}
