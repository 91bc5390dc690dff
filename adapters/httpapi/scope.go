package httpapi

import (
	"net/http"

	"github.com/pmgate/pmgate/domain/errs"
)

// checkAdmin refuses (403 insufficient_scope) a request whose authenticated
// slot is not an admin key (checkKey runs first): the control page's data
// and the metrics show every key's traffic, so an inference key (the default
// scope of a key file's slots) never reads them.
func checkAdmin(r *http.Request) error {
	if sl := slotFrom(r.Context()); sl == nil || !sl.admin {
		return errs.New(errs.InsufficientScope)
	}
	return nil
}
