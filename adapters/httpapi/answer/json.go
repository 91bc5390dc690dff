package answer

import (
	"encoding/json"
	"net/http"

	"github.com/cockroachdb/errors"
)

// WriteValue answers 200 with v as JSON (and a newline); a value that
// cannot be encoded is an internal error (what names it in the log),
// returned before anything was written, never a half-written body. Every
// API's JSON answer is written by it, the transport's included.
func WriteValue(w http.ResponseWriter, v any, what string) error {
	body, err := json.Marshal(v)
	if err != nil {
		return errors.Wrap(err, what)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	_, _ = w.Write([]byte{'\n'})
	return nil
}
