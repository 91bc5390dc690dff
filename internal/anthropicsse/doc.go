// Package anthropicsse is a strict checker of the Anthropic Messages API wire
// format, used by tests only: Check validates a streamed response (the bytes of
// a text/event-stream body), CheckMessage a non-streamed response body and
// CheckError an error body with its HTTP status.
//
// The stream grammar it enforces is stricter than either official SDK, because
// each SDK lets through something Claude Code does not (docs/MESSAGES.md):
//
//	stream := message_start block* message_delta+ message_stop      (success)
//	        | [message_start block*] error                          (failed)
//	block  := content_block_start(i) content_block_delta(i)* content_block_stop(i)
//
// with ping frames allowed anywhere after message_start, every frame an
// `event:` line equal to its data's "type" and terminated by a blank line, no
// `[DONE]`, blocks opened one at a time in index order from 0, deltas of the
// block's own kind, a tool_use block opened with `input: {}` whose
// input_json_delta fragments concatenate to a JSON object, cumulative usage
// that never decreases, stop_reason "tool_use" exactly when a tool_use block
// was sent, a stop_sequence exactly when stop_reason is "stop_sequence", and
// no end_turn success that carries nothing.
//
// Check reports whether a valid stream succeeded or failed, so a test asserts
// the outcome it expects as well as the grammar.
package anthropicsse
