package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/app"
)

func respRequest(body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+apiKey)
	r.Header.Set("Content-Type", "application/json")
	return r
}

// The Responses API follows the same usage rule as chat and Messages: the
// upstream's counts, else an estimate marked as one, else (estimates off)
// null.
func TestResponsesUsageIsEstimatedAndMarkedOrNullWhenOff(t *testing.T) {
	body := `{"model":"` + model + `","input":"hello"}`
	turn := func() app.Turn { return script(app.Delta{Text: "abcdef"}, app.Delta{Finish: app.FinishStop}) }
	t.Run("json", func(t *testing.T) {
		is := is.New(t)
		h, _ := newServer(t, returning(turn(), nil))
		rec := serve(h, respRequest(body))
		is.Equal(rec.Code, 200)
		var obj struct{ Usage map[string]int64 }
		is.NoErr(json.Unmarshal(rec.Body.Bytes(), &obj))
		is.Equal(obj.Usage["output_tokens"], int64(2)) // ceil(6/3)
		is.True(obj.Usage["input_tokens"] > 0)
		is.Equal(obj.Usage["total_tokens"], obj.Usage["input_tokens"]+2)
		is.Equal(rec.Header().Get("x-pmgate-usage"), "estimated")
	})
	t.Run("stream", func(t *testing.T) {
		is := is.New(t)
		h, _ := newServer(t, returning(turn(), nil))
		rec := serve(h, respRequest(strings.Replace(body, `"input"`, `"stream":true,"input"`, 1)))
		is.Equal(rec.Header().Get("x-pmgate-usage"), "estimated")
		is.True(strings.Contains(rec.Body.String(), `"usage":{"input_tokens":`))
	})
	t.Run("off", func(t *testing.T) {
		is := is.New(t)
		h, _ := newServer(t, returning(turn(), nil), func(c *httpapi.Config) { c.UsageEstimatesOff = true })
		rec := serve(h, respRequest(body))
		var raw map[string]json.RawMessage
		is.NoErr(json.Unmarshal(rec.Body.Bytes(), &raw))
		is.Equal(string(raw["usage"]), "null")
		is.Equal(rec.Header().Get("x-pmgate-usage"), "unreported")
	})
}

func TestTheAccessLogSaysHowUsageWasObtained(t *testing.T) {
	is := is.New(t)
	h, logs := newServer(t, returning(script(app.Delta{Text: "x"}, app.Delta{Finish: app.FinishStop}), nil))
	is.Equal(serve(h, msgRequest(msgBody(userHi, ""))).Code, 200)
	var access map[string]any
	for _, l := range logs.Lines(t) {
		if l["msg"] == "request" {
			access = l
		}
	}
	is.Equal(access["usage"], "estimated") // never presented as measured, in the log either
}
