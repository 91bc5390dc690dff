package httpapi_test

import (
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// summarized is a fake turn with the summary the service returns with it.
type summarized struct {
	*fakeTurn
	sum app.Summary
}

func (t summarized) Summary() app.Summary { return t.sum }

// ledgerRow serves one request through a server whose ledger is u and
// returns the access line and the one ledger row of today.
func ledgerRow(t *testing.T, svc app.ChatService) (map[string]any, usage.Row) {
	t.Helper()
	return ledgerRowOf(t, svc, chatRequest(withFields("")))
}

// ledgerRowOf is ledgerRow of the request req.
func ledgerRowOf(t *testing.T, svc app.ChatService, req *http.Request) (map[string]any, usage.Row) {
	t.Helper()
	is := is.New(t)
	clock := porttest.NewClock(time.Now())
	u := app.NewUsage(memstore.NewUsage(), clock, slog.New(slog.DiscardHandler), 90)
	h, logs := newServer(t, svc, func(c *httpapi.Config) { c.Usage = u })
	serve(h, req)
	var line map[string]any
	for _, l := range logs.Lines(t) {
		if l["msg"] == "request" {
			line = l
		}
	}
	is.True(line != nil)
	day := usage.Day(time.Now())
	rows, err := u.Report(t.Context(), day, day)
	is.NoErr(err)
	is.Equal(len(rows), 1)
	return line, rows[0]
}

// What the service returns with a turn is what the access line and the
// ledger say of the request: the notes as the line's groups, the
// dispatches, characters and reported tokens as the ledger's counts.
func TestTheTurnsSummaryIsWhatTheAccessLineAndTheLedgerSay(t *testing.T) {
	is := is.New(t)
	ten, five := int64(10), int64(5)
	turn := summarized{fakeTurn: script(app.Delta{Text: "ok"}, app.Delta{Finish: app.FinishStop}), sum: app.Summary{
		Dispatches: 1, QueryChars: 2, OutputChars: 2, Usage: &chat.Usage{PromptTokens: &ten, CompletionTokens: &five},
		Notes: []slog.Attr{
			slog.Group("conversation", slog.String("decision", "fresh")),
			slog.Group("upstream", slog.Int("status", 200)),
		}}}
	line, row := ledgerRow(t, returning(turn, nil))
	is.Equal(line["conversation"], map[string]any{"decision": "fresh"})
	is.Equal(line["upstream"], map[string]any{"status": float64(200)})
	is.Equal(row.Requests, int64(1))
	is.Equal(row.Dispatches, int64(1))
	is.Equal(row.QueryChars, int64(2))
	is.Equal(row.OutputChars, int64(2))
	is.Equal(row.ReportedPromptTokens, int64(10))
	is.Equal(row.ReportedCompletionTokens, int64(5))
}

// A refusal after the upstream accepted the dispatch still counts it: the
// service returns the request's summary with the refusal, and the access
// line carries its conversation decision.
func TestARefusalsSummaryIsWhatTheAccessLineAndTheLedgerSay(t *testing.T) {
	is := is.New(t)
	policy := correlation.Policy{PendingTTL: time.Minute, InflightTTL: time.Minute, TerminalTTL: time.Minute}
	anchorPolicy := conversation.Policy{TTL: time.Hour, ClaimTTL: time.Minute, TerminalTTL: time.Hour}
	up := &porttest.Upstream{Respond: func(ports.UpstreamRequest) porttest.Script {
		return porttest.Script{Err: errs.New(errs.UpstreamServerError)}
	}}
	gw := app.New(app.Config{WorkspaceID: "ws", Correlation: true, Policy: policy}, up,
		memstore.New(correlation.Limits{MaxGroups: 10, MaxCalls: 40, ResponseCacheBytes: 1 << 20}, policy),
		porttest.NewClock(porttest.T0), &porttest.IDs{}, slog.New(slog.DiscardHandler)).
		WithAnchors(memstore.NewAnchors(conversation.Limits{MaxAnchors: 10}, anchorPolicy), anchorPolicy)
	line, row := ledgerRow(t, gw)
	is.Equal(line["code"], "upstream_server_error")
	conv, ok := line["conversation"].(map[string]any)
	is.True(ok) // the conversation decision, noted before the refusal
	is.Equal(conv["decision"], "fresh")
	is.Equal(row.Dispatches, int64(1)) // the upstream saw it
	is.Equal(row.QueryChars, int64(len("hi")))
	is.Equal(len(up.Requests()), 1)
}

// A stream that fails after its headers answers the failure inside the
// stream, and the failure still comes back to the route's adapter: on every
// API the access line and the ledger name its code, not a success.
func TestAStreamsFailureAfterItsHeadersIsWhatTheAccessLineAndTheLedgerSay(t *testing.T) {
	for name, req := range map[string]func() *http.Request{
		"chat completions": func() *http.Request { return chatRequest(streamRequest(false)) },
		"responses": func() *http.Request {
			return respRequest(`{"model":"` + model + `","input":"hi","stream":true}`)
		},
		"messages": func() *http.Request { return msgRequest(msgBody(userHi, `,"stream":true`)) },
		"gemini":   func() *http.Request { return gemStreamReq(gemHi) },
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			svc := returning(script(app.Delta{Text: "partial"}, errs.New(errs.UpstreamIncompleteStream)), nil)
			line, row := ledgerRowOf(t, svc, req())
			is.Equal(line["status"], float64(http.StatusOK)) // the headers were sent
			is.Equal(line["code"], string(errs.UpstreamIncompleteStream))
			is.Equal(line["stream"], true)
			is.Equal(row.Outcome, string(errs.UpstreamIncompleteStream))
			is.Equal(row.Requests, int64(1))
		})
	}
}
