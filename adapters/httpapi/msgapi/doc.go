// Package msgapi is the Anthropic Messages API (POST /v1/messages and
// /v1/messages/count_tokens) on the same core as chat completions and the
// Responses API: its request is translated into a chat.Request (system
// blocks → a system message, content blocks → messages, tool_use/tool_result
// blocks → tool calls and tool messages, custom tools → chat tools under the
// same rules, rules.Settings.NewTools; Decode, DecodeCount), the same app
// turn runs, and its deltas are rendered as a Message or the Messages event
// stream through sse/msgsse (Answer). docs/MESSAGES.md lists every field and
// how it is treated.
//
// The transport (adapters/httpapi) keeps the routes, the key, the agent
// header and the Anthropic error shape; it hands an answer what it needs of
// the request in an Env.
package msgapi
