package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/ports"
)

// Paths of the orchestrator probes (docs/OPERATE.md).
const (
	pathLivez  = "/livez"
	pathReadyz = "/readyz"
)

// handleLivez serves GET /livez without authentication: 200 while the process
// serves HTTP. It checks nothing else, so an orchestrator restarts only a
// process that no longer answers.
func handleLivez(w http.ResponseWriter, _ *http.Request) error {
	answer.WriteJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
	return nil
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
func (s *server) handleReadyz(w http.ResponseWriter, r *http.Request) error {
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
		return err
	}
	answer.WriteJSON(w, status, body)
	return nil
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

// handleHealth serves GET /health without authentication. upstream_verified
// comes only from Config.Verification (a probe report that passes verify);
// the gateway never probes the upstream on its own.
func (s *server) handleHealth(w http.ResponseWriter, r *http.Request) error {
	out := map[string]any{}
	if s.cfg.Health != nil {
		for k, v := range s.cfg.Health(r.Context()) {
			out[k] = v
		}
	}
	out["status"] = "ok"
	out["strategy"] = s.cfg.Strategy
	verified, fields := s.verification()
	for k, v := range fields {
		if strings.HasPrefix(k, "upstream_verified_") || k == "upstream_report_digest" {
			out[k] = v
		}
	}
	out["upstream_verified"] = verified
	return answer.WriteValue(w, out, "health fields")
}

// verification is the upstream-verified state of Config.Verification
// (false, with no fields, when it is nil).
func (s *server) verification() (bool, map[string]any) {
	if s.cfg.Verification == nil {
		return false, nil
	}
	return s.cfg.Verification()
}
