// Package canon is pmgate's versioned canonical JSON serializer and the canonical
// hashes that bind a tool-call group (docs/TOOL-CALLING.md).
//
// The package is pure: no I/O, no clock, no goroutines. Everything below is a
// contract. Stored hashes must be reproducible by every future build, so the
// value model, the byte rules and every existing chat-level shape are frozen
// under [Version]: a change to the value model or the byte rules needs a new
// Version string, and a new chat-level rule gets a new document kind (as the
// value-form transcript did) instead of changing an existing one.
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
//	              argument string is a JSON string, never parsed (the
//	              value form below parses it)
//	tool_call_id  string, only (and always) for role "tool"
//
// The hashed documents are (each a Hash of the shown object; the "kind" tag keeps
// different kinds from ever sharing a preimage):
//
//	TranscriptHash  {"kind":"transcript","messages":[MessageValue…]}
//	TranscriptHashV2 "transcript.v2:" + Hash of
//	                {"kind":"transcript.v2","messages":[MessageValueV2…]}
//	SchemaHash      {"kind":"schema","schema":<ParseJSON(parameters), or null when empty>}
//	ToolsHash       {"kind":"tools",
//	                 "tools":[{"name":…,"description":…,"parameters":<schema or null>,
//	                           "strict":<bool or null>}…],
//	                 "tool_choice":{"mode":…,"function":<string when mode is "function", else null>}}
//	ArgumentsHash   {"kind":"arguments","name":…,"arguments":<exact string>,"schema_hash":…}
//	ResultsHash     {"kind":"results","results":[[public_id,content]…]}
//
// Lists keep their given order; an empty or nil list is `[]`.
//
// # Transcript forms
//
// Clients re-serialize the tool-call arguments they received before echoing
// the assistant turn back (other key order, other whitespace, \u escapes,
// 1.0 for 1, schema defaults filled in), so the gateway compares echoed
// arguments as JSON values. Two transcript forms exist:
//
//   - exact ([TranscriptHash], hashes "sha256:…"): argument strings byte for
//     byte. Kept so that records stored by earlier builds are still checked
//     under the rules they were written with.
//   - values ([TranscriptHashV2], hashes "transcript.v2:sha256:…"): what the
//     gateway stores now. The tag in front of the hash makes the form of a
//     stored hash visible ([FormOf]); a hash of one form never equals a hash of
//     the other, so the two are never confused.
//
// [MessageValueV2] is MessageValue with each tool call written as
// {"id","name","arguments":<value>} when the argument string is one JSON text
// that ParseJSON accepts, and as {"id","name","arguments_text":<exact string>}
// otherwise (the two member names keep a parsed string apart from an unparsed
// text). The value is the parsed JSON after [Normalize]: key order and
// whitespace are gone (objects are sorted by rule 5), escapes are decoded
// (\u00e9 and a raw é are the same string; no Unicode normalization, so NFC
// and NFD still differ), and every number is rewritten by value.
//
// # Numbers by value
//
// [CanonicalNumber] spells a number by its exact decimal value: zero is `0`
// (so `-0`, `0.0` and `0e5` are `0`: JSON values, not IEEE doubles, are
// compared); any other number is an optional `-`, its significant digits with
// no leading or trailing zero, then, when the power of ten is not zero, `e`
// and that power in decimal. `1`, `1.0`, `1e0` and `10e-1` are all `1`; `100`
// is `1e2`; `0.5` is `5e-1`; `-12.340e-5` is `-1234e-7`. Nothing is
// evaluated as floating point and the exponent is adjusted as decimal text, so
// the cost is linear in the literal's length whatever its exponent.
//
// # Echoed arguments
//
// A continuation repeats the transcript the gateway admitted, ending with the
// assistant message whose tool calls the gateway issued. An echoed call of
// that message matches its issued call when, in value form, the arguments are
// equal after dropping the properties the echo added with their schema
// default. A property is dropped only when all of these hold: the call has the
// issued call's id and name; echo and issued arguments are both objects; the
// property is absent from the issued arguments at that place; the tool's
// original parameter schema declares a `default` for it through a chain of
// `properties` from the root (`properties.a.default`,
// `properties.a.properties.b.default`, … — [SchemaDefaults]; `$ref`, `anyOf`,
// `oneOf`, `allOf`, `items` never contribute); and the echoed value equals
// that default as a JSON value. The walk descends into a property only when it
// is an object on both sides; a property the echo added is kept or dropped as
// a whole. Nothing else is relaxed: a changed value, an added property
// without such a default or with another value, a property the issued
// arguments had and the echo lacks (even one equal to its default), another
// id or name all change the hash.
//
// The rule is asymmetric (an echo may add a default-valued property, never
// omit one), and no single function of the echo alone can express that: an
// echo with "replace_all":false matches issued arguments with and without it,
// while an echo without it matches only the latter. So the issued side is
// hashed exactly as issued (TranscriptHashV2 with no issued calls, at
// admission) and the echo side is hashed after dropping the properties the
// issued arguments lack (TranscriptHashV2, or [PrepareEcho] then [Echo.Hash],
// with the issued calls the record keeps); the check stays one comparison of
// two hashes. Messages before the issued calls are compared in value form
// without dropping anything: they are the client's own history, which it
// repeats as it sent it.
//
// # Schema defaults
//
// [SchemaDefaults] reads a tool's original parameters (never a form rewritten
// for the upstream): each member of `properties` whose schema is an object
// with a `default` member contributes that default, normalized; the member's
// own `properties` are read the same way, to any depth.
package canon
