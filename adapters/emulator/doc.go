// Package emulator is a loopback HTTPS server that speaks the Postman Agent Mode
// chat protocol (shared/protocol/POSTMAN-UPSTREAM.md) for both upstream
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
// browser-like headers of design WEB-SESSION §4.1, and a TLS server name equal to
// that host. Every other Host is an access_token request: path ChatPath and
// "x-access-token: <AccessToken>". Secrets are compared in constant time and never
// appear in a response or in a recorded header.
//
// # Turns
//
// A USER_QUERY with conversationId null starts a conversation. When tools are
// offered (clientTools.thirdParty with exactly one group), autoRun is true and
// loop rounds remain (directive "#loop=N" in the query, 0-5, default 1; 0
// answers with text although tools are offered), the turn is a tool group;
// otherwise it is a text reply. A TOOL_RESPONSE must answer the
// conversation's pending group exactly; it then gets the next tool group or a
// final text quoting every result received since the USER_QUERY.
//
// # End of stream
//
// access_token streams end with a usage event, then "data: [DONE]", then EOF.
// web_session streams end with a usage event after the last output, then EOF.
// In-stream failures (failure event) end with EOF on both strategies.
//
// # Token counts in the usage event
//
// The numbers are deterministic functions of byte sizes:
//
//	promptTokens     = ceil(len(raw request body) / 4)
//	completionTokens = ceil(output bytes / 4), where output bytes is the sum of the
//	                   byte lengths of every thinkingContent, textContent and
//	                   tool-call argument fragment emitted before the usage event
//	totalTokens      = promptTokens + completionTokens
//	usage            = 10 * totalTokens   (credits, deliberately not a token count)
//	limit            = 800000, overage = 0, userType = "TEAM"
//
// # Fault scenarios
//
// A directive "#scenario=<name>" in the USER_QUERY text, or in any tool result
// content of a TOOL_RESPONSE, selects one of the scenarios listed by Scenarios.
// An unknown name is a 400.
package emulator
