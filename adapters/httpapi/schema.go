package httpapi

import (
	"encoding/json"
	"sort"
	"strconv"
)

// maxSchemaDepth bounds the nesting of a tool's parameters schema (each
// properties/items/anyOf/oneOf/allOf step is one level).
const maxSchemaDepth = 32

// schemaKeyword is how the bounded vocabulary of design CORRELATION §1 treats
// one keyword's value. A keyword absent from schemaVocabulary is refused with
// unsupported_parameter: format, pattern, $ref, $defs, definitions,
// prefixItems, patternProperties, if/then/else, not, dependentSchemas, …
type schemaKeyword func(raw json.RawMessage, path string, depth int) error

var schemaVocabulary map[string]schemaKeyword

func init() {
	// Assigned in init: the vocabulary recurses into checkSchema.
	schemaVocabulary = map[string]schemaKeyword{
		"type":                 checkSchemaType,
		"properties":           checkProperties,
		"required":             checkStringArray,
		"additionalProperties": checkAdditionalProperties,
		"items":                checkItems,
		"enum":                 checkEnum,
		"const":                anyValue,
		"anyOf":                checkSchemaList,
		"oneOf":                checkSchemaList,
		"allOf":                checkSchemaList,
		// Descriptive.
		"title":       stringValue,
		"description": stringValue,
		"default":     anyValue,
		"examples":    anyValue,
		"deprecated":  boolValue,
		"readOnly":    boolValue,
		"writeOnly":   boolValue,
		// Numeric bounds.
		"minimum":          numberValue,
		"maximum":          numberValue,
		"exclusiveMinimum": checkExclusiveBound,
		"exclusiveMaximum": checkExclusiveBound,
		"multipleOf":       checkMultipleOf,
		// String, array and object bounds.
		"minLength":     countValue,
		"maxLength":     countValue,
		"minItems":      countValue,
		"maxItems":      countValue,
		"uniqueItems":   boolValue,
		"minProperties": countValue,
		"maxProperties": countValue,
		// Identification.
		"$schema": stringValue,
		"$id":     stringValue,
	}
}

// seg renders one client-chosen key (a property name or an unknown keyword)
// as a param path segment. Plain identifiers appear as they are; anything
// else is shown as "?" so that a refusal never echoes arbitrary client text.
func seg(key string) string {
	if validToolName(key) || (len(key) > 1 && key[0] == '$' && validToolName(key[1:])) {
		return "." + key
	}
	return ".?"
}

// sortedKeys returns the keys of an object in order, so that the first
// refusal reported for a schema is deterministic.
func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkSchema validates one (sub)schema against the vocabulary; depth 0 is a
// tool's parameters, which must describe an object.
func checkSchema(raw json.RawMessage, path string, depth int) error {
	if depth > maxSchemaDepth {
		return unsupported(path, "the schema is nested deeper than 32 levels.")
	}
	switch kindOf(raw) {
	case kindObject:
	case kindBool:
		return unsupported(path, "boolean schemas are not supported; use an object schema.")
	default:
		return invalid(path, "must be a schema object.")
	}
	obj := fields(raw)
	if depth == 0 {
		if t, ok := obj["type"]; ok && !(kindOf(t) == kindString && str(t) == "object") {
			return unsupported(path+".type", "tool parameters must be an object schema.")
		}
	}
	for _, k := range sortedKeys(obj) {
		check, ok := schemaVocabulary[k]
		if !ok {
			return unsupported(path+seg(k), "this schema keyword is not supported.")
		}
		if err := check(obj[k], path+seg(k), depth); err != nil {
			return err
		}
	}
	return nil
}

var schemaTypes = map[string]bool{
	"object": true, "array": true, "string": true, "number": true, "integer": true, "boolean": true, "null": true,
}

func checkSchemaType(raw json.RawMessage, path string, _ int) error {
	switch kindOf(raw) {
	case kindString:
		if schemaTypes[str(raw)] {
			return nil
		}
	case kindArray:
		items := elems(raw)
		seen := map[string]bool{}
		for _, it := range items {
			if kindOf(it) != kindString || !schemaTypes[str(it)] || seen[str(it)] {
				return invalid(path, "must be a JSON schema type or a list of distinct types.")
			}
			seen[str(it)] = true
		}
		if len(items) > 0 {
			return nil
		}
	}
	return invalid(path, "must be a JSON schema type or a list of distinct types.")
}

func checkProperties(raw json.RawMessage, path string, depth int) error {
	if kindOf(raw) != kindObject {
		return invalid(path, "must be an object of schemas.")
	}
	props := fields(raw)
	for _, name := range sortedKeys(props) {
		if err := checkSchema(props[name], path+seg(name), depth+1); err != nil {
			return err
		}
	}
	return nil
}

func checkAdditionalProperties(raw json.RawMessage, path string, _ int) error {
	if kindOf(raw) == kindBool {
		return nil
	}
	return unsupported(path, "only a boolean additionalProperties is supported.")
}

func checkItems(raw json.RawMessage, path string, depth int) error {
	switch kindOf(raw) {
	case kindObject:
		return checkSchema(raw, path, depth+1)
	case kindArray:
		return unsupported(path, "tuple items are not supported; use a single schema.")
	case kindBool:
		return unsupported(path, "boolean schemas are not supported; use an object schema.")
	}
	return invalid(path, "must be a schema object.")
}

func checkSchemaList(raw json.RawMessage, path string, depth int) error {
	if kindOf(raw) != kindArray {
		return invalid(path, "must be a non-empty array of schemas.")
	}
	items := elems(raw)
	if len(items) == 0 {
		return invalid(path, "must be a non-empty array of schemas.")
	}
	for i, it := range items {
		if err := checkSchema(it, path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
			return err
		}
	}
	return nil
}

func checkEnum(raw json.RawMessage, path string, _ int) error {
	if kindOf(raw) != kindArray || len(elems(raw)) == 0 {
		return invalid(path, "must be a non-empty array.")
	}
	return nil
}

func checkStringArray(raw json.RawMessage, path string, _ int) error {
	if kindOf(raw) != kindArray {
		return invalid(path, "must be an array of strings.")
	}
	for _, it := range elems(raw) {
		if kindOf(it) != kindString {
			return invalid(path, "must be an array of strings.")
		}
	}
	return nil
}

func checkExclusiveBound(raw json.RawMessage, path string, _ int) error {
	switch kindOf(raw) {
	case kindNumber:
		return nil
	case kindBool:
		return unsupported(path, "the draft-04 boolean form is not supported; use a number.")
	}
	return invalid(path, "must be a number.")
}

func checkMultipleOf(raw json.RawMessage, path string, _ int) error {
	if kindOf(raw) == kindNumber {
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil && f > 0 {
			return nil
		}
	}
	return invalid(path, "must be a number greater than 0.")
}

func countValue(raw json.RawMessage, path string, _ int) error {
	if n, ok := integer(raw); ok && n >= 0 {
		return nil
	}
	return invalid(path, "must be a non-negative integer.")
}

func numberValue(raw json.RawMessage, path string, _ int) error {
	if kindOf(raw) == kindNumber {
		return nil
	}
	return invalid(path, "must be a number.")
}

func stringValue(raw json.RawMessage, path string, _ int) error {
	if kindOf(raw) == kindString {
		return nil
	}
	return invalid(path, "must be a string.")
}

func boolValue(raw json.RawMessage, path string, _ int) error {
	if kindOf(raw) == kindBool {
		return nil
	}
	return invalid(path, "must be a boolean.")
}

func anyValue(json.RawMessage, string, int) error { return nil }
