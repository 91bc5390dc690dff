// Package system implements the clock and id-source ports with the operating
// system: the wall clock and crypto/rand.
package system

import (
	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/pmgate/pmgate/ports"
)

// Clock is the wall clock.
type Clock struct{}

// Now returns the current time.
func (Clock) Now() time.Time { return time.Now() }

// IDs draws identifiers from the operating system's CSPRNG.
type IDs struct{}

var (
	_ ports.Clock    = Clock{}
	_ ports.IDSource = IDs{}
)

// PublicToolCallIDPrefix starts every public tool call id.
const PublicToolCallIDPrefix = "call_pmn_"

// PublicToolCallID returns "call_pmn_" + base64url(24 random bytes): 192 bits,
// unstructured, carrying nothing of the upstream (docs/CORRELATION.md).
func (IDs) PublicToolCallID() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return PublicToolCallIDPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Token returns base64url(16 random bytes) for internal identifiers.
func (IDs) Token() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
