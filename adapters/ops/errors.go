package ops

import (
	"encoding/json"
	"net/http"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/errs"
)

// The control page's handlers return their failures; the router
// (adapters/httpapi) writes them, in the API's error shape, from the catalog
// of package errs. This file is what they return.

// refusal is a refusal of a query parameter: the code, the parameter and a
// short fixed sentence (never a value), which the router's error writer reads
// through PublicParam and PublicDetail.
type refusal struct {
	cause  error // carries the code (errs.New)
	param  string
	detail string
}

func (e *refusal) Error() string        { return e.cause.Error() }
func (e *refusal) Unwrap() error        { return e.cause }
func (e *refusal) PublicParam() string  { return e.param }
func (e *refusal) PublicDetail() string { return e.param + ": " + e.detail }
func invalid(param, detail string) error {
	return &refusal{errs.New(errs.InvalidRequest), param, detail}
}

// writeValue answers 200 with v as JSON; a value that cannot be encoded is
// returned (an internal error), with nothing written.
func writeValue(w http.ResponseWriter, v any, what string) error {
	body, err := json.Marshal(v)
	if err != nil {
		return errors.Wrap(err, what)
	}
	writeJSON(w, body)
	return nil
}

// writeJSON answers 200 with body, as every JSON answer of the ingress.
func writeJSON(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	_, _ = w.Write([]byte{'\n'})
}
