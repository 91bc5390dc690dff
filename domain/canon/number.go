package canon

import (
	"strconv"
	"strings"
)

// maxSmallExponent is the longest exponent (in digits, leading zeros removed)
// computed with int64 arithmetic; longer ones are adjusted as decimal text.
const maxSmallExponent = 18

// CanonicalNumber returns the canonical spelling of a JSON number literal by
// value (package documentation, "Numbers by value"): zero is "0" (so -0 is 0);
// any other value is an optional "-", its significant digits without leading
// or trailing zeros, and, when the power of ten is not zero, "e" and that
// power. 1, 1.0, 1e0 and 10e-1 all become "1"; 1.50 becomes "15e-1"; 100
// becomes "1e2". The work is linear in the literal's length and nothing is
// evaluated as floating point, so a literal such as 1e999999999999999999999 is
// exact and cheap. ok is false when lit is not a JSON number literal.
func CanonicalNumber(lit string) (canonical string, ok bool) {
	if !validNumber(lit) {
		return "", false
	}
	s := lit
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	// value = digits × 10^(exp + shift)
	digits := strings.TrimLeft(intPart+frac, "0")
	shift := -len(frac)
	trimmed := strings.TrimRight(digits, "0")
	shift += len(digits) - len(trimmed)
	digits = trimmed
	if digits == "" {
		return "0", true
	}
	power := addExponent(exp, shift)
	var b strings.Builder
	b.Grow(len(digits) + len(power) + 2)
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(digits)
	if power != "0" {
		b.WriteByte('e')
		b.WriteString(power)
	}
	return b.String(), true
}

// addExponent returns the decimal text of exp + shift, where exp is the
// exponent part of a valid literal ("" for none, else an optional sign and
// digits) and |shift| is at most the literal's length.
func addExponent(exp string, shift int) string {
	neg := false
	switch {
	case strings.HasPrefix(exp, "-"):
		neg, exp = true, exp[1:]
	case strings.HasPrefix(exp, "+"):
		exp = exp[1:]
	}
	exp = strings.TrimLeft(exp, "0")
	if len(exp) <= maxSmallExponent {
		var e int64
		if exp != "" {
			e, _ = strconv.ParseInt(exp, 10, 64) // at most 18 digits: cannot overflow
		}
		if neg {
			e = -e
		}
		return strconv.FormatInt(e+int64(shift), 10)
	}
	// |exp| ≥ 10^18 > |shift|: the sign of the sum is the sign of exp, and
	// its magnitude is |exp| ± |shift|, computed on the decimal text.
	m := uint64(shift)
	towardZero := (shift < 0) != neg
	if shift < 0 {
		m = uint64(-shift)
	}
	b := []byte(exp)
	if towardZero {
		b = decimalSub(b, m)
	} else {
		b = decimalAdd(b, m)
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}

// decimalAdd returns the digits of d + m.
func decimalAdd(d []byte, m uint64) []byte {
	for i := len(d) - 1; i >= 0 && m > 0; i-- {
		s := uint64(d[i]-'0') + m%10
		m /= 10
		if s >= 10 {
			s -= 10
			m++
		}
		d[i] = byte('0' + s)
	}
	if m > 0 {
		d = append([]byte(strconv.FormatUint(m, 10)), d...)
	}
	return d
}

// decimalSub returns the digits of d - m, for d > m, without leading zeros.
func decimalSub(d []byte, m uint64) []byte {
	for i := len(d) - 1; i >= 0 && m > 0; i-- {
		s := int64(d[i]-'0') - int64(m%10)
		m /= 10
		if s < 0 {
			s += 10
			m++
		}
		d[i] = byte('0' + s)
	}
	i := 0
	for i < len(d)-1 && d[i] == '0' {
		i++
	}
	return d[i:]
}
