// Package httpapi is pmgate's OpenAI-compatible ingress (docs/API.md):
// POST /v1/chat/completions (JSON and SSE), POST /v1/responses
// (docs/RESPONSES.md), the Anthropic Messages API POST /v1/messages and
// /v1/messages/count_tokens (docs/MESSAGES.md; msgapi, messages_route.go, with its own
// error shape), the Gemini API under /v1beta (docs/GEMINI.md), GET /v1/models
// and GET /health,
// in front of an app.ChatService, and the routes of the operator's views: the
// control page under /admin and Prometheus /metrics, whose handlers and
// monitor are adapters/ops's, handed in by the wiring (operator.go; see
// docs/OPERATE.md). NewServer returns the whole surface as one http.Handler;
// routes.go lists it as data, one table per API (paths, methods, who may
// call them, the error shape), from which the mux, the 405s and the 404s are
// registered.
//
// This package is the transport. Each API's translation of a request into
// the domain's chat.Request and its answer are a package of their own
// (chatapi, respapi, msgapi, gemapi), over the rules every translation
// shares (package rules) and what every answer shares (package answer); a
// route's handler here is thin: serveTurn with the API's Decode and Answer.
//
// # Errors
//
// Handlers return their failure instead of writing it (HandlerFunc); the
// route's adapter (serve, handle) writes it once, in the route's API shape,
// unless the answer already began (a stream reports its failure inside the
// stream and returns it, and the adapter only notes it). What a turn did comes
// back from serveTurn as its facts, which the turn route's adapter (turn)
// writes on the request's record and counts in the ledger. Every failure, in every shape, is written by one function
// (writeShaped; writeOpenAIError is it for the connection layer's rewrite of
// net/http's own answers) from the catalog of package errs: status, OpenAI type, message and retryability come from
// errs.Lookup(errs.CodeOf(err)). The body always has the four keys
// {"error":{"message","type","param","code"}}. A refusal of the request names
// the offending parameter path in param (for example
// "messages[2].content[0].type" or
// "tools[1].function.parameters.properties.x.pattern") and appends a short
// fixed sentence to the catalog message; client text never appears, and a
// client-chosen key appears in a path only when it is a plain identifier
// ([A-Za-z0-9_-]{1,64}), else as "?". Errors without a code are 500
// internal_error with the generic message. Deterministic failures carry
// x-should-retry: false; retryable 429/503 (and key_quota_exhausted, which knows
// when its window frees), on every API, carry retry-after in seconds (1 by
// default, or the value of an error in the chain with a method
// RetryAfter() time.Duration, rounded up and capped at 3600). Unknown paths
// answer 404 and wrong methods 405 (with Allow), both with code
// invalid_request: the catalog has no routing codes, so these two statuses,
// and those of net/http's own connection-level answers (400, 417, 431, 501,
// rewritten by the Listener), are the only ones not taken from it.
//
// # Request ids and logs
//
// Every response carries x-request-id. The gateway adopts the client's
// x-request-id when it is 1–128 visible ASCII characters (0x21–0x7E), so that
// callers can correlate; otherwise it generates 16 random bytes in hex.
// RequestID(ctx) returns it and WithRequestID adds it to every log record of
// a request context. One access-log line per request carries only request_id,
// method, route (the known path, or "unmatched"), status, code, duration_ms,
// stream, bytes and principal_slot (and usage: reported, estimated or
// unreported, when a turn showed usage), then the groups the service's
// summary noted (app.Summary's Notes: conversation, upstream): never a body, message
// content, a key or an upstream id. It is the request's one INFO line. A panic in a handler is logged (redacted value and stack,
// no body) and answered 500 internal_error when nothing was written yet.
//
// # Authentication
//
// /v1/* needs "Authorization: Bearer <key>" or, without an Authorization
// header, "x-api-key: <key>". The SHA-256 digest of the presented key is
// compared with crypto/subtle against the digest of every configured slot,
// always all of them; the matched slot gives app.Principal{Slot,
// ID: SlotPrincipal(PrincipalKey, slot id, key digest)}. The slots come from a
// Keyring, which the wiring may replace at any time (a reload of the key
// file); a slot's model allowlist filters /v1/models and refuses other models
// exactly like unknown ones, and its own concurrency limit applies on top of
// the global one (docs/KEYS.md). /health needs no key.
//
// # Request policy (POST /v1/chat/completions)
//
// The body is read under MaxBodyBytes (a larger Content-Length is refused
// before reading; http.MaxBytesReader stops a chunked body at the limit),
// with Content-Type application/json or application/*+json (parameters
// allowed). Fields are matched exactly (case-sensitive); null means absent.
// Unknown top-level and message fields are ignored, so that proxies and newer
// SDKs keep working. The known OpenAI fields are honoured, accepted and
// ignored, or refused by the rules of rules/policy.go; docs/API.md lists
// them for users (one table, kept there rather than repeated here).
//
// An ignored field is still type-checked (invalid_request when malformed).
// invalid_request means malformed; unsupported_parameter means well-formed
// but impossible to honour.
//
// Messages: a non-empty array; roles system, developer, user, assistant,
// tool (function → unsupported_parameter). content is a string, null/absent
// (assistant with tool_calls, tool) or an array of text parts joined with no
// separator; image_url, input_audio, file and refusal parts are
// unsupported_parameter. Assistant tool_calls are
// [{id, type:"function", function:{name, arguments (a string)}}]; refusal,
// name, annotations and a null audio are accepted and dropped, and "" content
// next to tool calls becomes null. Tool messages need tool_call_id; a result
// over MaxToolResultBytes is 413 request_too_large. name is kept on system,
// developer and user messages. A conversation ending in role=tool is a
// continuation, passed on like any request; the service refuses it when
// correlation is off (app.ErrContinuationNeedsCorrelation), and the refusal
// names the conversation field ("messages", or "input" on /v1/responses) as
// its param.
//
// Tools: {type:"function", function:{name, description?, parameters?,
// strict?}}, names ^[A-Za-z0-9_-]{1,64}$ and unique. parameters is an object
// schema checked by domain/toolschema under Config.ToolSchemaPolicy: lowered
// to the upstream's bounded vocabulary (lower, the default) or refused outside
// it (strict); a keyword that cannot be lowered is unsupported_parameter with
// its full path (docs/TOOL-SCHEMAS.md lists every keyword). The caller's
// schema bytes reach chat.Tool.Parameters exactly as sent (the tools hash
// binds them); the lowered schema is chat.Tool.UpstreamParameters.
//
// # Responses
//
// JSON: every delta is read until io.EOF, then one chat.completion is
// written; an error before that is an error response with no partial
// content. "usage" carries only the counts the upstream reported and is null
// when it reported none.
//
// SSE: headers wait for the first delta (so an early failure is a plain JSON
// error); one id and created per stream; a role delta first; content and
// tool-call deltas (index always, id/type/name on a call's first delta only);
// finish_reason only on the last choice chunk; with include_usage every chunk
// has "usage":null and one {"choices":[],"usage":…} chunk (an estimate, or null
// with UsageEstimatesOff, when none was reported) precedes data: [DONE]. A failure after the headers is
// one data: {"error":{…}} event and the end of the response.
//
// Each of the four stream grammars is written through its emitter (package
// sse and its chatsse, respsse, msgsse and gemsse), which refuses an event its grammar
// does not allow; answer.Drive (package answer) reads the turn for all of them and
// turns such a refusal into the grammar's failure event.
//
// The request context (client disconnect) and RequestTimeout both end in
// Turn.Close, called at once even while Next is blocked; Close may therefore
// run concurrently with Next. At most MaxConcurrent chat requests run at
// once; the next one gets 429 concurrency_limit_exceeded with retry-after: 1.
// The slot is taken after the body was read (under BodyReadTimeout, else 408
// request_timeout) and validated, so slow or invalid bodies never hold one.
//
// # Hosts and connections
//
// Before any route, a Host or browser Origin that is not served is refused
// (421 host_not_allowed, 403 origin_not_allowed; see hostPolicy), and a path
// not in clean form is 404. NewListener caps open connections and rewrites
// net/http's own plain-text answers into the OpenAI shape; NewHTTPServer sets
// the timeouts. See docs/HARDENING.md.
package httpapi
