package emulator

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Deterministic tool-call arguments: the emulator invents a valid argument set
// from the schema a tool was advertised with.

// argumentsFor builds the deterministic arguments of a call from the JSON
// schema it received (the gateway sends its lowered form), valid under that
// schema's bounded vocabulary: only required properties are included, in
// sorted order (one that properties does not describe is a string). See valueFor for each value.
func argumentsFor(params json.RawMessage) (string, bool) {
	if len(params) == 0 || params[0] != '{' {
		return "", false
	}
	var s argSchema
	if json.Unmarshal(params, &s) != nil {
		return "", false
	}
	return objectFor(s, 0), true
}

// argSchema is the part of a (lowered) schema the emulator reads.
type argSchema struct {
	Type             json.RawMessage            `json:"type"`
	Properties       map[string]json.RawMessage `json:"properties"`
	Required         []string                   `json:"required"`
	Items            json.RawMessage            `json:"items"`
	Enum             []json.RawMessage          `json:"enum"`
	Const            json.RawMessage            `json:"const"`
	AnyOf            []json.RawMessage          `json:"anyOf"`
	OneOf            []json.RawMessage          `json:"oneOf"`
	AllOf            []json.RawMessage          `json:"allOf"`
	Minimum          *float64                   `json:"minimum"`
	ExclusiveMinimum *float64                   `json:"exclusiveMinimum"`
	MultipleOf       *float64                   `json:"multipleOf"`
	MinLength        int                        `json:"minLength"`
	MaxLength        *int                       `json:"maxLength"`
	MinItems         int                        `json:"minItems"`
	Format           string                     `json:"format"`
	Description      string                     `json:"description"`
}

// maxArgDepth bounds the nesting of generated arguments.
const maxArgDepth = 16

// valueFor is the value of property name: const, else the first enum value,
// else the first anyOf/oneOf alternative, else by type (a type list uses its
// first non-null entry; allOf members add their properties and type): string
// a sample of its format (formatSample), else "value-<name>" cut or padded
// with "x" to maxLength/minLength; integer or
// number 1, raised to the minimum and to a multiple of multipleOf; boolean
// true; null; an object of its required properties; an array of minItems
// copies of its items value. Without a type, a string.
func valueFor(raw json.RawMessage, name string, depth int) string {
	var s argSchema
	if depth > maxArgDepth || json.Unmarshal(raw, &s) != nil {
		return "null"
	}
	for _, sub := range s.AllOf {
		var a argSchema
		if json.Unmarshal(sub, &a) != nil {
			continue
		}
		if len(s.Type) == 0 {
			s.Type = a.Type
		}
		for k, v := range a.Properties {
			if s.Properties == nil {
				s.Properties = map[string]json.RawMessage{}
			}
			if _, ok := s.Properties[k]; !ok {
				s.Properties[k] = v
			}
		}
		s.Required = append(s.Required, a.Required...)
		if len(s.Const) == 0 {
			s.Const = a.Const
		}
		if len(s.Enum) == 0 {
			s.Enum = a.Enum
		}
	}
	switch {
	case len(s.Const) > 0:
		return string(s.Const)
	case len(s.Enum) > 0:
		return string(s.Enum[0])
	case len(s.AnyOf) > 0:
		return valueFor(s.AnyOf[0], name, depth+1)
	case len(s.OneOf) > 0:
		return valueFor(s.OneOf[0], name, depth+1)
	}
	t := schemaType(s.Type)
	if t == "" && len(s.Properties) > 0 {
		t = "object"
	}
	switch t {
	case "integer", "number":
		return numberFor(s)
	case "boolean":
		return "true"
	case "null":
		return "null"
	case "object":
		return objectFor(s, depth+1)
	case "array":
		item := `"value-` + name + `"`
		if len(s.Items) > 0 {
			item = valueFor(s.Items, name, depth+1)
		}
		items := make([]string, s.MinItems)
		for i := range items {
			items[i] = item
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	if sample, ok := formatSample(s); ok {
		return jsonString(sample)
	}
	v := []rune("value-" + name)
	if s.MaxLength != nil && len(v) > *s.MaxLength {
		v = v[:*s.MaxLength]
	}
	for len(v) < s.MinLength {
		v = append(v, 'x')
	}
	return jsonString(string(v))
}

// PlaceholderCommand is the command a demo's tool call carries where its
// schema has a command (Config.PlaceholderCommands): it only prints that it
// is one, so an agent that runs it changes nothing.
const PlaceholderCommand = `echo "pmgate demo: a placeholder command from the emulator; it does nothing"`

// withPlaceholderCommands replaces the top-level string arguments named
// command or cmd (any case) of a generated argument object with
// PlaceholderCommand; everything else is kept as generated (sorted keys, as
// objectFor writes them).
func withPlaceholderCommands(args string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil {
		return args
	}
	changed := false
	for k, v := range obj {
		if n := strings.ToLower(k); (n == "command" || n == "cmd") && len(v) > 0 && v[0] == '"' {
			obj[k] = json.RawMessage(jsonString(PlaceholderCommand))
			changed = true
		}
	}
	if !changed {
		return args
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return args
	}
	return string(b)
}

// formatSamples are valid values of the string formats everyday tools
// declare (zod's .email(), .url(), .uuid(), .datetime(), .date()).
var formatSamples = map[string]string{
	"email":     "user@example.com",
	"uri":       "https://example.com/",
	"url":       "https://example.com/",
	"uuid":      "00000000-0000-4000-8000-000000000000",
	"date-time": "2026-01-01T00:00:00Z",
	"date":      "2026-01-01",
	"ipv4":      "192.0.2.1",
	"ipv6":      "2001:db8::1",
}

// formatNoteRE finds the format a lowering gateway moved into the description
// ("Schema notes: format: email; …"), as a model reading it would.
var formatNoteRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bformat: ([A-Za-z0-9_-]+)`) })

// formatSample is a valid value of the string's format, read from the format
// keyword or from a "format: <name>" note in its description. The client
// validates formats even where the gateway only describes them.
func formatSample(s argSchema) (string, bool) {
	format := s.Format
	if m := formatNoteRE().FindStringSubmatch(s.Description); format == "" && m != nil {
		format = m[1]
	}
	sample, ok := formatSamples[format]
	return sample, ok
}

func numberFor(s argSchema) string {
	v := 1.0
	if s.Minimum != nil && *s.Minimum > v {
		v = math.Ceil(*s.Minimum)
	}
	if s.ExclusiveMinimum != nil && *s.ExclusiveMinimum >= v {
		v = math.Floor(*s.ExclusiveMinimum) + 1
	}
	if m := s.MultipleOf; m != nil && *m > 0 && math.Mod(v, *m) != 0 {
		v = math.Ceil(v / *m) * *m
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// objectFor is the object of the required properties of s, keys sorted.
func objectFor(s argSchema, depth int) string {
	required := append([]string(nil), s.Required...)
	sort.Strings(required)
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	for i, name := range required {
		if i > 0 && name == required[i-1] {
			continue
		}
		prop, ok := s.Properties[name]
		if !ok {
			prop = json.RawMessage(`{}`) // required but undescribed: any value will do
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonString(name))
		b.WriteByte(':')
		b.WriteString(valueFor(prop, name, depth))
		n++
	}
	b.WriteByte('}')
	return b.String()
}

func schemaType(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		for _, t := range many {
			if t != "null" {
				return t
			}
		}
		if len(many) > 0 {
			return many[0]
		}
	}
	return ""
}

// jsonString encodes s as a JSON string without HTML escaping.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
