package ports

import (
	"time"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
)

// AnsweredRequest is one answered HTTP request as the inbound adapter reports
// it to the operator's views (the metrics and the control page's recent list,
// adapters/ops). Every field is log-safe: a route template (never the client's
// path), the status, the stable code, a configured model id and the API key
// slot's id (never a key, content or an upstream id).
type AnsweredRequest struct {
	Start      time.Time
	FirstToken time.Time // the first text or tool-call delta; zero when none
	End        time.Time
	RequestID  string
	Route      string
	// Operator marks a request of the operator's own views (the control page,
	// the scrape): counted by the metrics, not listed among the recent
	// requests, which would otherwise be only the page's own polling.
	Operator  bool
	Status    int
	Code      errs.Code // "" on success
	Model     string    // a configured public id, once the request was validated
	Slot      string    // "" before authentication
	Stream    bool
	ToolCalls int
}

// KeySlot is what the operator's views show of an API key slot: never its
// key or digest.
type KeySlot struct {
	ID     string
	Admin  bool
	Limits usage.Limits
}
