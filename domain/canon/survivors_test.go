package canon_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/canon"
)

// The tests below each catch a planted defect that the mutation run of the
// hardening issue found alive (internal/mutate keeps them planted).

func TestACarryIntoANewDigitOfAHugeExponentIsKept(t *testing.T) {
	is := is.New(t)
	a, ok := canon.CanonicalNumber("10e99999999999999999999")
	is.True(ok)
	b, ok := canon.CanonicalNumber("1e100000000000000000000")
	is.True(ok)
	is.Equal(a, b) // the same number, one spelling
	c, _ := canon.CanonicalNumber("100e99999999999999999998")
	is.Equal(c, b)
	d, _ := canon.CanonicalNumber("0.1e100000000000000000001")
	is.Equal(d, b)
}

func TestEqualSeesAMemberOnlyOneSideHas(t *testing.T) {
	is := is.New(t)
	one := map[string]canon.Value{"a": canon.Number("1")}
	two := map[string]canon.Value{"a": canon.Number("1"), "b": canon.Number("2")}
	is.True(!canon.Equal(one, two))
	is.True(!canon.Equal(two, one))
	is.True(!canon.Equal([]canon.Value{one}, []canon.Value{two}))
	is.True(canon.Equal(two, map[string]canon.Value{"b": canon.Number("2"), "a": canon.Number("1")}))
}

func TestAnEchoAddingADefaultedPropertyWithAnotherValueIsRefused(t *testing.T) {
	is := is.New(t)
	schema := `{"type":"object","properties":{"replace_all":{"type":"boolean","default":false},"path":{"type":"string"}}}`
	d, err := canon.SchemaDefaults([]byte(schema))
	is.NoErr(err)
	defaults := canon.DefaultsByTool{"edit": d}
	issued := []canon.IssuedCall{{ID: echoID, Name: "edit", Arguments: `{"path":"a"}`}}
	admitted, err := canon.TranscriptHashV2(issuedTranscript(echoID, "edit", `{"path":"a"}`), nil, nil)
	is.NoErr(err)
	same := echoHashBothWays(t, issuedTranscript(echoID, "edit", `{"path":"a","replace_all":false}`), defaults, issued)
	is.Equal(same, admitted) // the default added: the same call
	other := echoHashBothWays(t, issuedTranscript(echoID, "edit", `{"path":"a","replace_all":true}`), defaults, issued)
	is.True(other != admitted) // another value: another call
	str := echoHashBothWays(t, issuedTranscript(echoID, "edit", `{"path":"a","replace_all":"false"}`), defaults, issued)
	is.True(str != admitted) // another type: another call

	// With another default-valued property beside it (so the echo rule runs).
	d2, err := canon.SchemaDefaults([]byte(`{"type":"object","properties":{"replace_all":{"default":false},"n":{"default":1},"path":{}}}`))
	is.NoErr(err)
	defaults2 := canon.DefaultsByTool{"edit": d2}
	both := echoHashBothWays(t, issuedTranscript(echoID, "edit", `{"path":"a","n":1,"replace_all":false}`), defaults2, issued)
	is.Equal(both, admitted)
	mixed := echoHashBothWays(t, issuedTranscript(echoID, "edit", `{"path":"a","n":1,"replace_all":true}`), defaults2, issued)
	is.True(mixed != admitted) // n is dropped, replace_all true is not
}
