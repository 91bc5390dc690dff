package httpapi

// This file is GET /v1/models and GET /v1/models/{id}, and the
// model_not_found refusal every API shares.

import (
	"net/http"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
)

// handleModel serves GET /v1/models/{id}: the model object when the id is
// configured and the caller's slot may use it, model_not_found otherwise (the
// SDKs' models.retrieve).
func (s *server) handleModel(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	sl := slotFrom(r.Context())
	if !s.in.Known(id) || !sl.allowsModel(id) {
		return s.in.ModelNotFound(sl.allowsModel)
	}
	return answer.WriteValue(w, modelJSON{ID: id, Object: "model", Created: 0, OwnedBy: "pmgate"}, "model")
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
	return answer.WriteValue(w, list, "models")
}
