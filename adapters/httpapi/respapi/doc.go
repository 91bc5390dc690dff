// Package respapi is the Responses API (POST /v1/responses) without its
// transport. The API is served statelessly on the same core as chat
// completions: its request is translated into a chat.Request (Decode: input
// items → messages, Responses tools → chat tools, decode.go and
// tools.go), the same app turn runs, and its deltas are rendered
// as a response object or the Responses event stream (Answer,
// answer.go, over sse/respsse). docs/RESPONSES.md lists every
// field and how it is treated.
//
// It reads the rules every API's translation shares (package rules) and
// answers through what every API's answer shares (package answer); the
// transport (adapters/httpapi, responses_route.go) serves the route and
// hands the answer what it needs of the request (Env).
package respapi
