package toolschema

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pmgate/pmgate/domain/errs"
)

// Policy says what the ingress does with a tool schema keyword outside the
// bounded vocabulary (TOOL_SCHEMA_POLICY).
type Policy string

// The two policies.
const (
	// PolicyLower lowers what can be lowered faithfully and refuses the rest.
	PolicyLower Policy = "lower"
	// PolicyStrict refuses every keyword outside the bounded vocabulary.
	PolicyStrict Policy = "strict"
)

// SafeValue marks policies as safe for logs.
func (Policy) SafeValue() {}

// DefaultPolicy is the policy when TOOL_SCHEMA_POLICY is unset.
const DefaultPolicy = PolicyLower

// ParsePolicy reads a policy name; only the exact names are accepted.
func ParsePolicy(s string) (Policy, bool) {
	switch p := Policy(s); p {
	case PolicyLower, PolicyStrict:
		return p, true
	}
	return "", false
}

// Limits.
const (
	// MaxDepth bounds the nesting of a schema, counted after inlining: each
	// properties/items/anyOf/oneOf/allOf step is one level.
	MaxDepth = 32
	// DefaultMaxBytes bounds the compact size of one lowered schema, so that
	// inlining a $ref DAG (which can grow exponentially) cannot blow up. A
	// schema larger than half of this as sent may grow to twice its size.
	DefaultMaxBytes = 256 << 10
	// maxNoteBytes bounds the rendered value of one note, and maxNotesBytes all
	// notes appended to one description.
	maxNoteBytes  = 256
	maxNotesBytes = 1024
)

// notesLabel starts the text appended to a description.
const notesLabel = "Schema notes: "

// Options configure Lower.
type Options struct {
	Policy Policy // "" means DefaultPolicy
	// WidenCombinators also removes anyOf, oneOf and allOf (after lowering
	// their alternatives), rendering them as text in the description. The
	// (sub)schema then accepts every value its other keywords accept: this is
	// a widening, meant for an upstream that refuses combinators. Arguments
	// are then validated against the widened schema.
	WidenCombinators bool
	MaxBytes         int // 0 means DefaultMaxBytes
	// Output lowers the schema of a structured output rather than a tool's
	// parameters: the root may describe any JSON value, not only an object.
	Output bool
	// Validating keeps what the validator can check instead of describing
	// it: format (only the formats CheckFormat knows), pattern (only an
	// expression that means the same in Go as in ECMAScript), propertyNames
	// and schema-valued additionalProperties. The result is for Compile, never
	// for the upstream; what cannot be checked is refused.
	Validating bool
}

// Problem is the refusal of a schema. Code is errs.UnsupportedParameter or
// errs.InvalidRequest; Path is the full parameter path (client-chosen names
// appear only when they are plain identifiers); Detail is a fixed sentence
// that never contains client content.
type Problem struct {
	Code   errs.Code
	Path   string
	Detail string
}

func (p *Problem) Error() string { return string(p.Code) + ": " + p.Path + ": " + p.Detail }

func unsupported(path, detail string) error {
	return &Problem{Code: errs.UnsupportedParameter, Path: path, Detail: detail}
}

func invalid(path, detail string) error {
	return &Problem{Code: errs.InvalidRequest, Path: path, Detail: detail}
}

// Lower checks a tool's parameters schema (the raw JSON text the caller sent)
// under opts and returns the schema to send upstream, which uses only the
// bounded vocabulary. path is the parameter path of the schema, e.g.
// "tools[3].function.parameters". Under PolicyStrict, and whenever nothing
// needs lowering, the result is raw itself. A refusal is a *Problem.
func Lower(raw []byte, path string, opts Options) ([]byte, error) {
	if opts.Policy == "" {
		opts.Policy = DefaultPolicy
	}
	n, err := parse(raw)
	switch err {
	case nil:
	case errDuplicateKey:
		return nil, invalid(path, "repeats a key in one object.")
	default:
		return nil, invalid(path, "must be a JSON schema object.")
	}
	bound := opts.MaxBytes
	if bound == 0 {
		bound = DefaultMaxBytes
	}
	// Notes can make a lowered schema somewhat larger than the one sent, so a
	// large schema keeps room to grow; a DAG grows past any constant factor.
	l := &lowerer{opts: opts, rootPath: path, root: n, limit: max(bound, 2*len(raw)), defs: map[string]*defState{}}
	res, err := l.schema(n, at{path: path, root: true})
	if err != nil {
		return nil, err
	}
	if res.n == n {
		return raw, nil
	}
	return encode(res.n), nil
}

type lowerer struct {
	opts     Options
	rootPath string
	root     *node
	limit    int
	defs     map[string]*defState // by JSON pointer
}

type defState struct {
	busy, done bool
	res        result
	err        error
}

// result is a lowered (sub)schema: the node (the input node itself when
// unchanged) and its height in schema levels.
type result struct {
	n      *node
	height int
}

// at is where a (sub)schema sits: its path, depth and whether it is the
// tool's parameters schema itself.
type at struct {
	path  string
	depth int
	root  bool
	// scoped: a nested $id changes the base of references below it; they are
	// refused rather than resolved against the wrong document.
	scoped bool
}

func (a at) sub(path string) at { return at{path: path, depth: a.depth + 1, scoped: a.scoped} }

// Identifier reports whether s matches ^[A-Za-z0-9_-]{1,64}$: the rule of
// tool names, and of the keys shown verbatim in a parameter path.
func Identifier(s string) bool { return IdentifierUpTo(s, 64) }

// IdentifierUpTo reports whether s matches ^[A-Za-z0-9_-]{1,max}$.
func IdentifierUpTo(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// PathSegment renders one client-chosen key (a property name or a keyword)
// as a param path segment. Plain identifiers appear as they are; anything
// else is shown as "?" so that a refusal never echoes arbitrary client text.
// The ingress uses it for every path it names.
func PathSegment(key string) string {
	if Identifier(key) || (len(key) > 1 && key[0] == '$' && Identifier(key[1:])) {
		return "." + key
	}
	return ".?"
}

func index(i int) string { return "[" + strconv.Itoa(i) + "]" }

var (
	// described and removed are derived from the keyword table.
	described = map[string]bool{}
	removed   = map[string]bool{}
	// refusedDetail explains refusals of keywords that cannot be lowered.
	refusedDetail = map[string]string{}
)

func init() {
	for _, k := range keywords {
		if k.Form != "" {
			continue
		}
		switch k.Lower {
		case Described:
			described[k.Name] = true
		case Removed:
			removed[k.Name] = true
		case Refused:
			refusedDetail[k.Name] = "this keyword changes which arguments are valid and cannot be lowered."
		}
	}
	for _, k := range []string{"$dynamicRef", "$recursiveRef"} {
		refusedDetail[k] = "dynamic references cannot be inlined."
	}
}

// schema lowers one (sub)schema.
func (l *lowerer) schema(n *node, a at) (result, error) {
	if a.depth > MaxDepth {
		return result{}, unsupported(a.path, "the schema is nested deeper than 32 levels.")
	}
	switch n.k {
	case kObject:
	case kBool:
		return result{}, unsupported(a.path, "boolean schemas are not supported; use an object schema.")
	default:
		return result{}, invalid(a.path, "must be a schema object.")
	}
	if a.root && !l.opts.Output && !l.objectType(n.get("type")) {
		return result{}, unsupported(a.path+".type", "tool parameters must be an object schema.")
	}
	if !a.root && n.get("$id") != nil {
		a.scoped = true
	}
	if l.opts.Policy != PolicyStrict {
		if ref := n.get("$ref"); ref != nil {
			return l.withRef(n, ref, a)
		}
	}
	return l.object(n, a)
}

// objectType reports whether the type keyword of a tool's parameters (nil
// when absent) allows only objects. Under lower the one-element list
// ["object"], which means the same, is accepted too.
func (l *lowerer) objectType(t *node) bool {
	switch {
	case t == nil:
		return true
	case t.k == kString:
		return t.s == "object"
	}
	return l.opts.Policy != PolicyStrict && t.k == kArray && len(t.arr) == 1 && t.arr[0].k == kString && t.arr[0].s == "object"
}

// note is one piece of text appended to a description.
type note struct{ key, text string }

// kwResult is what one keyword becomes: repl nil removes it, repl == the input
// keeps it. notes are appended to the description of the schema.
type kwResult struct {
	repl   *node
	notes  []note
	height int
}

// object lowers the keywords of one schema object, in sorted order so that
// the first refusal is deterministic. Output keeps the caller's order.
func (l *lowerer) object(n *node, a at) (result, error) {
	keys := make([]string, len(n.obj))
	for i, m := range n.obj {
		keys[i] = m.key
	}
	sort.Strings(keys)
	out := map[string]kwResult{}
	var notes []note
	changed := false
	for _, k := range keys {
		v := n.get(k)
		p := a.path + PathSegment(k)
		var r kwResult
		switch check, vocab := vocabulary[k]; {
		case vocab:
			var err error
			if r, err = check(l, v, a, p); err != nil {
				return result{}, err
			}
		case l.opts.Validating && assertions[k] != nil:
			var err error
			if r, err = assertions[k](l, v, a, p); err != nil {
				return result{}, err
			}
		case l.opts.Policy == PolicyStrict:
			return result{}, unsupported(p, "this schema keyword is not supported.")
		case described[k] || strings.HasPrefix(k, "x-"):
			r.notes = []note{{k, render(v)}}
		case removed[k]:
			if (k == "$defs" || k == "definitions") && v.k != kObject {
				return result{}, invalid(p, "must be an object of schemas.")
			}
		case (k == "unevaluatedProperties" || k == "unevaluatedItems") && v.k == kBool && v.b:
		default:
			d, ok := refusedDetail[k]
			if !ok {
				d = "this schema keyword is not supported."
			}
			return result{}, unsupported(p, d)
		}
		if r.repl != v || len(r.notes) > 0 {
			changed = true
		}
		notes = append(notes, r.notes...)
		out[k] = r
	}
	if l.opts.WidenCombinators {
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			if r, ok := out[k]; ok {
				notes = append(notes, note{k, string(encode(r.repl))})
				out[k] = kwResult{}
				changed = true
			}
		}
	}
	height := 0
	for _, r := range out {
		height = max(height, r.height)
	}
	if !changed {
		return result{n: n, height: height}, nil
	}
	ms := make([]member, 0, len(n.obj)+1)
	for _, m := range n.obj {
		if r := out[m.key]; r.repl != nil {
			ms = append(ms, member{m.key, r.repl})
		}
	}
	ms = withNotes(ms, notes)
	res := result{n: newObject(ms), height: height}
	return res, l.checkSize(res, a.path)
}

func (l *lowerer) checkSize(r result, path string) error {
	if r.n.size > l.limit {
		return unsupported(path, "the lowered schema would be larger than "+strconv.Itoa(l.limit)+" bytes.")
	}
	return nil
}

// render is the text of a note's value: a string as it is, anything else as
// compact JSON.
func render(v *node) string {
	if v.k == kString {
		return v.s
	}
	return string(encode(v))
}

// truncate cuts s to at most n bytes at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// withNotes appends the notes, sorted by keyword, to the description member
// (creating it at the end when absent). The wording is fixed:
// "Schema notes: format: uri; pattern: ^a$".
func withNotes(ms []member, notes []note) []member {
	if len(notes) == 0 {
		return ms
	}
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].key < notes[j].key })
	parts := make([]string, len(notes))
	for i, nt := range notes {
		parts[i] = nt.key + ": " + truncate(nt.text, maxNoteBytes)
	}
	text := notesLabel + truncate(strings.Join(parts, "; "), maxNotesBytes)
	for i, m := range ms {
		if m.key == "description" {
			if m.val.s != "" {
				text = m.val.s + "\n" + text
			}
			ms[i] = member{"description", newString(text)}
			return ms
		}
	}
	return append(ms, member{"description", newString(text)})
}

// metaData keywords describe a schema without constraining it; at a $ref the
// caller's own value wins over the definition's.
var metaData = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "$schema": true, "$id": true,
}

// withRef inlines a $ref and lowers its sibling keywords. Under 2020-12 the
// siblings of a $ref apply together with the referenced schema, so the result
// must accept exactly what both accept: their keywords are merged when they
// cannot interact, and otherwise the definition joins the siblings' allOf.
func (l *lowerer) withRef(n, ref *node, a at) (result, error) {
	p := a.path + ".$ref"
	if ref.k != kString {
		return result{}, invalid(p, "must be a string.")
	}
	if a.scoped {
		return result{}, unsupported(p, "a $ref below a nested $id cannot be inlined.")
	}
	target, defPath, ok := l.resolve(ref.s)
	if !ok {
		return result{}, unsupported(p, "only references into #/$defs or #/definitions of this schema can be inlined.")
	}
	if target == nil {
		return result{}, invalid(p, "points at nothing in this schema.")
	}
	st := l.defs[ref.s]
	if st == nil {
		st = &defState{}
		l.defs[ref.s] = st
	}
	if st.busy {
		return result{}, unsupported(p, "a recursive reference cannot be inlined.")
	}
	if !st.done {
		st.busy = true
		st.res, st.err = l.schema(target, at{path: l.rootPath + defPath})
		st.busy, st.done = false, true
	}
	if st.err != nil {
		return result{}, st.err
	}
	def := st.res
	rest := make([]member, 0, len(n.obj))
	for _, m := range n.obj {
		if m.key != "$ref" {
			rest = append(rest, m)
		}
	}
	out := def
	if len(rest) > 0 {
		sib, err := l.object(newObject(rest), at{path: a.path, depth: a.depth, root: a.root, scoped: a.scoped})
		if err != nil {
			return result{}, err
		}
		out = combine(sib, def, l.opts.WidenCombinators)
	}
	if a.depth+out.height > MaxDepth {
		return result{}, unsupported(p, "inlining this reference nests the schema deeper than 32 levels.")
	}
	if a.root && !l.opts.Output && !l.objectType(out.n.get("type")) {
		return result{}, unsupported(p, "tool parameters must be an object schema.")
	}
	if out.n == n { // cannot happen: a $ref is always replaced
		out.n = newObject(out.n.obj)
	}
	return out, l.checkSize(out, a.path)
}

// resolve finds the target of a reference "#/$defs/…" or "#/definitions/…"
// (a JSON pointer with ~0 and ~1 escapes). ok is false for any other form;
// target is nil when the pointer names nothing. defPath is the target's
// parameter path relative to the root.
func (l *lowerer) resolve(ref string) (target *node, defPath string, ok bool) {
	rest, found := strings.CutPrefix(ref, "#/")
	if !found {
		return nil, "", false
	}
	parts := strings.Split(rest, "/")
	if parts[0] != "$defs" && parts[0] != "definitions" || len(parts) < 2 {
		return nil, "", false
	}
	cur := l.root
	for i, raw := range parts {
		tok := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(raw, "~1", ""), "~0", ""), "~") || strings.Contains(raw, "%") {
			return nil, "", false // an invalid escape, or URI percent-encoding
		}
		switch cur.k {
		case kObject:
			cur = cur.get(tok)
			if i == 0 {
				defPath += "." + tok
			} else {
				defPath += PathSegment(tok)
			}
		case kArray:
			j, err := strconv.Atoi(tok)
			if err != nil || j < 0 || j >= len(cur.arr) || strconv.Itoa(j) != tok {
				return nil, "", true
			}
			cur = cur.arr[j]
			defPath += index(j)
		default:
			return nil, "", true
		}
		if cur == nil {
			return nil, "", true
		}
	}
	return cur, defPath, true
}

// combine merges the lowered siblings of a $ref with the lowered definition.
func combine(sib, def result, widen bool) result {
	if def.n.k != kObject || mayInteract(sib.n, def.n) {
		ms := make([]member, 0, len(sib.n.obj)+1)
		var all []*node
		for _, m := range sib.n.obj {
			if m.key == "allOf" {
				all = append(all, m.val.arr...)
				continue
			}
			ms = append(ms, m)
		}
		if widen {
			// The conjunction needs an allOf, which widening removes: the
			// definition is described instead of enforced.
			return result{n: newObject(withNotes(ms, []note{{"allOf", string(encode(newArray(append(all, def.n))))}})), height: sib.height}
		}
		ms = append(ms, member{"allOf", newArray(append(all, def.n))})
		return result{n: newObject(ms), height: max(sib.height, def.height+1)}
	}
	ms := append([]member(nil), def.n.obj...)
	for _, m := range sib.n.obj {
		replaced := false
		for i := range ms {
			if ms[i].key != m.key {
				continue
			}
			replaced = true
			// The caller's description at the use site comes first; the
			// definition's (with its notes) follows, so no note is lost.
			if d := ms[i].val; m.key == "description" && d.k == kString && d.s != "" && d.s != m.val.s {
				ms[i] = member{m.key, newString(m.val.s + "\n" + d.s)}
			} else {
				ms[i] = m
			}
		}
		if !replaced {
			ms = append(ms, m)
		}
	}
	return result{n: newObject(ms), height: max(sib.height, def.height)}
}

// mayInteract reports whether merging the keywords of a and b into one object
// could accept something that one of them refuses: a constraining keyword in
// both, or properties on one side with additionalProperties on the other.
func mayInteract(a, b *node) bool {
	for _, m := range a.obj {
		if !metaData[m.key] && b.get(m.key) != nil {
			return true
		}
	}
	has := func(n *node, k string) bool { return n.get(k) != nil }
	return has(a, "properties") && has(b, "additionalProperties") || has(b, "properties") && has(a, "additionalProperties")
}

// integer reads a JSON number literal with an integral value.
func integer(v *node) (int64, bool) {
	if v.k != kNumber {
		return 0, false
	}
	if i, err := strconv.ParseInt(v.s, 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(v.s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}
