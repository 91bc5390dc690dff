package toolschema

import (
	"errors"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Schema is a compiled lowered schema, used to validate the arguments the
// upstream produced for a tool call, or a structured answer. It understands
// exactly the bounded vocabulary (the only keywords a lowered schema has)
// plus the assertions a Validating lowering keeps: format, pattern,
// propertyNames and schema-valued additionalProperties. Descriptive keywords
// are ignored.
type Schema struct {
	root     *node
	patterns map[*node]*regexp.Regexp // by the schema object that has the pattern
}

// Compile reads a lowered schema. nil or empty text is the schema the gateway
// sends for a tool without parameters: any object.
func Compile(lowered []byte) (*Schema, error) {
	if len(strings.TrimSpace(string(lowered))) == 0 {
		return &Schema{root: newObject([]member{{"type", newString("object")}})}, nil
	}
	n, err := parse(lowered)
	if err != nil || n.k != kObject {
		return nil, invalid("", "must be a JSON schema object.")
	}
	s := &Schema{root: n}
	if err := s.prepare(n, 0); err != nil {
		return nil, err
	}
	return s, nil
}

// prepare compiles the patterns of every subschema and refuses a format the
// validator does not check, so that validation never meets an assertion it
// cannot decide.
func (s *Schema) prepare(n *node, depth int) error {
	if n.k != kObject {
		return nil
	}
	if depth > 2*MaxDepth {
		return invalid("", "is nested too deeply.")
	}
	if f := n.get("format"); f != nil {
		if _, known := CheckFormat(f.s, ""); f.k != kString || !known {
			return invalid("", "has a format that cannot be verified.")
		}
	}
	if p := n.get("pattern"); p != nil {
		re, ok := CompilePattern(p.s)
		if p.k != kString || !ok {
			return invalid("", "has a pattern that cannot be verified.")
		}
		if s.patterns == nil {
			s.patterns = map[*node]*regexp.Regexp{}
		}
		s.patterns[n] = re
	}
	subs := []*node{n.get("items"), n.get("additionalProperties"), n.get("propertyNames")}
	if props := n.get("properties"); props != nil && props.k == kObject {
		for _, m := range props.obj {
			subs = append(subs, m.val)
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if l := n.get(k); l != nil {
			subs = append(subs, l.arr...)
		}
	}
	for _, sub := range subs {
		if sub != nil {
			if err := s.prepare(sub, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// ArgumentsError says where a set of arguments fails its schema: Path is a
// path inside the arguments ("" for the whole object, ".city", "[2]"; keys
// that are not plain identifiers are shown as "?") and Keyword the failing
// keyword. It never carries a value.
type ArgumentsError struct {
	Call    int // the index of the tool call in its turn, set by the caller
	Path    string
	Keyword string
}

func (e *ArgumentsError) Error() string { return "toolschema: " + e.PublicDetail() }

// PublicDetail is the sentence a client may see: the call index, the path
// and the keyword, never a value.
func (e *ArgumentsError) PublicDetail() string {
	return "tool_calls[" + strconv.Itoa(e.Call) + "].function.arguments" + e.Path +
		": does not match the tool's schema (" + e.Keyword + ")."
}

// Validate checks one argument string (a JSON object) against the schema.
func (s *Schema) Validate(arguments string) error {
	v, err := parse([]byte(arguments))
	if err != nil || v.k != kObject {
		return &ArgumentsError{Keyword: "type"}
	}
	return s.validate(s.root, v, "")
}

// ErrNotJSON is ValidateValue's answer to text that is not exactly one JSON
// value (surrounding JSON white space aside), or that repeats a key in an
// object.
var ErrNotJSON = errors.New("toolschema: not exactly one JSON value")

// ErrLoneSurrogate is ValidateValue's answer to JSON text with a lone
// surrogate escape ("\ud800" not followed by a low one, or a low one alone)
// in a string: it would be checked as U+FFFD, but clients decode it
// differently, so no schema can vouch for it.
var ErrLoneSurrogate = errors.New("toolschema: a lone surrogate escape in a string")

// ValidateValue checks a JSON text of any type against the schema: ErrNotJSON
// when it is not one JSON value, ErrLoneSurrogate when one of its strings (a
// key or a value) holds a lone surrogate escape, else nil or an
// *ArgumentsError (Call 0).
func (s *Schema) ValidateValue(text string) error {
	v, err := parseAnswer([]byte(text))
	if err == errLoneSurrogate {
		return ErrLoneSurrogate
	}
	if err != nil {
		return ErrNotJSON
	}
	return s.validate(s.root, v, "")
}

func fail(path, keyword string) error { return &ArgumentsError{Path: path, Keyword: keyword} }

func (c *Schema) validate(s, v *node, path string) error {
	if s.k == kBool {
		if s.b {
			return nil
		}
		return fail(path, "false")
	}
	if t := s.get("type"); t != nil && !typeMatches(t, v) {
		return fail(path, "type")
	}
	if c := s.get("const"); c != nil && !equal(c, v) {
		return fail(path, "const")
	}
	if e := s.get("enum"); e != nil && !inEnum(e, v) {
		return fail(path, "enum")
	}
	var err error
	switch v.k {
	case kNumber:
		err = c.validateNumber(s, v, path)
	case kString:
		err = c.validateString(s, v, path)
	case kArray:
		err = c.validateArray(s, v, path)
	case kObject:
		err = c.validateObject(s, v, path)
	}
	if err != nil {
		return err
	}
	return c.validateCombinators(s, v, path)
}

func typeMatches(t, v *node) bool {
	if t.k == kString {
		return hasType(t.s, v)
	}
	for _, it := range t.arr {
		if hasType(it.s, v) {
			return true
		}
	}
	return false
}

func hasType(t string, v *node) bool {
	switch t {
	case "null":
		return v.k == kNull
	case "boolean":
		return v.k == kBool
	case "string":
		return v.k == kString
	case "number":
		return v.k == kNumber
	case "integer":
		if v.k != kNumber {
			return false
		}
		d, ok := parseDecimal(v.s)
		return ok && d.isInt()
	case "array":
		return v.k == kArray
	case "object":
		return v.k == kObject
	}
	return false
}

func inEnum(e, v *node) bool {
	for _, it := range e.arr {
		if equal(it, v) {
			return true
		}
	}
	return false
}

// equal compares JSON values: numbers by value, objects regardless of order.
func equal(a, b *node) bool {
	if a.k != b.k {
		return false
	}
	switch a.k {
	case kNull:
		return true
	case kBool:
		return a.b == b.b
	case kString:
		return a.s == b.s
	case kNumber:
		x, ok1 := parseDecimal(a.s)
		y, ok2 := parseDecimal(b.s)
		return ok1 && ok2 && x.cmp(y) == 0
	case kArray:
		if len(a.arr) != len(b.arr) {
			return false
		}
		for i := range a.arr {
			if !equal(a.arr[i], b.arr[i]) {
				return false
			}
		}
		return true
	}
	if len(a.obj) != len(b.obj) {
		return false
	}
	for _, m := range a.obj {
		w := b.get(m.key)
		if w == nil || !equal(m.val, w) {
			return false
		}
	}
	return true
}

func (c *Schema) validateNumber(s, v *node, path string) error {
	x, ok := parseDecimal(v.s)
	if !ok {
		return fail(path, "type") // an exponent beyond any sensible range
	}
	bound := func(k string, okWhen func(c int) bool) error {
		b := s.get(k)
		if b == nil || b.k != kNumber {
			return nil
		}
		y, ok := parseDecimal(b.s)
		if !ok || !okWhen(x.cmp(y)) {
			return fail(path, k)
		}
		return nil
	}
	for _, c := range []struct {
		k  string
		ok func(int) bool
	}{
		{"minimum", func(c int) bool { return c >= 0 }},
		{"maximum", func(c int) bool { return c <= 0 }},
		{"exclusiveMinimum", func(c int) bool { return c > 0 }},
		{"exclusiveMaximum", func(c int) bool { return c < 0 }},
	} {
		if err := bound(c.k, c.ok); err != nil {
			return err
		}
	}
	if m := s.get("multipleOf"); m != nil && m.k == kNumber {
		y, ok := parseDecimal(m.s)
		if !ok || !x.multipleOf(y) {
			return fail(path, "multipleOf")
		}
	}
	return nil
}

// count reads a non-negative integer keyword; ok is false when absent.
func count(s *node, k string) (int64, bool) {
	n := s.get(k)
	if n == nil {
		return 0, false
	}
	return integer(n)
}

func (c *Schema) validateString(s, v *node, path string) error {
	runes := int64(utf8.RuneCountInString(v.s))
	if n, ok := count(s, "minLength"); ok && runes < n {
		return fail(path, "minLength")
	}
	if n, ok := count(s, "maxLength"); ok && runes > n {
		return fail(path, "maxLength")
	}
	if f := s.get("format"); f != nil {
		if ok, _ := CheckFormat(f.s, v.s); !ok {
			return fail(path, "format")
		}
	}
	if s.get("pattern") != nil {
		if re := c.patterns[s]; re == nil || !re.MatchString(v.s) {
			return fail(path, "pattern")
		}
	}
	return nil
}

func (c *Schema) validateArray(s, v *node, path string) error {
	size := int64(len(v.arr))
	if n, ok := count(s, "minItems"); ok && size < n {
		return fail(path, "minItems")
	}
	if n, ok := count(s, "maxItems"); ok && size > n {
		return fail(path, "maxItems")
	}
	if u := s.get("uniqueItems"); u != nil && u.k == kBool && u.b {
		seen := make(map[string]int, len(v.arr))
		for i, it := range v.arr {
			key := canonicalKey(it)
			if _, dup := seen[key]; dup {
				return fail(path+index(i), "uniqueItems")
			}
			seen[key] = i
		}
	}
	if items := s.get("items"); items != nil && items.k == kObject {
		for i, it := range v.arr {
			if err := c.validate(items, it, path+index(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Schema) validateObject(s, v *node, path string) error {
	size := int64(len(v.obj))
	if n, ok := count(s, "minProperties"); ok && size < n {
		return fail(path, "minProperties")
	}
	if n, ok := count(s, "maxProperties"); ok && size > n {
		return fail(path, "maxProperties")
	}
	if req := s.get("required"); req != nil {
		for _, r := range req.arr {
			if v.get(r.s) == nil {
				return fail(path+PathSegment(r.s), "required")
			}
		}
	}
	props := s.get("properties")
	closed := false
	ap := s.get("additionalProperties")
	if ap != nil && ap.k == kBool && !ap.b {
		closed = true
	}
	names := s.get("propertyNames")
	for _, m := range v.obj {
		if names != nil && names.k == kObject {
			if err := c.validate(names, newString(m.key), path+PathSegment(m.key)); err != nil {
				return fail(path+PathSegment(m.key), "propertyNames")
			}
		}
		var ps *node
		if props != nil {
			ps = props.get(m.key)
		}
		switch {
		case ps != nil:
			if err := c.validate(ps, m.val, path+PathSegment(m.key)); err != nil {
				return err
			}
		case closed:
			return fail(path+PathSegment(m.key), "additionalProperties")
		case ap != nil && ap.k == kObject:
			if err := c.validate(ap, m.val, path+PathSegment(m.key)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Schema) validateCombinators(s, v *node, path string) error {
	if all := s.get("allOf"); all != nil {
		for _, sub := range all.arr {
			if err := c.validate(sub, v, path); err != nil {
				return err
			}
		}
	}
	if anyOf := s.get("anyOf"); anyOf != nil {
		ok := false
		for _, sub := range anyOf.arr {
			if c.validate(sub, v, path) == nil {
				ok = true
				break
			}
		}
		if !ok {
			return fail(path, "anyOf")
		}
	}
	if oneOf := s.get("oneOf"); oneOf != nil {
		matched := 0
		for _, sub := range oneOf.arr {
			if c.validate(sub, v, path) == nil {
				matched++
			}
		}
		if matched != 1 {
			return fail(path, "oneOf")
		}
	}
	return nil
}

// canonicalKey renders a value so that equal values (equal) have equal keys.
func canonicalKey(n *node) string {
	switch n.k {
	case kNumber:
		if d, ok := parseDecimal(n.s); ok {
			return "n" + d.String()
		}
		return "n?" + n.s
	case kArray:
		var b strings.Builder
		b.WriteByte('[')
		for _, it := range n.arr {
			b.WriteString(canonicalKey(it))
			b.WriteByte(',')
		}
		b.WriteByte(']')
		return b.String()
	case kObject:
		keys := sortedKeys(n)
		var b strings.Builder
		b.WriteByte('{')
		for _, k := range keys {
			b.WriteString(quote(k))
			b.WriteByte(':')
			b.WriteString(canonicalKey(n.get(k)))
			b.WriteByte(',')
		}
		b.WriteByte('}')
		return b.String()
	}
	return string(encode(n))
}

// decimal is an exact JSON number: (-1)^neg × digits × 10^exp, with digits
// free of leading and trailing zeros ("" is zero). Comparisons never build
// the number, so an argument such as 1e999999999 costs nothing.
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// maxExponent bounds the exponents accepted in arguments; beyond it a number
// is refused rather than compared approximately.
const maxExponent = 1 << 20

func parseDecimal(lit string) (decimal, bool) {
	var d decimal
	s := lit
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		e, err := strconv.Atoi(strings.TrimPrefix(expText, "+"))
		if err != nil || e > maxExponent || e < -maxExponent {
			return decimal{}, false
		}
		d.exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	d.exp -= len(frac)
	trimmed := strings.TrimLeft(digits, "0")
	n := len(trimmed)
	trimmed = strings.TrimRight(trimmed, "0")
	d.exp += n - len(trimmed)
	d.digits = trimmed
	if d.digits == "" {
		d.neg, d.exp = false, 0
	}
	return d, true
}

func (d decimal) String() string {
	s := d.digits + "e" + strconv.Itoa(d.exp)
	if d.neg {
		return "-" + s
	}
	return s
}

func (d decimal) isInt() bool { return d.exp >= 0 }

// cmp returns -1, 0 or +1.
func (d decimal) cmp(e decimal) int {
	a, b := d.sign(), e.sign()
	switch {
	case a != b && a < b:
		return -1
	case a != b:
		return 1
	case a == 0:
		return 0
	}
	return a * d.magnitudeCmp(e)
}

func (d decimal) sign() int {
	switch {
	case d.digits == "":
		return 0
	case d.neg:
		return -1
	}
	return 1
}

func (d decimal) magnitudeCmp(e decimal) int {
	// The position of the leading digit decides first.
	if a, b := len(d.digits)+d.exp, len(e.digits)+e.exp; a != b {
		if a < b {
			return -1
		}
		return 1
	}
	x, y := d.digits, e.digits
	for len(x) < len(y) {
		x += "0"
	}
	for len(y) < len(x) {
		y += "0"
	}
	return strings.Compare(x, y)
}

// maxScale bounds the power of ten multipleOf materializes; beyond it the
// check fails closed.
const maxScale = 4096

// multipleOf reports whether d / m is an integer (m > 0).
func (d decimal) multipleOf(m decimal) bool {
	if m.digits == "" {
		return false
	}
	if d.digits == "" {
		return true
	}
	k := d.exp - m.exp // d/m = (dd/md) × 10^k
	if k > maxScale || k < -maxScale || len(d.digits) > maxScale || len(m.digits) > maxScale {
		return false
	}
	num, _ := new(big.Int).SetString(d.digits, 10)
	den, _ := new(big.Int).SetString(m.digits, 10)
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(k))), nil)
	if k >= 0 {
		num.Mul(num, p)
	} else {
		den.Mul(den, p)
	}
	return new(big.Int).Mod(num, den).Sign() == 0
}

func abs(k int) int {
	if k < 0 {
		return -k
	}
	return k
}
