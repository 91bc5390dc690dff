package canon_test

import (
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

func TestCanonicalNumbersAreSpelledByValue(t *testing.T) {
	big19 := "1" + strings.Repeat("0", 19) // 10^19: beyond int64 arithmetic
	cases := []struct{ in, want string }{
		{"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"10e-1", "1"}, {"1E+0", "1"}, {"0.1e1", "1"},
		{"0", "0"}, {"-0", "0"}, {"0.000", "0"}, {"-0.0e-7", "0"}, {"0e99999999999999999999999", "0"},
		{"100", "1e2"}, {"1.50", "15e-1"}, {"0.5", "5e-1"}, {"-12.340e-5", "-1234e-7"}, {"1E+3", "1e3"},
		{"0.001", "1e-3"}, {"1e007", "1e7"}, {"-1", "-1"}, {"123456789012345678901234567890", "12345678901234567890123456789e1"},
		{"1e0000000000000000000000001", "1e1"},
		{"1e" + big19, "1e" + big19},
		{"1.5e" + big19, "15e9999999999999999999"},
		{"100e-" + big19, "1e-9999999999999999998"},
		{"0.1e-" + big19, "1e-10000000000000000001"},
		{"0.0000001e" + big19, "1e9999999999999999993"},
		{"1000e" + big19, "1e10000000000000000003"},
		{"9e99999999999999999999", "9e99999999999999999999"},
		{"1.0e99999999999999999999", "1e99999999999999999999"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			is := is.New(t)
			got, ok := canon.CanonicalNumber(c.in)
			is.True(ok)           // a JSON number
			is.Equal(got, c.want) // spelled by value
			_, err := canon.ParseJSON([]byte(got))
			is.NoErr(err) // the canonical spelling is itself a JSON number
		})
	}
	for _, bad := range []string{"", "-", "01", "1.", ".5", "+1", "1e", "0x10", "1 ", "NaN"} {
		_, ok := canon.CanonicalNumber(bad)
		is.New(t).True(!ok) // not a JSON number literal
	}
}

func TestAHugeExponentCostsItsLengthOnly(t *testing.T) {
	is := is.New(t)
	exp := "9" + strings.Repeat("9", 200_000)
	got, ok := canon.CanonicalNumber("0.000100e" + exp)
	is.True(ok)
	// 0.000100 = 1e-4, so the power is exp-4: 999…995.
	is.Equal(got, "1e"+exp[:len(exp)-1]+"5")
	got, ok = canon.CanonicalNumber("1000e-" + exp)
	is.True(ok)
	is.Equal(got, "1e-"+exp[:len(exp)-1]+"6") // -(exp) + 3
}

// genLiteral draws a number literal with a bounded exponent (so big.Rat can
// check it); respellNumber draws another literal of the same value.
var genLiteral = rapid.StringMatching(`-?(0|[1-9][0-9]{0,12})(\.[0-9]{1,8})?([eE][+-]?[0-9]{1,2})?`)

func ratOf(t *rapid.T, lit string) *big.Rat {
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		t.Fatalf("big.Rat refused %q", lit)
	}
	return r
}

// respellNumber writes the value of lit with another mantissa/exponent split,
// padding zeros and exponent spelling.
func respellNumber(t *rapid.T, lit string) string {
	r := ratOf(t, lit)
	if r.Sign() == 0 {
		return rapid.SampledFrom([]string{"0", "-0", "0.0", "0e5", "-0.000E-3"}).Draw(t, "zero")
	}
	c, _ := canon.CanonicalNumber(lit)
	neg := strings.HasPrefix(c, "-")
	c = strings.TrimPrefix(c, "-")
	digits, power := c, 0
	if i := strings.IndexByte(c, 'e'); i >= 0 {
		digits = c[:i]
		fmt.Sscan(c[i+1:], &power)
	}
	// value = digits × 10^power; add k trailing zeros and a point p digits from the end.
	k := rapid.IntRange(0, 3).Draw(t, "zeros")
	digits += strings.Repeat("0", k)
	power -= k
	p := rapid.IntRange(0, len(digits)+2).Draw(t, "point")
	mant := digits
	if p > 0 {
		for len(mant) <= p {
			mant = "0" + mant
		}
		mant = mant[:len(mant)-p] + "." + mant[len(mant)-p:]
	}
	power += p
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(mant)
	if power != 0 || rapid.Bool().Draw(t, "explicit exponent") {
		b.WriteString(rapid.SampledFrom([]string{"e", "E"}).Draw(t, "e"))
		if power >= 0 && rapid.Bool().Draw(t, "plus") {
			b.WriteByte('+')
		}
		fmt.Fprintf(&b, "%d", power)
	}
	return b.String()
}

func TestCanonicalNumbersAgreeWithExactRationals(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := genLiteral.Draw(t, "a"), genLiteral.Draw(t, "b")
		ca, _ := canon.CanonicalNumber(a)
		cb, _ := canon.CanonicalNumber(b)
		if (ca == cb) != (ratOf(t, a).Cmp(ratOf(t, b)) == 0) {
			t.Fatalf("%q→%q and %q→%q disagree with their exact values", a, ca, b, cb)
		}
		if ratOf(t, ca).Cmp(ratOf(t, a)) != 0 {
			t.Fatalf("%q→%q changed the value", a, ca)
		}
		r := respellNumber(t, a)
		if cr, _ := canon.CanonicalNumber(r); cr != ca {
			t.Fatalf("respelling %q as %q gave %q, want %q", a, r, cr, ca)
		}
	})
}

func TestFormOfTellsTheTranscriptForms(t *testing.T) {
	is := is.New(t)
	v1, err := canon.TranscriptHash(transcript())
	is.NoErr(err)
	v2, err := canon.TranscriptHashV2(transcript(), nil, nil)
	is.NoErr(err)
	is.Equal(canon.FormOf(v1), canon.TranscriptExact)  // sha256:…
	is.Equal(canon.FormOf(v2), canon.TranscriptValues) // transcript.v2:sha256:…
	is.True(strings.HasPrefix(v2, "transcript.v2:sha256:"))
	is.Equal(len(v2), len("transcript.v2:sha256:")+64)
	is.Equal(canon.FormOf(""), canon.TranscriptUnknown)
	is.Equal(canon.FormOf("md5:00"), canon.TranscriptUnknown)
	is.True(v1 != strings.TrimPrefix(v2, "transcript.v2:")) // another kind, another preimage
}

func TestSchemaDefaultsFollowPropertiesChainsOnly(t *testing.T) {
	is := is.New(t)
	schema := `{"type":"object","default":{"ignored":true},"properties":{
		"replace_all":{"type":"boolean","default":false},
		"n":{"type":"number","default":1.0},
		"opts":{"type":"object","properties":{"depth":{"default":3},"deep":{"properties":{"x":{"default":"y"}}}}},
		"alt":{"anyOf":[{"default":1}]},
		"list":{"items":{"properties":{"z":{"default":0}}}},
		"plain":{"type":"string"},
		"t":true}}`
	d, err := canon.SchemaDefaults([]byte(schema))
	is.NoErr(err)
	issued := issuedArgs
	accept := []string{
		`{"path":"a","opts":{"deep":{}},"list":[{}],"replace_all":false}`,
		`{"path":"a","opts":{"deep":{}},"list":[{}],"n":1}`,
		`{"path":"a","opts":{"deep":{},"depth":3e0},"list":[{}]}`,
		`{"path":"a","opts":{"deep":{"x":"y"}},"list":[{}]}`,
		`{"path":"a","opts":{"deep":{"x":"y"},"depth":3},"list":[{}],"n":10e-1,"replace_all":false}`,
	}
	refuse := []string{
		`{"path":"a","opts":{"deep":{}},"list":[{}],"replace_all":true}`, // another value than the default
		`{"path":"a","opts":{"deep":{}},"list":[{}],"alt":1}`,            // anyOf contributes no default
		`{"path":"a","opts":{"deep":{}},"list":[{"z":0}]}`,               // items contribute no default
		`{"path":"a","opts":{"deep":{}},"list":[{}],"plain":""}`,         // no default at all
		`{"path":"a","opts":{"deep":{}},"list":[{}],"ignored":true}`,     // the root default is not a property default
		`{"path":"a","opts":{"deep":{},"x":"y"},"list":[{}]}`,            // x's default is one level deeper
	}
	admitted := hashOne(t, issued, nil, false)
	defaults := canon.DefaultsByTool{"edit": d}
	for _, e := range accept {
		is.Equal(hashOne(t, e, defaults, true), admitted) // echo-added defaults are dropped
	}
	for _, e := range refuse {
		is.True(hashOne(t, e, defaults, true) != admitted) // nothing else is relaxed
	}
	none, err := canon.SchemaDefaults(nil)
	is.NoErr(err)
	is.True(none == nil) // no parameters, no defaults
	_, err = canon.SchemaDefaults([]byte(`{"properties":`))
	is.True(errs.Has(err, errs.InvalidRequest)) // invalid schema JSON is refused
}

const echoID = "call_pmn_ECHOECHOECHOECHOECHOECHOECHOECHO"

// issuedTranscript is a user question and one assistant call of tool "edit"
// with the given argument string.
func issuedTranscript(id, name, args string) []chat.Message {
	return []chat.Message{
		{Role: chat.RoleUser, Content: ptr("edit it")},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: id, Name: name, Arguments: args}}},
	}
}

// hashOne hashes the one-call transcript with args; as an echo it drops
// defaults relative to issuedArgs (the issued string stored in the record).
func hashOne(t *testing.T, args string, defaults canon.DefaultsByTool, echo bool) string {
	t.Helper()
	return hashEcho(t, issuedTranscript(echoID, "edit", args), defaults, echo)
}

var issuedArgs = `{"path":"a","opts":{"deep":{}},"list":[{}]}`

func hashEcho(t *testing.T, msgs []chat.Message, defaults canon.DefaultsByTool, echo bool) string {
	t.Helper()
	var issued []canon.IssuedCall
	if echo {
		issued = []canon.IssuedCall{{ID: echoID, Name: "edit", Arguments: issuedArgs}}
	}
	return echoHashBothWays(t, msgs, defaults, issued)
}

// fatalfer is the part of *testing.T and *rapid.T the hash helper needs.
type fatalfer interface {
	Helper()
	Fatalf(format string, args ...any)
}

// echoHashBothWays returns TranscriptHashV2(msgs, defaults, issued) after
// checking that the prepared path (PrepareEcho, then Hash twice) agrees.
func echoHashBothWays(t fatalfer, msgs []chat.Message, defaults canon.DefaultsByTool, issued []canon.IssuedCall) string {
	t.Helper()
	want, err := canon.TranscriptHashV2(msgs, defaults, issued)
	if err != nil {
		t.Fatalf("whole transcript: %v", err)
	}
	e, err := canon.PrepareEcho(msgs, defaults)
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	for range 2 {
		if got, err := e.Hash(issued); err != nil || got != want {
			t.Fatalf("prepared hash %q (%v) differs from the whole transcript's %q", got, err, want)
		}
	}
	return want
}

func TestAnEchoNamingAnIssuedIDEarlierIsRefused(t *testing.T) {
	is := is.New(t)
	msgs := append(issuedTranscript(echoID, "edit", `{}`), chat.Message{Role: chat.RoleUser, Content: ptr("again")},
		chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_pmn_other", Name: "edit", Arguments: `{}`}}})
	e, err := canon.PrepareEcho(msgs, nil)
	is.NoErr(err)
	_, err = e.Hash([]canon.IssuedCall{{ID: echoID, Name: "edit", Arguments: `{}`}})
	is.True(errs.Has(err, errs.ContinuationHistoryMismatch)) // a genuine echo never has one
}

func TestTheValueFormKeepsUnparsableArgumentsAsText(t *testing.T) {
	is := is.New(t)
	m := chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{
		{ID: "a", Name: "f", Arguments: `{"x": 1.0}`},
		{ID: "b", Name: "f", Arguments: `"s"`},
		{ID: "c", Name: "f", Arguments: `{"x":`},
		{ID: "d", Name: "f", Arguments: ``},
	}}
	is.Equal(marshalString(t, canon.MessageValueV2(m)), `{"content":null,"role":"assistant","tool_calls":[`+
		`{"arguments":{"x":1},"id":"a","name":"f"},{"arguments":"s","id":"b","name":"f"},`+
		`{"arguments_text":"{\"x\":","id":"c","name":"f"},{"arguments_text":"","id":"d","name":"f"}]}`) // documented form
	// An issued object echoed as something that is not an object never matches.
	admitted := hashOne(t, issuedArgs, nil, false)
	for _, e := range []string{`"` + strings.ReplaceAll(issuedArgs, `"`, `\"`) + `"`, `[` + issuedArgs + `]`, issuedArgs[:10], ``, `null`} {
		is.True(hashOne(t, e, nil, true) != admitted)
	}
}

// reserialize writes v as a JSON library might: respell's random key order,
// whitespace and escapes, with every number also respelled by value.
func reserialize(t *rapid.T, v canon.Value) string {
	var sb strings.Builder
	respell(t, &sb, respellNumbers(t, clone(v)))
	return sb.String()
}

// respellNumbers replaces, in place, every number by another literal of the
// same value.
func respellNumbers(t *rapid.T, v canon.Value) canon.Value {
	switch x := v.(type) {
	case canon.Number:
		return canon.Number(respellNumber(t, string(x)))
	case []canon.Value:
		for i := range x {
			x[i] = respellNumbers(t, x[i])
		}
	case map[string]canon.Value:
		for k := range x {
			x[k] = respellNumbers(t, x[k])
		}
	}
	return v
}

// genObject draws argument objects with genValue's members.
func genObject(t *rapid.T, depth int) map[string]canon.Value {
	n := rapid.IntRange(0, 5).Draw(t, "members")
	m := make(map[string]canon.Value, n)
	for range n {
		m[genKey.Draw(t, "key")] = genValue(t, depth+1)
	}
	return m
}

// paths lists the paths (key sequences) of every member of every object
// reachable through objects only.
func paths(m map[string]canon.Value, prefix []string) [][]string {
	var out [][]string
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := append(append([]string(nil), prefix...), k)
		out = append(out, p)
		if o, ok := m[k].(map[string]canon.Value); ok {
			out = append(out, paths(o, p)...)
		}
	}
	return out
}

// clone deep-copies a generated value.
func clone(v canon.Value) canon.Value {
	switch x := v.(type) {
	case []canon.Value:
		c := make([]canon.Value, len(x))
		for i := range x {
			c[i] = clone(x[i])
		}
		return c
	case map[string]canon.Value:
		c := make(map[string]canon.Value, len(x))
		for k, e := range x {
			c[k] = clone(e)
		}
		return c
	}
	return v
}

// at returns the object holding the last key of p.
func at(m map[string]canon.Value, p []string) map[string]canon.Value {
	for _, k := range p[:len(p)-1] {
		m = m[k].(map[string]canon.Value)
	}
	return m
}

// schemaFor declares, for the chosen paths, a default equal to the value the
// echo will add there; it is written as a properties chain.
func schemaFor(defaults map[string]canon.Value) canon.Value {
	props := map[string]canon.Value{}
	for k, v := range defaults {
		props[k] = v
	}
	return map[string]canon.Value{"type": "object", "properties": props}
}

func TestEveryReserializationIsAcceptedAndEveryValueChangeRefused(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		issuedV := genObject(t, 0)
		issuedS := string(mustMarshal(t, issuedV))
		if rapid.Bool().Draw(t, "issued as a library wrote it") {
			issuedS = reserialize(t, issuedV)
		}
		// A schema with defaults for a few keys the issued arguments lack, at
		// the top level and inside one nested object of the issued arguments.
		defaultVal := genValue(t, 2)
		schemaProps := map[string]canon.Value{"dflt": map[string]canon.Value{"default": defaultVal}}
		echoV := clone(issuedV).(map[string]canon.Value)
		addDefault := rapid.Bool().Draw(t, "echo adds the default")
		if _, present := issuedV["dflt"]; !present && addDefault {
			echoV["dflt"] = clone(defaultVal)
		}
		var nestedKey string
		for _, p := range paths(issuedV, nil) {
			if _, ok := at(issuedV, p)[p[len(p)-1]].(map[string]canon.Value); ok && len(p) == 1 {
				nestedKey = p[0]
				break
			}
		}
		if nestedKey != "" && nestedKey != "dflt" {
			inner := issuedV[nestedKey].(map[string]canon.Value)
			schemaProps[nestedKey] = map[string]canon.Value{"properties": map[string]canon.Value{"inner": map[string]canon.Value{"default": "d"}}}
			if _, present := inner["inner"]; !present && rapid.Bool().Draw(t, "echo adds the nested default") {
				echoV[nestedKey].(map[string]canon.Value)["inner"] = "d"
			}
		}
		schema := mustMarshal(t, schemaFor(schemaProps))
		defs, err := canon.ToolDefaults([]chat.Tool{{Name: "edit", Parameters: schema}})
		if err != nil {
			t.Fatalf("defaults: %v", err)
		}
		issued := []canon.IssuedCall{{ID: echoID, Name: "edit", Arguments: issuedS}}
		admitted, err := canon.TranscriptHashV2(issuedTranscript(echoID, "edit", issuedS), nil, nil)
		if err != nil {
			t.Fatalf("admission hash: %v", err)
		}
		echoHash := func(args string) string {
			return echoHashBothWays(t, issuedTranscript(echoID, "edit", args), defs, issued)
		}
		echoS := reserialize(t, echoV)
		if got := echoHash(echoS); got != admitted {
			t.Fatalf("re-serialized echo refused:\nissued %s\necho   %s\nschema %s", issuedS, echoS, schema)
		}

		// One value change, one added key without a default, one removed key.
		changed := clone(echoV).(map[string]canon.Value)
		all := paths(changed, nil)
		unchanged := false // the mutant equals the issued arguments (modulo defaults)
		switch rapid.IntRange(0, 2).Draw(t, "mutation") {
		case 0: // change one leaf (or a whole member) to a different value
			if len(all) == 0 {
				changed["k"] = "added"
				break
			}
			p := rapid.SampledFrom(all).Draw(t, "path")
			obj := at(changed, p)
			old := obj[p[len(p)-1]]
			nv := genValue(t, 3)
			if canon.Equal(canon.Normalize(clone(nv)), canon.Normalize(clone(old))) {
				nv = []canon.Value{nv, "different"}
			}
			// Different from the old leaf is not enough: replacing a member
			// the echo completed with a default by the issued member itself
			// is no change of the issued arguments, and the echo stays valid
			// (testdata/rapid keeps such a case).
			if iv, ok := issuedHas(issuedV, p); ok && canon.Equal(canon.Normalize(clone(nv)), canon.Normalize(clone(iv))) {
				unchanged = true
			}
			obj[p[len(p)-1]] = nv
		case 1: // add a key no default covers
			key := "extra-" + genKey.Draw(t, "extra key")
			for _, exists := changed[key]; exists; _, exists = changed[key] {
				key += "!"
			}
			changed[key] = genValue(t, 3)
		default: // remove a key the issued arguments have
			if len(all) == 0 {
				changed["k"] = nil
				break
			}
			p := rapid.SampledFrom(all).Draw(t, "removed")
			if _, isIssued := issuedHas(issuedV, p); !isIssued {
				changed["k2"] = "added"
				break
			}
			delete(at(changed, p), p[len(p)-1])
		}
		changedS := reserialize(t, changed)
		if got := echoHash(changedS); unchanged && got != admitted {
			t.Fatalf("echo with an issued member restored refused:\nissued %s\necho   %s\nschema %s", issuedS, changedS, schema)
		} else if !unchanged && got == admitted {
			t.Fatalf("changed echo accepted:\nissued %s\necho   %s\nschema %s", issuedS, changedS, schema)
		}
	})
}

// issuedHas reports whether the issued object has path p.
func issuedHas(m map[string]canon.Value, p []string) (canon.Value, bool) {
	var v canon.Value = m
	for _, k := range p {
		o, ok := v.(map[string]canon.Value)
		if !ok {
			return nil, false
		}
		if v, ok = o[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func TestThePreparedEchoHashesLikeTheWholeTranscript(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 4).Draw(t, "messages")
		var msgs []chat.Message
		for i := range n {
			if rapid.Bool().Draw(t, "assistant") {
				var calls []chat.ToolCall
				for j := range rapid.IntRange(1, 3).Draw(t, "calls") {
					obj := genObject(t, 1)
					if rapid.Bool().Draw(t, "add default a") { // droppable unless the issued call has a
						obj["a"] = canon.Number("1.0")
					}
					if rapid.Bool().Draw(t, "add nested default b.c") {
						obj["b"] = map[string]canon.Value{"c": nil}
					}
					args := reserialize(t, obj)
					if rapid.IntRange(0, 9).Draw(t, "unparsable") == 0 {
						args = string([]rune(args)[:len([]rune(args))/2])
					}
					calls = append(calls, chat.ToolCall{ID: fmt.Sprintf("id-%d-%d", i, j), Name: "edit", Arguments: args})
				}
				msgs = append(msgs, chat.Message{Role: chat.RoleAssistant, ToolCalls: calls})
			} else {
				msgs = append(msgs, chat.Message{Role: chat.RoleUser, Content: ptr(genStr.Draw(t, "text"))})
			}
		}
		defs := canon.DefaultsByTool{}
		d, _ := canon.SchemaDefaults([]byte(`{"properties":{"a":{"default":1},"b":{"properties":{"c":{"default":null}}}}}`))
		defs["edit"] = d
		var issued []canon.IssuedCall
		if n > 0 {
			for _, c := range msgs[n-1].ToolCalls {
				iss := genObject(t, 1)
				if rapid.Bool().Draw(t, "issued has b") {
					iss["b"] = map[string]canon.Value{}
				}
				issued = append(issued, canon.IssuedCall{ID: c.ID, Name: c.Name, Arguments: reserialize(t, iss)})
			}
		}
		echoHashBothWays(t, msgs, defs, issued)
	})
}
