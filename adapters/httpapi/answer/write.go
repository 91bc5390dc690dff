package answer

import (
	"encoding/json"
	"net/http"

	"github.com/cockroachdb/errors"
)

// WriteValue answers 200 with v as JSON, as every API's JSON answer (and the
// transport's own) is written; a value that cannot be encoded is an internal
// error (what names it in the log), returned before anything was written,
// never a half-written body.
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
