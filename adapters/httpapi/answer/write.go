package answer

import (
	"encoding/json"
	"net/http"

	"github.com/cockroachdb/errors"
)

// WriteValue answers 200 with v as JSON; a value that cannot be encoded is an
// internal error (what names it in the log), returned before anything was
// written, never a half-written body.
func WriteValue(w http.ResponseWriter, v any, what string) error {
	body, err := json.Marshal(v)
	if err != nil {
		return errors.Wrap(err, what)
	}
	WriteJSON(w, http.StatusOK, body)
	return nil
}

// WriteJSON answers status with body, a JSON value, and a newline.
func WriteJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
	_, _ = w.Write([]byte{'\n'})
}
