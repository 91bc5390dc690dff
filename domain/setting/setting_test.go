package setting_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/setting"
)

func TestBoundedInt(t *testing.T) {
	is := is.New(t)
	env := map[string]string{"N": "0042", "BAD": "+1", "BIG": "1000"}
	get := func(k string) string { return env[k] }
	v, err := setting.BoundedInt(get, "UNSET", 7, 1, 100)
	is.NoErr(err)
	is.Equal(v, 7) // unset is the default
	v, err = setting.BoundedInt(get, "N", 7, 1, 100)
	is.NoErr(err)
	is.Equal(v, 42) // leading zeros are digits
	for _, name := range []setting.Name{"BAD", "BIG"} {
		_, err = setting.BoundedInt(get, name, 7, 1, 100)
		is.True(errs.Has(err, errs.ConfigInvalid))                                                            // refused
		is.True(strings.Contains(errs.Redact(err), string(name)+": must be a decimal integer from 1 to 100")) // name and bounds survive redaction
		is.True(!strings.Contains(err.Error(), env[string(name)]))                                            // the value is never echoed
	}
}

func TestJoin(t *testing.T) {
	is := is.New(t)
	a, b := setting.Refuse("A", "bad"), setting.Refuse("B", "bad")
	is.NoErr(setting.Join(nil))           // nothing refused
	is.Equal(setting.Join([]error{a}), a) // one refusal as it is
	joined := setting.Join([]error{a, b})
	is.True(errors.Is(joined, a) && errors.Is(joined, b)) // every refusal kept
}

func TestBool(t *testing.T) {
	is := is.New(t)
	env := map[string]string{"T": "true", "F": "false", "BAD": "TRUE", "ONE": "1"}
	get := func(k string) string { return env[k] }
	for name, want := range map[setting.Name]bool{"T": true, "F": false} {
		for _, def := range []bool{true, false} {
			v, err := setting.Bool(get, name, def)
			is.NoErr(err)
			is.Equal(v, want) // a set value wins over the default
		}
	}
	for _, def := range []bool{true, false} {
		v, err := setting.Bool(get, "UNSET", def)
		is.NoErr(err)
		is.Equal(v, def) // unset is the default
	}
	for _, name := range []setting.Name{"BAD", "ONE"} {
		_, err := setting.Bool(get, name, true)
		is.True(errs.Has(err, errs.ConfigInvalid))                                          // refused
		is.True(strings.Contains(errs.Redact(err), string(name)+": must be true or false")) // in the one wording
		is.True(!strings.Contains(err.Error(), env[string(name)]))                          // the value is never echoed
	}
}

func TestEnumNamesTheValueMeantByAWrongCaseOrALabel(t *testing.T) {
	is := is.New(t)
	for raw, meant := range map[string]string{"Web_Session": "web_session", "WEB-SESSION": "web_session",
		"Web Session": "web_session", "websession": "web_session", " access.token ": "access_token"} {
		get := func(string) string { return raw }
		_, err := setting.Enum(get, "S", "", "access_token", "web_session")
		is.True(errs.Has(err, errs.ConfigInvalid)) // still refused: the value is exact
		msg := errs.Redact(err)
		is.True(strings.Contains(msg, "S: must be access_token or web_session")) // the accepted values
		is.True(strings.Contains(msg, "did you mean "+meant+"?"))                // and the one meant, unredacted
		is.True(!strings.Contains(err.Error(), raw))                             // the value is never echoed
	}
	_, err := setting.Enum(func(string) string { return "auto" }, "S", "", "access_token", "web_session")
	is.True(!strings.Contains(err.Error(), "did you mean")) // nothing close: the list only
	_, err = setting.Bool(func(string) string { return "TRUE" }, "B", false)
	is.True(strings.Contains(errs.Redact(err), "B: must be true or false, exactly as written here: did you mean true?"))
	v, err := setting.Enum(func(string) string { return "" }, "S", "web_session", "access_token", "web_session")
	is.NoErr(err)
	is.Equal(v, "web_session") // unset is the default
}
