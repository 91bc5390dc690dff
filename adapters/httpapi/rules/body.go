package rules

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
)

// A request is read once, strictly, by its API's wire package (wire/chat,
// wire/messages) into typed values that record each member's JSON
// kind, and translated field by field in a fixed order, so that a request
// with two wrong fields is refused for the same one whatever the order of
// its members (docs/API.md). Known fields are honoured, ignored or refused as
// listed in the package documentation; members no API knows are ignored, so
// that newer SDKs and proxies that add harmless fields keep working. Refusals
// name the param path.

// WireRefusal is the refusal of a body its API's wire package (wire/chat,
// wire/messages) would not read (err is its Decode's error): a body the
// reading refuses is refused in the words every API uses (bodyError: not
// JSON, not an object, not text); one those accept repeats a member name,
// refused at the repeat's path as the API writes paths (path).
func WireRefusal(body []byte, err error, path func([]wirejson.Step) string) error {
	if berr := BodyError(body); berr != nil {
		return berr
	}
	if steps, ok := wirejson.DuplicateName(body, err); ok {
		return Invalid(path(steps), DuplicateDetail)
	}
	return Invalid("", "The body is not valid JSON.") // the readers disagree; not seen
}

// ReadWire reads body once, strictly, with its API's wire package (decode),
// and refuses what it would not read (wireRefusal; path writes a repeat's
// path as the API does).
func ReadWire[T any](body []byte, decode func([]byte) (T, error), path func([]wirejson.Step) string) (T, error) {
	wr, err := decode(body)
	if err != nil {
		return wr, WireRefusal(body, err, path)
	}
	return wr, nil
}

// DottedPath writes a repeat's path with its steps joined by dots
// (messages.0.content.1.text), as the Messages and Gemini APIs write paths.
func DottedPath(steps []wirejson.Step) string {
	names := make([]string, len(steps))
	for i, st := range steps {
		names[i] = st.Name
	}
	return strings.Join(names, ".")
}

// DuplicateDetail is the refusal of a member name given twice in one object
// (docs/API.md, "Repeated member names and the order of refusals").
const DuplicateDetail = "is given more than once in its object; a member name may appear only once."

// BodyError is the refusal of a body that is not one JSON object of valid
// Unicode text, or nil.
func BodyError(body []byte) error {
	if !json.Valid(body) {
		return Invalid("", "The body is not valid JSON: "+jsonPosition(body))
	}
	if i := bytes.IndexFunc(body, func(c rune) bool { return !isJSONSpace(byte(c)) }); body[i] != '{' {
		return Invalid("", "The body must be a JSON object.")
	}
	return CheckText(body)
}

// jsonPosition says where body stops being JSON: the byte offset, line and
// column (in bytes, from 1) of the first byte that cannot continue it, or
// that the body ends too early. Positions only: never the body's text.
func jsonPosition(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	var v any
	err := dec.Decode(&v)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// Offset counts the bytes read, the one that broke the value included.
		return "an unexpected character" + at(body, max(se.Offset-1, 0))
	case err == nil: // one whole value, then more text
		off := dec.InputOffset()
		for off < int64(len(body)) && isJSONSpace(body[off]) {
			off++
		}
		return "text after the JSON value" + at(body, off)
	}
	return "the body ends before the JSON value does, at byte offset " + strconv.Itoa(len(body)) + "."
}

// at renders " at byte N (line L, column C)." for offset off of body.
func at(body []byte, off int64) string {
	off = min(off, int64(len(body)))
	line := 1 + bytes.Count(body[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(body[:off], '\n'))
	return " at byte offset " + strconv.FormatInt(off, 10) + " (line " + strconv.Itoa(line) + ", column " + strconv.FormatInt(col, 10) + ")."
}

func isJSONSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// OptionalBool reads an optional boolean: def when absent or null.
func OptionalBool(b wirejson.Bool, param string, def bool) (bool, error) {
	switch {
	case wirejson.Absent(b.Kind):
		return def, nil
	case b.IsBool():
		return b.V, nil
	}
	return false, Invalid(param, "must be a boolean.")
}

// RequiredString reads a required, non-empty string.
func RequiredString(v wirejson.String, param string) (string, error) {
	if !v.IsString() {
		return "", Invalid(param, "is required and must be a string.")
	}
	if v.V == "" {
		return "", Invalid(param, "must not be empty.")
	}
	return v.V, nil
}

// IndexedPath writes a repeat's path as the OpenAI APIs (chat completions,
// Responses) write paths: messages[0].content[1].text.
func IndexedPath(steps []wirejson.Step) string {
	var b strings.Builder
	for i, st := range steps {
		switch {
		case st.Index:
			b.WriteString("[" + st.Name + "]")
		case i > 0:
			b.WriteString("." + st.Name)
		default:
			b.WriteString(st.Name)
		}
	}
	return b.String()
}

// ToolErrorPrefix marks a tool_result with is_error: true in the text the
// upstream receives (the upstream tool response has no error status of its
// own that the gateway sends).
const ToolErrorPrefix = "Tool error: "

// MaxStopSequences bounds the stop sequences of a request (Messages'
// stop_sequences, Gemini's stopSequences): the gateway scans the text for
// each.
const MaxStopSequences = 16

// MustJSON is v as JSON, for values that cannot fail to encode (raw
// messages, strings and structs of them).
func MustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("httpapi: marshal: " + err.Error()) // raw messages and strings only
	}
	return b
}
