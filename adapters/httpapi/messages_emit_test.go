package httpapi_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/internal/anthropicsse"
)

// A turn the Messages grammar cannot show (here a tool_use whose input is
// cut off by text) is not written as an ungrammatical stream: the emitter
// refuses it and the stream fails with one error event, an internal error.
func TestMessagesStreamTheGrammarRefusesEndsInOneErrorEvent(t *testing.T) {
	is := is.New(t)
	h, _ := newServer(t, returning(script(toolDelta(0, "toolu_pmn_a", "Read", `{"path":`), app.Delta{Text: "oops"},
		app.Delta{Finish: app.FinishToolCalls}), nil))
	rec := serve(h, msgRequest(msgBody(userHi, `,"stream":true`+msgTools)))
	is.Equal(rec.Code, 200)
	res, err := anthropicsse.CheckFailed(rec.Body.Bytes())
	is.NoErr(err) // a failed stream by the grammar: no message_stop
	is.Equal(res.Error.Type, "api_error")
	is.True(strings.Contains(string(res.Raw), `"code":"internal_error"`))
}
