// Package emulator is a loopback HTTPS server that speaks the Postman Agent Mode
// chat protocol (docs/UPSTREAM.md) for both upstream
// strategies, web_session and access_token. Tests run it in-process; the
// `gateway demo` and `gateway emulator` commands wrap it.
//
// It is strict about what it accepts and deterministic in what it returns: the
// only random parts of a response are the conversation, group and call ids.
//
// # Strategies
//
// A request whose Host is "<Subdomain>.postman.co" (any port) is a web_session
// request: path /_gw/chat, exactly the cookie "postman.sid=<SessionCookie>", the
// browser-like headers the gateway sends on web_session (docs/UPSTREAM.md), and a TLS server name equal to
// that host. Every other Host is an access_token request: path ChatPath and
// "x-access-token: <AccessToken>". Secrets are compared in constant time and never
// appear in a response or in a recorded header.
//
// # Request-side constraints (always on)
//
// The emulator enforces what the public projects report about the service
// (docs/UPSTREAM.md), so that the gateway's suite cannot pass on its
// generosity:
//
//   - every turn carries input.agent null and input.startedFrom CHAT_INPUT, and
//     a TOOL_RESPONSE names its conversation (else 400 INPUT_VALIDATION_ERROR);
//   - a query longer than MaxQueryChars UTF-16 code units (default 10000;
//     code points with QueryCharsInCodePoints, the other reading of the
//     service's open unit) is answered with a failure event {errorType
//     INPUT_VALIDATION_ERROR, userMessage "Agent Mode accepts upto N
//     characters as input."};
//   - with MaxToolResultChars set, a TOOL_RESPONSE with a longer result is
//     refused with the same failure event (the service's limit is unknown);
//   - more than MaxTools tools (default 20), or with ForbidSchemaKeywords a
//     schema using anyOf or $ref, is a failure event INPUT_VALIDATION_ERROR
//     "Forbidden";
//   - a group issued with isParallelToolCallingSupported true must be answered
//     with the array form toolResponses[]: a flat answer leaves it unanswered
//     and the same calls are issued again under new ids; on web_session the
//     array form needs its toolCallGroupId (ps2Api's traces show it accepted
//     with one; without one it is Forbidden), and the array form for a group
//     issued with the flag off is Forbidden.
//
// Refusals are counted as "refused_in_stream", repeated groups as
// "repeated_tool_group".
//
// # Turns and conversation memory
//
// A USER_QUERY with conversationId null starts a conversation; one naming a
// conversation the emulator created continues it (Request.Turn counts its user
// turns, "continued_user_query" counts them, and the reply says "Hello again …
// (turn N of this conversation)"); any other id fails with
// CONVERSATION_NOT_FOUND, for a TOOL_RESPONSE too. When tools are offered
// (clientTools.thirdParty with exactly one group), autoRun is true and loop
// rounds remain (directive "#loop=N" in the query, 0-5, default 1; 0 answers
// with text although tools are offered), the turn
// is a tool group; otherwise it is a text reply. A TOOL_RESPONSE must answer
// the conversation's pending group exactly; it then gets the next tool group
// or a final text quoting every result received since the USER_QUERY.
//
// The loop-approval gate: after N consecutive tool rounds (Config
// LoopApprovalAfter, or "#approval_after=N", 1-5, in the USER_QUERY, which
// wins for that turn) the answer to the TOOL_RESPONSE that would start round
// N+1 is the agent-loop guard: usage, a loopApprovalChunk (counters and
// thresholds {"toolRounds": N}) and the profile's clean end ([DONE] under
// strict, on both strategies: ps2Api's stream.go streamInternal). The results it answers are consumed: nothing is pending, so
// the same TOOL_RESPONSE again fails with TOOL_CALL_NOT_FOUND. A later
// USER_QUERY on the conversation goes on normally and starts a new count of
// consecutive rounds. "#scenario=loop_approval" gates a plain query.
//
// A USER_QUERY on a conversation whose tool group is still pending abandons
// the group by default (its TOOL_RESPONSE afterwards fails with
// TOOL_CALL_NOT_FOUND); what the service does there is not measured.
// Config.PendingOnQuery PendingKept, or "#pending=keep" in a USER_QUERY (for
// that conversation from then on), keeps the group answerable once instead.
//
// Usage events count one exchange (its body and its output, a token per four
// bytes) by default; Config.Usage UsagePerConversation, or "#usage=conversation"
// in a USER_QUERY, makes them report the conversation's context instead: the
// prompt tokens of every earlier exchange of the conversation are added, so
// they grow as the service's context does ("#usage=request" restores the
// default for that conversation).
//
// Directives ("#scenario=", "#loop=", "#tool=", "#approval_after=",
// "#text_chunks=", "#usage=", "#delay_ms=", "#pending=") are read from the newest user turn of a
// USER_QUERY only: when the query is a transcript the gateway rendered
// ("[User]" blocks among "[Assistant]", "[Tool Result id=…]"… blocks), the
// text of its last "[User]" block; otherwise the whole query. A client that
// re-sends a whole conversation therefore does not replay the directives of
// its earlier turns. When the newest turn holds several directives of one
// kind (a client merges a prompt that failed with the next prompt into one
// message), the last one wins; "#scenario=usage_last" asks for the normal
// turn explicitly.
//
// A user message with "#once" has its directives applied the first time the
// emulator sees that message (its exact text) only: when it comes again, in a
// retry or ahead of the client's next prompt (opencode re-sends a failed
// prompt with the next one), it is left out of the turn whose directives
// apply, so a "#scenario=… #once" fault happens once, as the service's do.
//
// A USER_QUERY with "#text_chunks=N" (1-1000) has its text reply sent as
// exactly N textChunk events: its first N chunks, or its chunks repeated in
// order until there are N (a load test's long stream; the quote alone is at
// most 200 bytes). A TOOL_RESPONSE ignores the directive.
//
// A USER_QUERY with "#delay_ms=N" (1-60000) is answered after N milliseconds
// of silence before the answer's headers, as a slow service is: a client
// whose timeout is shorter gives up and retries (the retry tests). The
// request is recorded, and counted, before the wait.
//
// A tool group calls the first tool (the first two when parallel calling is
// on), or the offered tools named by a "#tool=<name>[,<name>]" directive in the
// query (only the first when parallel calling is off); arguments are built from
// each tool's schema (argumentsFor).
//
// # Profiles and end of stream
//
// Profile "strict" (default): web_session streams follow ps2Api's traces
// (its 529 doc §2-3.1, 2026-08-27; its fixtures, router_test.go:299-304): the
// usage event before the output, then "data: [DONE]", then EOF; access_token
// streams end with a usage event, then [DONE], then EOF. Wherever it sits,
// the usage event counts the whole exchange (the frames are computed up
// front). "usage_last_eof" is strict with the web_session order used before
// the traces were read: usage after the last output, then EOF. "observed"
// answers like the projects' fixtures: no usage event, the conversation id
// only on the first output chunk and none on continuation streams, tool names
// on the second chunk of a call, "" arguments for a call without parameters,
// no [DONE]. "done_event" is strict with a {"eventType":"done"} event at the
// end: in place of [DONE] on web_session (the terminal's other literal),
// before it on access_token. "forbid_schemas" is strict with
// ForbidSchemaKeywords. Each response-side change can also be asked for per
// request with a scenario (usage_absent, usage_first, usage_last, done_event,
// conversation_on_chunk, continuation_without_conversation, late_tool_name,
// empty_arguments, no_done_marker, observed_stream). In-stream failures
// (failure event) end with EOF on both strategies.
//
// # Structured output
//
// A USER_QUERY ending in the gateway's structured-output instruction
// (domain/structured) is answered, at the end of the tool loop it starts,
// with a value built from the schema it names (as tool arguments are), or
// per scenario with invalid JSON, a schema violation, prose around the value,
// a refusal, a code fence or a lone surrogate escape (structured_*;
// structured.go).
//
// # Token counts in the usage event
//
// The numbers are deterministic functions of byte sizes (every row is
// asserted by TestTextTurnAccessTokenEndsWithUsageThenDone):
//
//	promptTokens     = ceil(len(raw request body) / 4)
//	completionTokens = ceil(output bytes / 4), where output bytes is the sum of the
//	                   byte lengths of every thinkingContent, textContent and
//	                   tool-call argument fragment of the exchange (a usage
//	                   event before the output counts the output after it)
//	totalTokens      = promptTokens + completionTokens
//
// The rest of the event is the owner's plan (Credits; a test moves it with
// SetCredits), with the fields of ps2Api's captured-looking usage event
// (ossfunc_test.go:37): by default userType FREE_USER, limit 50000, usage
// starting at 28713 and growing by PerQuery (100) with every usage event,
// up to the limit, overage 0, spillage 2, allowOverage false, isTeamPooled
// true, warningThresholds [{value 50, unit Percentage}] and a monthly
// usageCycle (start and end at 23:22:55 UTC on the 11th) holding the
// emulator's start. usageState is the plan's State (AVAILABLE) unless the
// scenario reports another.
//
// # Fault scenarios
//
// A directive "#scenario=<name>" in the USER_QUERY text, or in any tool result
// content of a TOOL_RESPONSE, selects one of the scenarios listed by Scenarios.
// An unknown name is a 400.
package emulator
