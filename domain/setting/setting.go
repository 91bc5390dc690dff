// Package setting holds the rules every reader of the gateway's environment
// shares: how a refusal is worded (one config_invalid error naming the
// variable and the broken rule, never the configured value) and what a valid
// bounded integer and a valid boolean are. The Postman adapter's configuration (pmconfig) and the
// process settings of cmd/gateway both refuse through it, so that the two
// agree byte for byte.
package setting

import (
	"strconv"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/errs"
)

// Name is a variable name; names are safe to log.
type Name string

// SafeValue marks variable names as safe for logs.
func (Name) SafeValue() {}

// Int is an int that prints unredacted: bounds and positions are not
// configured values.
type Int int

// SafeValue marks the int as safe for logs.
func (Int) SafeValue() {}

// Refuse returns a configuration refusal "<name>: <rule>". The format and the
// name are safe; never pass a configured value (only Int or other safe
// values as args).
func Refuse(name Name, format string, args ...any) error {
	return errs.Newf(errs.ConfigInvalid, "%s: "+format, append([]any{name}, args...)...)
}

// BoundedInt reads the decimal integer name through getenv: def when unset
// (empty), otherwise it must be ASCII digits only (no sign, space or
// underscore) and within lo..hi.
func BoundedInt(getenv func(string) string, name Name, def, lo, hi int) (int, error) {
	raw := getenv(string(name))
	if raw == "" {
		return def, nil
	}
	v, ok := Decimal(raw)
	if !ok || v < lo || v > hi {
		return 0, Refuse(name, "must be a decimal integer from %d to %d", Int(lo), Int(hi))
	}
	return v, nil
}

// Bool reads the boolean name through getenv: def when unset (empty),
// otherwise exactly "true" or "false".
func Bool(getenv func(string) string, name Name, def bool) (bool, error) {
	switch getenv(string(name)) {
	case "":
		return def, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return def, Refuse(name, "must be true or false")
}

// Decimal parses ASCII decimal digits only (no sign, space or underscore);
// more than 18 digits is refused.
func Decimal(s string) (int, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.Atoi(s)
	return v, err == nil
}

// Join is nil, the one refusal, or all of them joined (redaction-aware, so
// that logs keep every variable name and rule).
func Join(problems []error) error {
	switch len(problems) {
	case 0:
		return nil
	case 1:
		return problems[0]
	}
	return errors.Join(problems...)
}
