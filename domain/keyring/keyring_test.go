package keyring_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/keyring"
)

const secretKey = "pmg-very-SECRET-key-0123456789"

var digest = hex.EncodeToString(func() []byte { d := sha256.Sum256([]byte(secretKey)); return d[:] }())

func file(slots string) string { return `{"version":1,"slots":[` + slots + `]}` }

func slot(id string, extra string) string {
	return `{"id":"` + id + `","sha256":"` + digest + `","created":"2026-12-01T09:00:00Z"` + extra + `}`
}

func TestAValidFileParsesEveryField(t *testing.T) {
	is := is.New(t)
	r, err := keyring.Parse([]byte(file(slot("editor", `,"models":["a"],"max_concurrent":4,"note":"my editor"`))), []string{"a", "b"})
	is.NoErr(err)
	is.Equal(len(r.Slots), 1)
	s := r.Slots[0]
	is.Equal(s.ID, "editor")
	is.Equal(hex.EncodeToString(s.Digest[:]), digest)
	is.Equal(s.Models, []string{"a"})
	is.Equal(s.MaxConcurrent, 4)
	is.Equal(s.Note, "my editor")
	is.Equal(s.Created, time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	is.True(s.Allows("a") && !s.Allows("b")) // the allowlist is honoured
}

func TestMarshalRoundTrips(t *testing.T) {
	is := is.New(t)
	r, err := keyring.Parse([]byte(file(slot("editor", `,"models":["a"],"note":"n"`)+","+strings.Replace(slot("router", ""), digest, strings.Repeat("ab", 32), 1))), nil)
	is.NoErr(err)
	again, err := keyring.Parse(keyring.Marshal(r), nil)
	is.NoErr(err)
	is.Equal(again, r) // Parse(Marshal(r)) is r
}

func TestBadFilesAreRefusedNamingTheEntryNeverTheKey(t *testing.T) {
	other := strings.Repeat("cd", 32)
	cases := map[string]struct{ body, want string }{
		"not JSON":           {`{"version":1,"slots":[`, "not a valid key file"},
		"unknown top field":  {`{"version":1,"slots":[],"extra":1}`, "unknown field"},
		"unknown slot field": {file(slot("editor", `,"key":"`+secretKey+`"`)), "unknown field"},
		"wrong version":      {`{"version":2,"slots":[]}`, "version must be 1"},
		"no slots array":     {`{"version":1}`, `"slots" is required`},
		"bad id":             {file(slot("Editor!", "")), "slot 0: id must match"},
		"short digest":       {file(strings.Replace(slot("editor", ""), digest, digest[:10], 1)), "slot 0 (editor): sha256"},
		"upper-case digest":  {file(strings.Replace(slot("editor", ""), digest, strings.ToUpper(digest), 1)), "slot 0 (editor): sha256"},
		"duplicate id":       {file(slot("editor", "") + "," + strings.Replace(slot("editor", ""), digest, other, 1)), "slot 1 (editor): the id is already used by slot 0"},
		"duplicate digest":   {file(slot("editor", "") + "," + slot("router", "")), "slot 1 (router): the same key digest as slot 0"},
		"unknown model":      {file(slot("editor", `,"models":["zzz"]`)), "slot 0 (editor): a model of its allowlist is not in PROVIDER_MODELS"},
		"repeated model":     {file(slot("editor", `,"models":["a","a"]`)), "models must be distinct"},
		"negative limit":     {file(slot("editor", `,"max_concurrent":-1`)), "max_concurrent must be in"},
		"control in note":    {file(slot("editor", `,"note":"a\u0007b"`)), "note must be"},
		"C1 control in note": {file(slot("editor", `,"note":"a\u009b31mb"`)), "note must be"},
		"bidi override note": {file(slot("editor", `,"note":"a\u202eb"`)), "note must be"},
		"bidi isolate note":  {file(slot("editor", `,"note":"a\u2066b"`)), "note must be"},
		"bad created":        {file(strings.Replace(slot("editor", ""), "2026-12-01T09:00:00Z", "yesterday", 1)), "created must be an RFC 3339 time"},
		"trailing data":      {file(slot("editor", "")) + "{}", "data after the object"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			_, err := keyring.Parse([]byte(c.body), []string{"a"})
			is.True(err != nil)
			is.True(errs.Has(err, errs.ConfigInvalid))         // a configuration refusal
			is.True(strings.Contains(err.Error(), c.want))     // that says what and where
			is.True(!strings.Contains(err.Error(), secretKey)) // never the key
			is.True(!strings.Contains(err.Error(), digest))    // nor its digest
		})
	}
}

func TestAddAndRevoke(t *testing.T) {
	is := is.New(t)
	r, err := keyring.Parse([]byte(file(slot("editor", ""))), nil)
	is.NoErr(err)
	_, err = r.Add(keyring.Slot{ID: "editor", Digest: sha256.Sum256([]byte("x")), Created: time.Now()}, nil)
	is.True(err != nil) // an id in use is refused
	_, err = r.Add(keyring.Slot{ID: "router", Digest: r.Slots[0].Digest, Created: time.Now()}, nil)
	is.True(err != nil) // a key in use is refused
	r2, err := r.Add(keyring.Slot{ID: "router", Digest: sha256.Sum256([]byte("x")), Created: time.Now()}, nil)
	is.NoErr(err)
	is.Equal(len(r2.Slots), 2)
	is.Equal(len(r.Slots), 1) // Add does not change the original
	r3, err := r2.Revoke("editor")
	is.NoErr(err)
	is.Equal(len(r3.Slots), 1)
	is.Equal(r3.Slots[0].ID, "router")
	_, err = r3.Revoke("editor")
	is.True(err != nil) // revoking an unknown id is an error
}
