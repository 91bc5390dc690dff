// Package postman is the Postman Agent Mode upstream adapter: it implements
// ports.Upstream for both transport strategies, access_token and web_session
// (docs/UPSTREAM.md; the continuation forms also in docs/CORRELATION.md).
//
// A Client sends one request per call, never retries one that may have reached
// the upstream, and returns a Stream whose Next yields decoded chat events and
// ends in io.EOF only when the completion-outcome machine (domain/completion)
// proved the stream complete: access_token uses the legacy rule (an exact
// [DONE] followed by a clean EOF), web_session the configured terminal rule
// (usage_after_output_v1 by default, or explicit_only).
//
// # Request bodies
//
// BuildBody is pure. A fresh turn is a USER_QUERY (docs/UPSTREAM.md):
// input {chatType, query, conversationId null, product workspace_v12, useCase
// null, agent null, startedFrom CHAT_INPUT, toolResponse ""}, platform WEB,
// clientTools {native:[]} plus thirdParty {"pmgate":{tools:[{name, description,
// parameters}]}} when tools are advertised, clientKBTerms {native:[]},
// mandatoryContext.workspaceId from the configuration, selectedContext [],
// backgroundContext [] and devModeOptions {selectedModel (the model mapping's
// upstream enum), isParallelToolCallingSupported (tools && Config.Parallel:
// POSTMAN_PARALLEL_TOOL_CALLS when set, else false on web_session and the
// client's parallel_tool_calls on access_token), autoRun (tools && tool_choice
// != none), supportsAskUser, supportsActionRecommendations and
// useThinkingModeIfAvailable false}. No seedingMessages, no priming turns.
//
// Before anything is sent: more tools than POSTMAN_MAX_TOOLS_UPSTREAM (default
// 20) is unsupported_parameter (param "tools"), and a query longer than
// POSTMAN_MAX_QUERY_CHARS UTF-16 code units (default 10000, counted like
// JavaScript's String.length) is upstream_query_too_long (param "messages");
// both name the numbers only, never content (PublicParam/PublicDetail).
//
// A continuation (TOOL_RESPONSE) keeps that envelope and replaces input with
// {chatType TOOL_RESPONSE, query "", conversationId <stored>, product, useCase
// null, agent null, startedFrom CHAT_INPUT} plus a form that follows the
// request's parallel flag (docs/UPSTREAM.md):
//
//   - flag on (both strategies): toolCallGroupId (when the upstream sent one) +
//     toolResponse "" + toolResponses[{toolCallId, content, toolResponseSummary
//     "Result for <name>", toolResponseStatus SUCCESS}]; on access_token
//     several results without a group id are refused (docs/CORRELATION.md);
//   - flag off, access_token: the singular flat toolCallGroupId (when known),
//     toolCallId, toolResponse, toolResponseSummary for one result, else the
//     grouped form above;
//   - flag off, web_session: the flat form toolCallGroupId (omitted when the
//     upstream sent none), toolCallId (the first call), toolResponse (the
//     content of one result, or the JSON string
//     [{"toolCallId","status":"SUCCESS","content"}] for several),
//     toolResponseSummary ("Result for <name>" for one, "N tool calls
//     completed" for several) and toolResponseStatus SUCCESS.
//
// # Transcript format (input.query)
//
// A request that is exactly one user message is sent as that message's text.
// Anything else is a sequence of blocks, in message order, separated by one
// blank line ("\n\n"); each block is a header line, "\n", and the body:
//
//	[System]                  the system message text
//	[Developer]               the developer message text
//	[User]                    the user message text
//	[Assistant]               the assistant text (omitted when it only has tool calls)
//	[Assistant Tool Calls]    the JSON array [{"id","name","arguments"}] of its tool calls
//	[Tool Result id=<id>]     the tool message text, id = its tool_call_id
//
// A message name is written into the header ("[User name=alice]"). A nil content
// is an empty body. Texts are written verbatim: the format is a readable
// transcript for the model, not a container format, and it is not escaped.
//
// # Tool names
//
// Tools are advertised under the client's own names (toolNameMap): they are already [A-Za-z0-9_-]{1,64} and sit in one group, so the
// mapping is collision-free and exactly reversible. A decoded tool call must
// name an advertised tool, exactly or as "pmgate.<name>"; anything else is
// upstream_unverified_event_shape.
//
// # Status and event classification
//
//	3xx                                   upstream_redirect_rejected (never followed)
//	401, 403                              upstream_web_session_auth_failed / upstream_auth_failed
//	429                                   upstream_rate_limited, RetryAfter: seconds or HTTP date, 1 s–1 h; without it the
//	                                      window's reset when the answer said none remain, else 30 s
//	window spent (X-RateLimit-Remaining   upstream_rate_limited before sending a USER_QUERY (never a
//	0 on the last answer, reset ahead)    TOOL_RESPONSE), RetryAfter up to the reset, ErrNotSent (ratelimit.go)
//	402                                   upstream_quota_exhausted
//	other non-2xx with a quota phrase     upstream_quota_exhausted (≤ 4 KiB of the body is read, then discarded)
//	other non-2xx with a rejection text   upstream_request_rejected
//	400, 409, 413, 422                    upstream_request_rejected
//	5xx                                   upstream_server_error
//	any other non-2xx                     upstream_status_error
//	2xx, not text/event-stream            upstream_content_type_error
//	no connection (refused, DNS, TLS)     upstream_unavailable, marked ports.ErrNotSent
//	lost after the request was written    upstream_connection_lost (not ErrNotSent)
//
//	[DONE] (exact payload)                completion evidence; data after it: upstream_data_after_done
//	done ({"eventType":"done"})           web_session after output: completion evidence like [DONE];
//	                                      before output: upstream_empty_stream; access_token: metadata
//	conversation                          metadata; must name its conversation (see below)
//	textChunk                             EventText (data.textContent)
//	thinkingChunk, thinkingComplete, ping, info, planningChunk, progressUpdate,
//	todoChunk, streamingFormat, notification, usageUpdate   ignored (metadata)
//	usage                                 EventUsage from explicit token fields only; usageState
//	                                      EXCEEDED/UNAVAILABLE: upstream_quota_exhausted, BLOCKED:
//	                                      upstream_account_blocked; the plan fields (limit, usage, overage,
//	                                      spillage, userType, warningThresholds, usageCycle, allowOverage,
//	                                      isTeamPooled) are kept as the Client's credit report (Credits)
//	failure, error, {"result":"failure"}  upstream_quota_exhausted (quota phrase), upstream_request_rejected
//	                                      (INPUT_VALIDATION_ERROR, known texts), else upstream_failure
//	toolCallChunk                         EventToolCall deltas; upstream_unsupported_event without tools
//	loopApprovalChunk                     the gate: before any output and followed by a clean end (web_session:
//	                                      EOF or a done event then EOF; access_token: [DONE] then EOF),
//	                                      upstream_loop_approval with the event's message, reasons, counters
//	                                      and thresholds (bounded, credentials masked; GateError); mixed with
//	                                      output, upstream_unsupported_event
//	other eventType, non-object JSON      upstream_unverified_event_shape
//	invalid JSON                          upstream_malformed_event
//	model label not configured            upstream_model_mismatch
//
// # Decisions where the documents are silent
//
//   - HTTP/1.1 only, no environment proxy, no transparent compression: no HTTP/2
//     retry path can replay a written request, and the headers sent are exactly
//     pmconfig's Headers() (plus Host and Content-Length). The transport's own
//     retry of a request on a reused idle connection happens only when not one
//     byte was written, which is safe.
//   - "Written" is httptrace WroteRequest having fired, with or without an error:
//     a request that may be partly on the wire is never reported as not sent.
//   - A data line with an empty payload, invalid UTF-8 inside a JSON string, a
//     nesting depth over 64 or trailing bytes after the JSON value is malformed.
//     A valid JSON value that is not an object, a known member with the wrong
//     type, or a repeated member the decoder reads is an unverified shape.
//   - An event name is a plain identifier: an eventType written with escapes is
//     an unverified shape. eventType wins over type; both present must agree. Without either, only
//     {"result":"failure"} is accepted (as a failure); a non-failure result is an
//     unverified shape (TT's "result as text" is not adopted).
//   - usageState other than AVAILABLE, EXCEEDED, UNAVAILABLE or BLOCKED fails
//     closed (unverified shape): an unknown credit state is never taken as
//     credit. Token counts must be non-negative integers. A usage event without
//     token fields still counts for the terminal rule but emits no EventUsage.
//   - The plan fields are read one by one and never fail a stream: an absent,
//     repeated or odd one (a number that is not a non-negative integer, a word
//     that is not an identifier, a time that is not RFC 3339) is left out of
//     the report. The report is the service's statement at that moment, labelled
//     with the strategy and its time; nothing derives a balance or a cost per
//     request from it (docs/USAGE.md).
//   - An empty textChunk is metadata: it is not output and emits nothing.
//   - Conversation and tool ids must be 1–256 bytes of visible ASCII. The
//     conversation id is read on any event from conversationId,
//     conversation_id, metadata.conversationId of the event and of its data,
//     data.conversation.id, data.conversation.conversationId and, on a
//     conversation event, data.id. A new id is emitted once as
//     EventConversation; a second, different id (also one different from the
//     stored id a continuation was sent to) is an unverified shape.
//   - Tool calls are resolved by explicit index, then id, then (without both)
//     position in the chunk. A chunk that contradicts a call (another id,
//     another name, another group id) is an unverified shape; the name is
//     emitted once, on the first delta, mapped to the client's name. A call
//     whose first chunk has no name is held (its fragments accumulate) until a
//     later chunk of the same call names it; its first delta then carries the
//     name and every fragment so far. A call still unnamed when the stream ends
//     ([DONE], a done event or EOF) is an unverified shape; a call whose
//     arguments are empty when it ends gets "{}" as one last fragment. Object
//     arguments are taken as their raw JSON text. An upstream id starting with
//     InternalIDPrefix is refused so that it can never collide with an internal
//     id. At most 256 calls per response (upstream_output_too_large beyond).
//   - MAX_OUTPUT_BYTES counts text and argument bytes, not thinking text.
//   - The model label is the first non-empty of metadata.model, metadata.modelId,
//     metadata.selectedModel, model, modelId, selectedModel on the event, then on
//     its data; every event carrying one is checked. A non-string label is an
//     unverified shape; a label over 128 bytes never matches and is kept
//     truncated to 128 bytes for ModelObserved.
//   - Once the request context is done (client gone, Close, timeout), nothing
//     the body reports counts as the upstream's end, not even a clean EOF: the
//     transport may see one when the server ends the response on seeing the
//     client close.
//   - A 4xx/5xx body is read for at most 4 KiB and 2 s, only to look for quota
//     phrases and rejection texts; a slower body is classified by its status.
//   - Events decoded from one read before a failing line are delivered before
//     the error, so the events of a stream do not depend on how it was chunked.
//   - Text output is not redacted: it is the model's answer. Error bodies and
//     failure-event texts are never copied anywhere.
//   - A continuation answering a call the upstream sent without an id is refused
//     before sending (unsupported_tool_result_continuation, ErrNotSent): the
//     upstream cannot know an internal id. A multi-result access_token
//     continuation without a group id is refused (invalid_request): the
//     gateway never invents one (docs/CORRELATION.md).
//   - A tool without a description is advertised with its name as description;
//     one without a schema with {"type":"object","properties":{}}.
//   - A Stream's accessors (Outcome, ConversationID, ModelObserved)
//     belong to the goroutine that calls Next; only Close may be called from
//     another goroutine, to abort a blocked Next.
//   - tool_choice "required" or a named function cannot be expressed upstream;
//     it is sent as autoRun true (the ingress decides whether to accept it).
package postman
