// Package gemapi is the Gemini API's translation and answer: a request
// body read once (wire/gemini) and translated into a chat.Request (Decode,
// DecodeCount: decode.go), and a turn rendered as one
// GenerateContentResponse or as the alt=sse stream through the emitter
// sse/gemsse (Answer: answer.go), with the Model object and the countTokens
// answer. The transport (adapters/httpapi, gemini_routes.go) keeps the
// routes, the key, the model check of a path and the error shape, and
// hands an answer what it needs of the request (Env).
package gemapi
