package rules

import (
	"strings"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// Settings are the owner's settings every API's translation reads: the
// models served, and the limits and lowering of tool sets and tool results.
// Build them with New; they are read-only after that.
type Settings struct {
	Models             []string // the configured public model ids, in order
	MaxTools           int      // the most tool definitions a request may have
	MaxToolResultBytes int      // the longest tool result a request may carry
	ToolSchema         toolschema.Options
	known              map[string]bool
}

// New returns the settings with their model set built.
func New(s Settings) *Settings {
	s.known = make(map[string]bool, len(s.Models))
	for _, m := range s.Models {
		s.known[m] = true
	}
	return &s
}

// Known says whether id is a configured model.
func (st *Settings) Known(id string) bool { return st.known[id] }

// maxNamedModels bounds how many configured ids a model_not_found names.
const maxNamedModels = 8

// Model is what every API checks first after the body: its model is a
// configured one the caller's slot may use (allowed), refused exactly like
// an unknown one otherwise, so a slot cannot tell the two apart.
func (st *Settings) Model(m wirejson.String, allowed func(string) bool) (string, error) {
	if !m.IsString() || m.V == "" {
		return "", Invalid("model", "is required and must be a string.")
	}
	if !st.known[m.V] || !allowed(m.V) {
		return "", st.ModelNotFound(allowed)
	}
	return m.V, nil
}

// ModelNotFound is the refusal of an unknown model (or one the caller's slot
// may not use): it names the models the caller may use, so that a client
// configured with the wrong id learns the right one. Only the caller's own
// models are named: a slot cannot learn of a model outside its allowlist.
func (st *Settings) ModelNotFound(allowed func(string) bool) error {
	var ids []string
	for _, m := range st.Models {
		if allowed(m) {
			ids = append(ids, m)
		}
	}
	switch {
	case len(ids) == 0:
		return Refuse(errs.ModelNotFound, "model", "No model is available to this key.")
	case len(ids) > maxNamedModels:
		return Refuse(errs.ModelNotFound, "model", "Use one of "+strings.Join(ids[:maxNamedModels], ", ")+
			" (and others: GET /v1/models lists them).")
	}
	return Refuse(errs.ModelNotFound, "model", "Use one of "+strings.Join(ids, ", ")+".")
}
