package httpapi

// This file reads the JSON kinds of raw values: the exact, case-sensitive
// reading the decoders are built on (see decode.go).

import (
	"encoding/json"
	"math"
	"strconv"
)

// kind is the JSON kind of a raw value.
type kind uint8

const (
	kindInvalid kind = iota
	kindNull
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// kindOf reads the kind from the first byte. Values come out of
// encoding/json already validated and trimmed.
func kindOf(raw []byte) kind {
	if len(raw) == 0 {
		return kindInvalid
	}
	switch c := raw[0]; {
	case c == 'n':
		return kindNull
	case c == 't' || c == 'f':
		return kindBool
	case c == '"':
		return kindString
	case c == '[':
		return kindArray
	case c == '{':
		return kindObject
	case c == '-' || (c >= '0' && c <= '9'):
		return kindNumber
	}
	return kindInvalid
}

// absent says whether an optional value is missing or null (null is treated
// as absent everywhere).
func absent(raw json.RawMessage) bool { return len(raw) == 0 || kindOf(raw) == kindNull }

func fields(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m) // kind checked by the caller; the body was validated
	return m
}

func elems(raw json.RawMessage) []json.RawMessage {
	var a []json.RawMessage
	_ = json.Unmarshal(raw, &a)
	return a
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// optString reads an optional string: "" when absent or null.
func optString(raw json.RawMessage, param string) (string, error) {
	switch kindOf(raw) {
	case kindInvalid, kindNull:
		return "", nil
	case kindString:
		return str(raw), nil
	}
	return "", invalid(param, "must be a string.")
}

// reqString reads a required, non-empty string.
func reqString(raw json.RawMessage, param string) (string, error) {
	if kindOf(raw) != kindString {
		return "", invalid(param, "is required and must be a string.")
	}
	s := str(raw)
	if s == "" {
		return "", invalid(param, "must not be empty.")
	}
	return s, nil
}

// optBool reads an optional boolean: def when absent or null.
func optBool(raw json.RawMessage, param string, def bool) (bool, error) {
	switch kindOf(raw) {
	case kindInvalid, kindNull:
		return def, nil
	case kindBool:
		return raw[0] == 't', nil
	}
	return false, invalid(param, "must be a boolean.")
}

// integer reads a JSON number with an integral value.
func integer(raw json.RawMessage) (int64, bool) {
	if kindOf(raw) != kindNumber {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}
