package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// Paths of the orchestrator probes (docs/OPERATE.md).
const (
	pathLivez  = "/livez"
	pathReadyz = "/readyz"
)

// maxNamedModels bounds how many configured ids a model_not_found names.
const maxNamedModels = 8

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
func (s *server) handleModel() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		sl := slotFrom(r.Context())
		if !s.models[id] || !sl.allowsModel(id) {
			s.writeError(w, r, s.modelNotFound(sl.allowsModel))
			return
		}
		s.writeValue(w, r, modelJSON{ID: id, Object: "model", Created: 0, OwnedBy: "pmgate"}, "model")
	})
}

// handleLivez serves GET /livez without authentication: 200 while the process
// serves HTTP. It checks nothing else, so an orchestrator restarts only a
// process that no longer answers.
func (s *server) handleLivez() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
	})
}

// Readiness is what GET /readyz reports: whether the gateway should receive
// traffic, and the named checks behind it (each "ok" or a short fixed reason,
// never a value).
type Readiness struct {
	Ready  bool
	Checks map[string]string
}

// handleReadyz serves GET /readyz without authentication: 200 when
// Config.Readiness says ready, 503 otherwise, with the checks either way and
// upstream_verified as /health reports it.
func (s *server) handleReadyz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rd := Readiness{Ready: true, Checks: map[string]string{}}
		if s.cfg.Readiness != nil {
			rd = s.cfg.Readiness(r.Context())
		}
		verified, _ := s.verification()
		out := map[string]any{"status": "ready", "checks": rd.Checks, "upstream_verified": verified}
		status := http.StatusOK
		if !rd.Ready {
			out["status"], status = "not_ready", http.StatusServiceUnavailable
		}
		w.Header().Set("Cache-Control", "no-store")
		body, err := json.Marshal(out)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, status, body)
	})
}

// startSpan starts a child span of the request's span, or returns nil when
// tracing is off.
func (s *server) startSpan(r *http.Request, name ports.SpanName) ports.Span {
	if s.cfg.Tracer == nil {
		return nil
	}
	_, sp := s.cfg.Tracer.Start(r.Context(), name)
	return sp
}

// endRequestSpan sets the request span's attributes (the route template, the
// method, the status, the stable code, streaming) and ends it.
func endRequestSpan(sp ports.Span, r *http.Request, rw *recorder, ri *reqInfo) {
	status := rw.status
	if status == 0 {
		status = http.StatusOK
	}
	sp.SetString(ports.AttrRoute, routeOf(r))
	sp.SetString(ports.AttrMethod, methodOf(r.Method))
	sp.SetInt(ports.AttrStatus, status)
	sp.SetBool(ports.AttrStream, ri.stream)
	if ri.code != "" {
		sp.Fail(string(ri.code))
	}
	sp.End()
}

// methodOf is the request method from a closed set ("_OTHER" otherwise).
func methodOf(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodOptions, http.MethodPatch:
		return m
	}
	return "_OTHER"
}
