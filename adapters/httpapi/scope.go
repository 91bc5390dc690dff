package httpapi

import (
	"net/http"

	"github.com/pmgate/pmgate/domain/errs"
)

// requireAdmin answers 403 insufficient_scope unless the authenticated slot
// is an admin key (requireKey runs first): the control page's data and the
// metrics show every key's traffic, so an inference key (the default scope of
// a key file's slots) never reads them.
func (s *server) requireAdmin(next http.Handler) http.Handler {
	return s.requireKey(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sl := slotFrom(r.Context()); sl == nil || !sl.admin {
			s.writeError(w, r, errs.New(errs.InsufficientScope))
			return
		}
		next.ServeHTTP(w, r)
	}))
}
