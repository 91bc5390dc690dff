// Package chatapi is the OpenAI chat completions API (POST
// /v1/chat/completions, docs/API.md) without its transport: the translation
// of a request body into the chat.Request the core takes (Decode) and the
// answer to a turn, a chat completion as JSON or as SSE chunks (Answer). The
// transport (adapters/httpapi, chat_route.go) serves the route and hands the
// answer what it needs of the request (Env).
package chatapi
