package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/matryer/is"
)

// The service learns that a request may be sent again from the ingress's
// argument, not from anything riding in the request's context.
func TestTheServiceIsToldOfARequestAClientMaySendAgain(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	body := withFields("")

	is.Equal(serve(h, chatRequest(body)).Code, http.StatusOK)
	is.True(svc.Repeat() == nil) // no retry count, no key: nothing to recognise

	r := chatRequest(body)
	r.Header.Set("X-Stainless-Retry-Count", "2")
	is.Equal(serve(h, r).Code, http.StatusOK)
	rep := svc.Repeat()
	is.True(rep != nil)
	is.Equal(rep.RetryCount, 2)
	is.Equal(rep.IdempotencyKey, "")
	is.Equal(rep.Route, "POST /v1/chat/completions")
	is.Equal(string(rep.Body), body) // the body as sent, for the attempt's hash

	r = chatRequest(body)
	r.Header.Set("Idempotency-Key", "k-1")
	is.Equal(serve(h, r).Code, http.StatusOK)
	rep = svc.Repeat()
	is.True(rep != nil)
	is.Equal(rep.RetryCount, -1) // no count sent
	is.Equal(rep.IdempotencyKey, "k-1")
}
