package httpapi

// This file is GET /v1/models and GET /v1/models/{id}, and the
// model_not_found refusal every API shares.

import (
	"net/http"
	"strings"

	"github.com/pmgate/pmgate/domain/errs"
)

// modelNotFound is the refusal of an unknown model (or one the caller's slot
// may not use): it names the models the caller may use, so that a client
// configured with the wrong id learns the right one. Only the caller's own
// models are named: a slot cannot learn of a model outside its allowlist.
func (s *server) modelNotFound(allowed func(string) bool) error {
	var ids []string
	for _, m := range s.cfg.Models {
		if allowed(m) {
			ids = append(ids, m)
		}
	}
	switch {
	case len(ids) == 0:
		return refuse(errs.ModelNotFound, "model", "No model is available to this key.")
	case len(ids) > maxNamedModels:
		return refuse(errs.ModelNotFound, "model", "Use one of "+strings.Join(ids[:maxNamedModels], ", ")+
			" (and others: GET /v1/models lists them).")
	}
	return refuse(errs.ModelNotFound, "model", "Use one of "+strings.Join(ids, ", ")+".")
}

// handleModel serves GET /v1/models/{id}: the model object when the id is
// configured and the caller's slot may use it, model_not_found otherwise (the
// SDKs' models.retrieve).
func (s *server) handleModel(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	sl := slotFrom(r.Context())
	if !s.models[id] || !sl.allowsModel(id) {
		return s.modelNotFound(sl.allowsModel)
	}
	return writeValue(w, modelJSON{ID: id, Object: "model", Created: 0, OwnedBy: "pmgate"}, "model")
}

// modelList is the OpenAI list of models.
type modelList struct {
	Object string      `json:"object"`
	Data   []modelJSON `json:"data"`
}

type modelJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// handleModels serves GET /v1/models: the configured public ids the caller's
// slot may use, in configuration order.
func (s *server) handleModels(w http.ResponseWriter, r *http.Request) error {
	sl := slotFrom(r.Context())
	list := modelList{Object: "list", Data: make([]modelJSON, 0, len(s.cfg.Models))}
	for _, m := range s.cfg.Models {
		if sl.allowsModel(m) {
			list.Data = append(list.Data, modelJSON{ID: m, Object: "model", Created: 0, OwnedBy: "pmgate"})
		}
	}
	return writeValue(w, list, "models")
}
