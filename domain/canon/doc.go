// Package canon is pmgate's versioned canonical JSON serializer and the canonical
// hashes that bind a tool-call group (design CORRELATION §4, CONTRACT §4).
//
// The package is pure: no I/O, no clock, no goroutines. Everything below is a
// contract. Stored hashes must be reproducible by every future build, so any
// change to the value model, the byte rules or the chat-level shapes requires a
// new [Version] string; never change the rules under the current one.
//
// # Value model
//
// A [Value] is one of these dynamic types, and nothing else:
//
//	nil               JSON null (only the untyped nil interface value)
//	bool              JSON true / false
//	string            JSON string; must be valid UTF-8
//	Number            JSON number, kept as its exact literal text
//	[]Value           JSON array ([]any); a nil slice is the empty array
//	map[string]Value  JSON object (map[string]any); a nil map is the empty object
//
// Any other dynamic type (int, float64, json.Number, []string, pointers, structs,
// …) is refused by [Marshal] and [Hash]. A value nested deeper than an internal
// guard (65536 levels, which also catches cyclic maps and slices) is refused.
//
// # Canonical serialization, version "pmgate-canon-v1"
//
// [Marshal] writes exactly these bytes:
//
//  1. null, true, false: the literals `null`, `true`, `false`.
//  2. Number: its literal text byte for byte (`1`, `1.0`, `-0`, `1e3`, `1E+3` are
//     five different outputs). The literal must match the JSON number grammar of
//     RFC 8259 §6: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? ; otherwise it
//     is refused. Numbers are never re-formatted or compared numerically.
//  3. String: `"`, the escaped content, `"`. The content is the string's bytes,
//     which must be valid UTF-8 (else refused), with exactly these replacements:
//     `"` (0x22) → `\"`; `\` (0x5C) → `\\`; 0x08 → `\b`; 0x0C → `\f`;
//     0x0A → `\n`; 0x0D → `\r`; 0x09 → `\t`; every other byte 0x00–0x1F →
//     `\u00` followed by two lowercase hex digits (0x1F → `\u001f`). Every other
//     byte is written raw: `/`, DEL (0x7F), `<`, `>`, `&`, U+2028, U+2029 and all
//     non-ASCII characters (including astral ones such as emoji) appear as their
//     UTF-8 bytes, never as \u escapes. No Unicode normalization is applied: NFC
//     "é" (C3 A9) and NFD "é" (65 CC 81) serialize differently.
//  4. Array: `[`, the elements in their given order separated by `,`, `]`.
//  5. Object: `{`, the members sorted by key in ascending byte-wise order of the
//     keys' UTF-8 encodings (Go string comparison; a key that is a prefix of
//     another sorts first; "B" < "a"; no case folding), each written as the key
//     (a string, rule 3) then `:` then the value, separated by `,`, then `}`.
//  6. No whitespace anywhere outside strings, no trailing newline.
//
// The output is always valid JSON and valid UTF-8.
//
// # Hash
//
// [Hash] is "sha256:" followed by the 64 lowercase hex digits of
// SHA-256(Version + "\n" + Marshal(v)), i.e. of the ASCII bytes
// `pmgate-canon-v1`, one 0x0A byte, and the canonical bytes.
//
// # Parsing
//
// [ParseJSON] reads exactly one RFC 8259 JSON text into the value model and is
// stricter than RFC 8259 in four ways: the whole input must be valid UTF-8 (no
// byte-order mark), object keys must be unique after unescaping, a \u escape
// must not produce a lone surrogate (a high surrogate must be followed by a \u
// low surrogate; the pair becomes one astral character), and arrays/objects
// may nest at most [MaxDepth] levels. Whitespace (space, tab, LF, CR) is allowed
// only between tokens; anything after the value except whitespace is refused.
// Numbers become [Number] with their literal text. Refusals carry
// errs.InvalidRequest and a message that names the problem and a byte offset,
// never the input.
//
// For every input ParseJSON accepts, Marshal succeeds and
// Marshal(ParseJSON(Marshal(ParseJSON(x)))) equals Marshal(ParseJSON(x)).
//
// # Chat-level canonical forms
//
// [MessageValue] maps a normalized chat.Message to an object with only these
// members:
//
//	role          string, always
//	content       string, or null when Content is nil; for an assistant message
//	              with at least one tool call, "" is null as well
//	name          string, only for non-assistant roles and only when non-empty
//	tool_calls    only for an assistant message with at least one tool call:
//	              array, in order, of {"id":…,"name":…,"arguments":…}; the
//	              argument string is a JSON string, never parsed
//	tool_call_id  string, only (and always) for role "tool"
//
// The hashed documents are (each a Hash of the shown object; the "kind" tag keeps
// different kinds from ever sharing a preimage):
//
//	TranscriptHash  {"kind":"transcript","messages":[MessageValue…]}
//	SchemaHash      {"kind":"schema","schema":<ParseJSON(parameters), or null when empty>}
//	ToolsHash       {"kind":"tools",
//	                 "tools":[{"name":…,"description":…,"parameters":<schema or null>,
//	                           "strict":<bool or null>}…],
//	                 "tool_choice":{"mode":…,"function":<string when mode is "function", else null>}}
//	ArgumentsHash   {"kind":"arguments","name":…,"arguments":<exact string>,"schema_hash":…}
//	ResultsHash     {"kind":"results","results":[[public_id,content]…]}
//
// Lists keep their given order; an empty or nil list is `[]`.
package canon
