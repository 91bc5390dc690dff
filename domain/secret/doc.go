// Package secret removes secrets from text before it is logged or returned to
// a caller: the exact configured values (and their URL-, JSON- and Go-quoted
// spellings) and every recognizable credential pattern (Bearer tokens,
// postman.sid, X-Access-Token, Cookie and Authorization values, URL userinfo).
//
// It is pure string logic, so any layer may use it: the Postman adapter
// redacts its error texts with it and the process logger (cmd/gateway) passes
// every log record through it.
package secret
