// Package ops is what the operator of a running gateway sees: the control
// page (page.go; the static page in adminui/ and its JSON endpoints
// /admin/api/overview, live and usage), the Prometheus registry served at
// /metrics (metrics.go), and the Monitor that feeds both (monitor.go): every
// answered request the ingress reports, the gateway's events (the machines'
// rows, the upstream exchanges), each API key slot's budget (budget.go) and the
// upstream's credit report (credits.go).
//
// It is an adapter beside adapters/httpapi, not inside it: httpapi is the
// transport (listener, connection cap, Host and Origin, authentication, error
// writers, routing) and serves this package's handlers on its routes, behind
// its checks and an admin key; the wiring (cmd/gateway) hands them over as
// plain http.Handlers and handlers that return their error, so neither
// package imports the other. Handlers here never write an error: they return
// it, and the router writes it in the API's error shape (a refusal of a query
// parameter names it through PublicParam and PublicDetail, errors.go).
//
// Every label value is from a closed set (route templates, statuses, stable
// codes, rule and row ids, machine states, configured slot ids); the recent
// lists hold request ids and model ids for the control page, behind an admin
// key, never content, keys or upstream ids.
package ops
