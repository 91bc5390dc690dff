package postman_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

func TestAnUpstream503IsOverloadedWithItsRetryAfter(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newFakeTLS(t, statusHandler(503, "text/html", `<h1>busy</h1>`, "Retry-After", "7"))
	_, _, err := open(t, f.client(t, "access_token"), userText("hi"))
	is.True(errs.Has(err, errs.UpstreamOverloaded)) // 503, retryable: a fresh turn
	is.Equal(errs.MustEntry(errs.CodeOf(err)).Status, 503)
	is.True(errs.MustEntry(errs.CodeOf(err)).Retryable)
	d, ok := postman.RetryAfter(err)
	is.True(ok)
	is.Equal(d, 7*time.Second) // the upstream's own Retry-After

	f = newFakeTLS(t, statusHandler(503, "text/html", `<h1>busy</h1>`))
	_, _, err = open(t, f.client(t, "access_token"), userText("hi"))
	is.True(errs.Has(err, errs.UpstreamOverloaded))
	_, ok = postman.RetryAfter(err)
	is.True(!ok) // none sent: the gateway's default applies
}

func TestAnUpstream503OnAContinuationIsNotRetryable(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newFakeTLS(t, statusHandler(503, "text/html", `<h1>busy</h1>`, "Retry-After", "7"))
	req := userText("hi")
	req.Chat.Tools = weatherTools
	req.Continuation = continuation("", 1)
	_, _, err := open(t, f.client(t, "access_token"), req)
	is.True(errs.Has(err, errs.UpstreamOverloadedContinuation)) // the results may have been processed
	is.Equal(errs.MustEntry(errs.CodeOf(err)).Status, 503)
	is.True(!errs.MustEntry(errs.CodeOf(err)).Retryable)
	is.True(!errors.Is(err, ports.ErrNotAccepted)) // the group becomes UNCERTAIN, never PENDING again
	is.True(!errors.Is(err, ports.ErrNotSent))
}
