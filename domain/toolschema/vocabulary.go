package toolschema

import (
	"sort"
	"strconv"
)

// keywordCheck validates one kept keyword's value of the schema at a (p is
// the keyword's path) and returns what it becomes.
type keywordCheck func(l *lowerer, v *node, a at, p string) (kwResult, error)

// vocabulary is the bounded vocabulary the upstream receives: type,
// properties, required, boolean additionalProperties, single-schema items,
// enum, const, anyOf, oneOf, allOf, descriptive fields, numeric, string,
// array and object bounds, $schema and $id. Every other keyword is lowered or
// refused by object.
var vocabulary map[string]keywordCheck

func init() {
	// Assigned in init: the vocabulary recurses into schema.
	vocabulary = map[string]keywordCheck{
		"type":                 checkType,
		"properties":           checkProperties,
		"required":             checkStringArray,
		"additionalProperties": checkAdditionalProperties,
		"items":                checkItems,
		"enum":                 checkEnum,
		"const":                anyValue,
		"anyOf":                checkSchemaList,
		"oneOf":                checkSchemaList,
		"allOf":                checkSchemaList,
		"title":                stringValue,
		"description":          stringValue,
		"default":              anyValue,
		"examples":             anyValue,
		"deprecated":           boolValue,
		"readOnly":             boolValue,
		"writeOnly":            boolValue,
		"minimum":              numberValue,
		"maximum":              numberValue,
		"exclusiveMinimum":     checkExclusiveBound,
		"exclusiveMaximum":     checkExclusiveBound,
		"multipleOf":           checkMultipleOf,
		"minLength":            countValue,
		"maxLength":            countValue,
		"minItems":             countValue,
		"maxItems":             countValue,
		"uniqueItems":          boolValue,
		"minProperties":        countValue,
		"maxProperties":        countValue,
		"$schema":              stringValue,
		"$id":                  checkID,
	}
}

func keep(v *node) kwResult { return kwResult{repl: v} }

var schemaTypes = map[string]bool{
	"object": true, "array": true, "string": true, "number": true, "integer": true, "boolean": true, "null": true,
}

func checkType(_ *lowerer, v *node, _ at, p string) (kwResult, error) {
	switch v.k {
	case kString:
		if schemaTypes[v.s] {
			return keep(v), nil
		}
	case kArray:
		seen := map[string]bool{}
		for _, it := range v.arr {
			if it.k != kString || !schemaTypes[it.s] || seen[it.s] {
				return kwResult{}, invalid(p, "must be a JSON schema type or a list of distinct types.")
			}
			seen[it.s] = true
		}
		if len(v.arr) > 0 {
			return keep(v), nil
		}
	}
	return kwResult{}, invalid(p, "must be a JSON schema type or a list of distinct types.")
}

func checkProperties(l *lowerer, v *node, a at, p string) (kwResult, error) {
	if v.k != kObject {
		return kwResult{}, invalid(p, "must be an object of schemas.")
	}
	byKey := make(map[string]result, len(v.obj))
	for _, name := range sortedKeys(v) {
		r, err := l.schema(v.get(name), a.sub(p+PathSegment(name)))
		if err != nil {
			return kwResult{}, err
		}
		byKey[name] = r
	}
	out := kwResult{repl: v}
	changed := false
	ms := make([]member, len(v.obj))
	for i, m := range v.obj {
		r := byKey[m.key]
		ms[i] = member{m.key, r.n}
		changed = changed || r.n != m.val
		out.height = max(out.height, r.height+1)
	}
	if changed {
		out.repl = newObject(ms)
	}
	return out, nil
}

func sortedKeys(n *node) []string {
	keys := make([]string, len(n.obj))
	for i, m := range n.obj {
		keys[i] = m.key
	}
	sort.Strings(keys)
	return keys
}

// checkAdditionalProperties keeps a boolean. Under lower a schema becomes true
// and is described: the value schema is lowered first (so that a $ref in it
// is rendered as its definition) but not enforced.
func checkAdditionalProperties(l *lowerer, v *node, a at, p string) (kwResult, error) {
	if v.k == kBool {
		return keep(v), nil
	}
	if v.k != kObject || (l.opts.Policy == PolicyStrict && !l.opts.Validating) {
		return kwResult{}, unsupported(p, "only a boolean additionalProperties is supported.")
	}
	r, err := l.schema(v, a.sub(p))
	if err != nil {
		return kwResult{}, err
	}
	if l.opts.Validating {
		return kwResult{repl: r.n, height: r.height + 1}, nil
	}
	out := kwResult{repl: newBool(true)}
	if len(r.n.obj) > 0 {
		out.notes = []note{{"additionalProperties", string(encode(r.n))}}
	}
	return out, nil
}

func checkItems(l *lowerer, v *node, a at, p string) (kwResult, error) {
	switch v.k {
	case kObject:
		r, err := l.schema(v, a.sub(p))
		if err != nil {
			return kwResult{}, err
		}
		return kwResult{repl: r.n, height: r.height + 1}, nil
	case kArray:
		return kwResult{}, unsupported(p, "tuple items are not supported; use a single schema.")
	case kBool:
		return kwResult{}, unsupported(p, "boolean schemas are not supported; use an object schema.")
	}
	return kwResult{}, invalid(p, "must be a schema object.")
}

func checkSchemaList(l *lowerer, v *node, a at, p string) (kwResult, error) {
	if v.k != kArray || len(v.arr) == 0 {
		return kwResult{}, invalid(p, "must be a non-empty array of schemas.")
	}
	out := kwResult{repl: v}
	items := make([]*node, len(v.arr))
	changed := false
	for i, it := range v.arr {
		r, err := l.schema(it, a.sub(p+index(i)))
		if err != nil {
			return kwResult{}, err
		}
		items[i] = r.n
		changed = changed || r.n != it
		out.height = max(out.height, r.height+1)
	}
	if changed {
		out.repl = newArray(items)
	}
	return out, nil
}

func checkEnum(_ *lowerer, v *node, _ at, p string) (kwResult, error) {
	if v.k != kArray || len(v.arr) == 0 {
		return kwResult{}, invalid(p, "must be a non-empty array.")
	}
	return keep(v), nil
}

func checkStringArray(_ *lowerer, v *node, _ at, p string) (kwResult, error) {
	if v.k != kArray {
		return kwResult{}, invalid(p, "must be an array of strings.")
	}
	for _, it := range v.arr {
		if it.k != kString {
			return kwResult{}, invalid(p, "must be an array of strings.")
		}
	}
	return keep(v), nil
}

func checkExclusiveBound(_ *lowerer, v *node, _ at, p string) (kwResult, error) {
	switch v.k {
	case kNumber:
		return keep(v), nil
	case kBool:
		return kwResult{}, unsupported(p, "the draft-04 boolean form is not supported; use a number.")
	}
	return kwResult{}, invalid(p, "must be a number.")
}

func checkMultipleOf(_ *lowerer, v *node, _ at, p string) (kwResult, error) {
	if v.k == kNumber {
		if f, err := strconv.ParseFloat(v.s, 64); err == nil && f > 0 {
			return keep(v), nil
		}
	}
	return kwResult{}, invalid(p, "must be a number greater than 0.")
}

func countValue(_ *lowerer, v *node, _ at, p string) (kwResult, error) {
	if n, ok := integer(v); ok && n >= 0 {
		return keep(v), nil
	}
	return kwResult{}, invalid(p, "must be a non-negative integer.")
}

func numberValue(_ *lowerer, v *node, _ at, p string) (kwResult, error) {
	if v.k == kNumber {
		return keep(v), nil
	}
	return kwResult{}, invalid(p, "must be a number.")
}

func stringValue(_ *lowerer, v *node, _ at, p string) (kwResult, error) {
	if v.k == kString {
		return keep(v), nil
	}
	return kwResult{}, invalid(p, "must be a string.")
}

// checkID keeps $id at the root; under lower a nested $id is removed: only
// references into the root's own definitions are inlined, so it names nothing
// the lowered schema uses.
func checkID(l *lowerer, v *node, a at, p string) (kwResult, error) {
	r, err := stringValue(l, v, a, p)
	if err != nil || a.root || l.opts.Policy == PolicyStrict {
		return r, err
	}
	return kwResult{}, nil
}

func boolValue(_ *lowerer, v *node, _ at, p string) (kwResult, error) {
	if v.k == kBool {
		return keep(v), nil
	}
	return kwResult{}, invalid(p, "must be a boolean.")
}

func anyValue(_ *lowerer, v *node, _ at, _ string) (kwResult, error) { return keep(v), nil }
