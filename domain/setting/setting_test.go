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
