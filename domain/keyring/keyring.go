// Package keyring is the pure model of the gateway's API key slots: the key
// file format (PROVIDER_KEYS_FILE), its strict validation, and the edits the
// `gateway keys` commands make. Reading, writing and watching the file belong
// to an adapter; generating keys belongs to the command (it needs a CSPRNG).
//
// A slot is one client's credential: a stable id, the SHA-256 of its key (the
// key itself is never stored), an optional model allowlist, an optional
// concurrency limit, a note and its creation time. Each slot is its own
// principal (docs/KEYS.md).
//
// The file is JSON:
//
//	{
//	  "version": 1,
//	  "slots": [
//	    {"id": "editor", "sha256": "<64 lowercase hex>", "models": ["gpt-5.5"],
//	     "max_concurrent": 4, "note": "my editor", "created": "2026-12-01T09:00:00Z",
//	     "scope": "inference", "limits": {"requests_per_minute": 30, "dispatches_per_day": 500}}
//	  ]
//	}
//
// Unknown fields, duplicate ids or digests, a malformed digest, a model that is
// not configured, and out-of-range limits are refused with a message that
// names the entry (its index and id) and the rule, never a key.
package keyring

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
)

// Version is the only file format version this build reads and writes.
const Version = 1

// Bounds of a slot's fields.
const (
	MaxSlots         = 1024
	MaxNoteBytes     = 256
	MaxConcurrentCap = 4096
)

// idPattern is a slot id: it appears in logs and metrics, so it is a short,
// plain identifier.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidID reports whether s may name a slot.
func ValidID(s string) bool { return idPattern.MatchString(s) }

// Slot is one API key slot.
type Slot struct {
	ID            string
	Digest        [32]byte // SHA-256 of the key
	Models        []string // nil or empty: every configured model
	MaxConcurrent int      // 0: only the global limit applies
	Note          string
	Created       time.Time
	// Scope is what the key may do: ScopeInference (the API) or ScopeAdmin
	// (also the control page's data and the metrics).
	Scope Scope
	// Limits are the slot's own rate limit and dispatch quotas (docs/USAGE.md).
	Limits usage.Limits
}

// Scope is a slot's permission.
type Scope string

// The scopes. The zero value reads as ScopeInference.
const (
	ScopeInference Scope = "inference"
	ScopeAdmin     Scope = "admin"
)

// Admin reports whether the slot may read the control page's data and the
// metrics.
func (s Slot) Admin() bool { return s.Scope == ScopeAdmin }

// Allows reports whether the slot may use the public model id.
func (s Slot) Allows(model string) bool {
	return len(s.Models) == 0 || slices.Contains(s.Models, model)
}

// Ring is the whole set of slots, in file order.
type Ring struct {
	Slots []Slot
}

// Find returns the index of the slot with the id, or -1.
func (r Ring) Find(id string) int {
	return slices.IndexFunc(r.Slots, func(s Slot) bool { return s.ID == id })
}

type fileSlot struct {
	ID            string      `json:"id"`
	SHA256        string      `json:"sha256"`
	Models        []string    `json:"models,omitempty"`
	MaxConcurrent int         `json:"max_concurrent,omitempty"`
	Note          string      `json:"note,omitempty"`
	Created       string      `json:"created"`
	Scope         string      `json:"scope,omitempty"`
	Limits        *fileLimits `json:"limits,omitempty"`
}

type fileLimits struct {
	RequestsPerMinute  int `json:"requests_per_minute,omitempty"`
	DispatchesPerDay   int `json:"dispatches_per_day,omitempty"`
	DispatchesPerMonth int `json:"dispatches_per_month,omitempty"`
}

type fileFormat struct {
	Version int        `json:"version"`
	Slots   []fileSlot `json:"slots"`
}

func invalid(format string, args ...any) error {
	return errs.Newf(errs.ConfigInvalid, "PROVIDER_KEYS_FILE: "+format, args...)
}

// Parse reads and validates a key file. models are the configured public model
// ids; a slot's allowlist must be a subset of them (nil skips that check, for
// tools that edit the file without the rest of the configuration). A file with
// no slot is valid here (every request is then refused); whether the gateway
// may start with it is the caller's decision.
func Parse(data []byte, models []string) (Ring, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f fileFormat
	if err := dec.Decode(&f); err != nil {
		return Ring{}, invalid("not a valid key file (%s)", jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return Ring{}, invalid("not a valid key file (data after the object)")
	}
	if f.Version != Version {
		return Ring{}, invalid("version must be %d", Version)
	}
	if f.Slots == nil {
		return Ring{}, invalid(`"slots" is required (an array)`)
	}
	if len(f.Slots) > MaxSlots {
		return Ring{}, invalid("at most %d slots", MaxSlots)
	}
	r := Ring{Slots: make([]Slot, 0, len(f.Slots))}
	ids := map[string]int{}
	digests := map[[32]byte]int{}
	for i, fs := range f.Slots {
		s, err := parseSlot(i, fs, models)
		if err != nil {
			return Ring{}, err
		}
		if j, dup := ids[s.ID]; dup {
			return Ring{}, invalid("slot %d (%s): the id is already used by slot %d", i, s.ID, j)
		}
		if j, dup := digests[s.Digest]; dup {
			return Ring{}, invalid("slot %d (%s): the same key digest as slot %d", i, s.ID, j)
		}
		ids[s.ID], digests[s.Digest] = i, i
		r.Slots = append(r.Slots, s)
	}
	return r, nil
}

// jsonProblem describes a decoding error without quoting the input: the
// messages of encoding/json may contain a field name or a value.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("JSON syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("wrong type at byte %d", te.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return "unknown field"
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return "empty or truncated"
	default:
		return "malformed"
	}
}

func parseSlot(i int, fs fileSlot, models []string) (Slot, error) {
	if !ValidID(fs.ID) {
		return Slot{}, invalid("slot %d: id must match [a-z0-9][a-z0-9_-]{0,63}", i)
	}
	s := Slot{ID: fs.ID, MaxConcurrent: fs.MaxConcurrent, Note: fs.Note}
	d, err := hex.DecodeString(fs.SHA256)
	if err != nil || len(d) != 32 || fs.SHA256 != strings.ToLower(fs.SHA256) {
		return Slot{}, invalid("slot %d (%s): sha256 must be 64 lowercase hex digits", i, fs.ID)
	}
	copy(s.Digest[:], d)
	if fs.MaxConcurrent < 0 || fs.MaxConcurrent > MaxConcurrentCap {
		return Slot{}, invalid("slot %d (%s): max_concurrent must be in [0, %d]", i, fs.ID, MaxConcurrentCap)
	}
	if len(fs.Note) > MaxNoteBytes || !printable(fs.Note) {
		return Slot{}, invalid("slot %d (%s): note must be at most %d bytes of printable text", i, fs.ID, MaxNoteBytes)
	}
	seen := map[string]bool{}
	for _, m := range fs.Models {
		if m == "" || seen[m] {
			return Slot{}, invalid("slot %d (%s): models must be distinct, non-empty model ids", i, fs.ID)
		}
		if models != nil && !slices.Contains(models, m) {
			return Slot{}, invalid("slot %d (%s): a model of its allowlist is not in PROVIDER_MODELS", i, fs.ID)
		}
		seen[m] = true
	}
	s.Models = slices.Clone(fs.Models)
	created, err := time.Parse(time.RFC3339, fs.Created)
	if err != nil {
		return Slot{}, invalid("slot %d (%s): created must be an RFC 3339 time", i, fs.ID)
	}
	s.Created = created.UTC()
	switch Scope(fs.Scope) {
	case "", ScopeInference:
		s.Scope = ScopeInference
	case ScopeAdmin:
		s.Scope = ScopeAdmin
	default:
		return Slot{}, invalid("slot %d (%s): scope must be inference or admin", i, fs.ID)
	}
	if l := fs.Limits; l != nil {
		for _, c := range []struct {
			name   string
			v, max int
		}{{"requests_per_minute", l.RequestsPerMinute, usage.MaxRequestsPerMinute},
			{"dispatches_per_day", l.DispatchesPerDay, usage.MaxDispatchesPerDay},
			{"dispatches_per_month", l.DispatchesPerMonth, usage.MaxDispatchesPerMon}} {
			if c.v < 0 || c.v > c.max {
				return Slot{}, invalid("slot %d (%s): limits.%s must be in [0, %d] (0 or absent: unlimited)", i, fs.ID, c.name, c.max)
			}
		}
		s.Limits = usage.Limits{RequestsPerMinute: l.RequestsPerMinute, DispatchesPerDay: l.DispatchesPerDay,
			DispatchesPerMonth: l.DispatchesPerMonth}
	}
	return s, nil
}

// printable refuses what a terminal would interpret rather than print: C0
// and C1 controls (ESC, CSI U+009B), DEL, the replacement of invalid UTF-8,
// and the bidirectional controls that reorder what `keys list` shows
// (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069).
func printable(s string) bool {
	for _, r := range s {
		switch {
		case r < 0x20, r >= 0x7f && r <= 0x9f, r == 0xfffd,
			r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return false
		}
	}
	return true
}

// Listed reads a key file that Parse may refuse only as far as its slots' ids
// and digests, and returns whether a slot (id and digest) is still listed, so
// that a revocation takes effect even when another part of the file is
// refused. It returns nil when not even that can be read.
func Listed(data []byte) func(id string, digest [32]byte) bool {
	var f struct {
		Slots []struct {
			ID     string `json:"id"`
			SHA256 string `json:"sha256"`
		} `json:"slots"`
	}
	if len(data) == 0 || json.Unmarshal(data, &f) != nil || f.Slots == nil {
		return nil
	}
	listed := make(map[string]string, len(f.Slots))
	for _, s := range f.Slots {
		listed[s.ID] = s.SHA256
	}
	return func(id string, digest [32]byte) bool {
		d, ok := listed[id]
		return ok && d == hex.EncodeToString(digest[:])
	}
}

// Marshal writes the ring in the file format: indented, a trailing newline,
// slots in order. Parse(Marshal(r)) gives r back.
func Marshal(r Ring) []byte {
	f := fileFormat{Version: Version, Slots: make([]fileSlot, 0, len(r.Slots))}
	for _, s := range r.Slots {
		f.Slots = append(f.Slots, fileSlot{
			ID: s.ID, SHA256: hex.EncodeToString(s.Digest[:]), Models: s.Models,
			MaxConcurrent: s.MaxConcurrent, Note: s.Note, Created: s.Created.UTC().Format(time.RFC3339),
			Scope: marshalScope(s.Scope), Limits: marshalLimits(s.Limits),
		})
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		panic("keyring: marshal: " + err.Error()) // plain strings and ints cannot fail
	}
	return append(b, '\n')
}

// marshalScope writes the default scope as an absent field, so that files
// without scopes keep their shape.
func marshalScope(s Scope) string {
	if s == ScopeAdmin {
		return string(s)
	}
	return ""
}

func marshalLimits(l usage.Limits) *fileLimits {
	if l.None() {
		return nil
	}
	return &fileLimits{RequestsPerMinute: l.RequestsPerMinute, DispatchesPerDay: l.DispatchesPerDay,
		DispatchesPerMonth: l.DispatchesPerMonth}
}

// Set returns the ring with the slot of the id changed by fn, refusing what
// Parse would refuse; an unknown id is an error.
func (r Ring) Set(id string, models []string, fn func(s *Slot)) (Ring, error) {
	i := r.Find(id)
	if i < 0 {
		return Ring{}, errs.Newf(errs.InvalidRequest, "no slot has the id %s", id)
	}
	next := Ring{Slots: slices.Clone(r.Slots)}
	fn(&next.Slots[i])
	return Parse(Marshal(next), models)
}

// Add returns the ring with s appended. It refuses an id or digest already in
// use, and a slot that Parse would refuse.
func (r Ring) Add(s Slot, models []string) (Ring, error) {
	next := Ring{Slots: append(slices.Clone(r.Slots), s)}
	// Round-trip through the file format: one set of rules for both paths.
	return Parse(Marshal(next), models)
}

// Revoke returns the ring without the slot of the id; an unknown id is an error.
func (r Ring) Revoke(id string) (Ring, error) {
	i := r.Find(id)
	if i < 0 {
		return Ring{}, errs.Newf(errs.InvalidRequest, "no slot has the id %s", id)
	}
	return Ring{Slots: slices.Delete(slices.Clone(r.Slots), i, i+1)}, nil
}
