package main

// phaseCause is the cause of a phase's first failed dispatch: its transport
// cause token, or its stable code; "" when none failed.
func phaseCause(p reportPhase) string {
	for _, q := range p.Requests {
		for _, d := range q.Upstream {
			if d.Cause != "" {
				return d.Cause
			}
			if d.ErrorCode != "" && !d.RefusedByBudget {
				return d.ErrorCode
			}
		}
		if q.ErrorCode != "" && len(q.Upstream) == 0 {
			return q.ErrorCode
		}
	}
	return ""
}

// causeHints are docs/CONNECT.md's diagnosis table ("Diagnosing a failure"),
// by cause token or stable code.
var causeHints = map[string]string{
	"tls_unknown_authority":            "check the system trust store, or SSL_CERT_FILE/SSL_CERT_DIR for a proxy's CA",
	"tls_hostname_mismatch":            "check the system trust store, or SSL_CERT_FILE/SSL_CERT_DIR for a proxy's CA",
	"tls_certificate_invalid":          "check the system trust store, or SSL_CERT_FILE/SSL_CERT_DIR for a proxy's CA",
	"tls_handshake_failed":             "check the network path (a proxy that intercepts TLS?) and SSL_CERT_FILE",
	"dns_not_found":                    "check POSTMAN_WORKSPACE_SUBDOMAIN (web_session) or POSTMAN_ORIGIN (access_token)",
	"dns_failed":                       "check the resolver, then POSTMAN_WORKSPACE_SUBDOMAIN or POSTMAN_ORIGIN",
	"connection_refused":               "check the network path and POSTMAN_ORIGIN",
	"connection_reset":                 "check the network path",
	"connection_closed":                "check the network path",
	"timeout":                          "check the network path and REQUEST_TIMEOUT_MS",
	"upstream_auth_failed":             "check the cookie or token: it expired or is not this account's",
	"upstream_web_session_auth_failed": "check POSTMAN_SESSION_COOKIE: copy a fresh postman.sid value",
	"upstream_redirect_rejected":       "check POSTMAN_SESSION_COOKIE: an expired session is redirected to sign-in",
	"upstream_firewall_blocked":        "not the credential: the service's firewall blocked the request's content (HTML- or script-like text, file paths); keep the cookie or token",
	"upstream_account_blocked":         "the service reports the Postman account itself as blocked: take it up with Postman; no setting changes it",
	"upstream_request_rejected":        "check POSTMAN_MODEL_MAP and POSTMAN_WORKSPACE_ID (the log's hint names which)",
}

// causeNote is what the first failing verdict line adds: the cause of the
// first phase that failed and the hint of docs/CONNECT.md for it.
func causeNote(r probeReport) string {
	for _, p := range []reportPhase{r.Text, r.Tools} {
		if p.Cause == "" {
			continue
		}
		note := " (cause: " + p.Cause
		if h := causeHints[p.Cause]; h != "" {
			note += "; " + h
		}
		return note + "; docs/CONNECT.md#4-run-the-probe)"
	}
	return ""
}
