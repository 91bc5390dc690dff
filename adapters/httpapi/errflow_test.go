package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports/porttest"
)

// A turn's failure is returned to the route's adapter, which writes it after
// the turn's context ended; the ledger, which reads the code first, and the
// answer still say the code the failure had when it happened: a refusal of
// the body, a service refusal, and a bare error after the request timeout
// (upstream_timeout only by the turn's context).
func TestAReturnedFailureIsAnsweredAndCountedUnderItsCode(t *testing.T) {
	var turn *fakeTurn
	turn = newTurn(func(context.Context) (app.Delta, error) {
		<-turn.closed // a turn that ignores its context
		return app.Delta{}, io.ErrUnexpectedEOF
	})
	for _, c := range []struct {
		name   string
		svc    app.ChatService
		body   string
		status int
		code   string
	}{
		{"body refused", fiveDeltas(), `{"model":"nope","messages":` + basicMsg + `}`, http.StatusNotFound, "model_not_found"},
		{"service refusal", returning(nil, errs.New(errs.UpstreamRateLimited)), withFields(""), http.StatusTooManyRequests, "upstream_rate_limited"},
		{"timeout", returning(turn, nil), withFields(""), http.StatusGatewayTimeout, "upstream_timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			u := app.NewUsage(memstore.NewUsage(), porttest.NewClock(time.Now()), slog.New(slog.DiscardHandler), 90)
			h, _ := newServer(t, c.svc, func(cfg *httpapi.Config) { cfg.Usage, cfg.RequestTimeout = u, 50*time.Millisecond })
			rec := post(h, c.body)
			is.Equal(rec.Code, c.status)
			is.Equal(decodeError(t, rec.Body.Bytes()).Code, c.code)
			day := usage.Day(time.Now())
			rows, err := u.Report(t.Context(), day, day)
			is.NoErr(err)
			is.Equal(len(rows), 1)
			is.Equal(rows[0].Outcome, c.code)
		})
	}
}
