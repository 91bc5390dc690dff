// Package setting holds the rules every reader of the gateway's environment
// shares: how a refusal is worded (one config_invalid error naming the
// variable and the broken rule, never the configured value) and what a valid
// bounded integer and a valid boolean are. The Postman adapter's configuration (pmconfig) and the
// process settings of cmd/gateway both refuse through it, so that the two
// agree byte for byte.
package setting

import (
	"strconv"
	"strings"

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
// otherwise exactly "true" or "false" (a refusal of "TRUE" says it is the
// case).
func Bool(getenv func(string) string, name Name, def bool) (bool, error) {
	v, err := Enum(getenv, name, strconv.FormatBool(def), "true", "false")
	return v == "true", err
}

// Choice is one of the accepted values of a closed setting: a constant of the
// program, never a configured value, so it prints unredacted.
type Choice string

// SafeValue marks the choice as safe for logs.
func (Choice) SafeValue() {}

// Enum reads the closed choice name through getenv: def when unset (empty),
// otherwise exactly one of values. The refusal lists the accepted values;
// when the value differs from one of them only in case or in how the words
// are joined (a label such as "Web Session" or "web-session" for
// web_session), it also names that one, and never the configured value.
func Enum(getenv func(string) string, name Name, def string, values ...string) (string, error) {
	raw := getenv(string(name))
	if raw == "" {
		return def, nil
	}
	for _, v := range values {
		if raw == v {
			return v, nil
		}
	}
	return def, refuseChoice(name, raw, values)
}

// refuseChoice is Enum's refusal of raw.
func refuseChoice(name Name, raw string, values []string) error {
	list := Choice(OneOf(values))
	for _, v := range values {
		if fold(raw) == fold(v) {
			return Refuse(name, "must be %s, exactly as written here: did you mean %s?", list, Choice(v))
		}
	}
	return Refuse(name, "must be %s", list)
}

// OneOf lists values as "a", "a or b", "a, b or c".
func OneOf(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// fold is a choice without case, surrounding space or word separators, so
// that the way a label is written matches the value it stands for.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', ' ', '.', '\t':
			return -1
		}
		return r
	}, strings.ToLower(strings.TrimSpace(s)))
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
