package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/keyfile"
	"github.com/pmgate/pmgate/adapters/ops"
)

func TestKeysFlagsMayFollowTheSlotID(t *testing.T) {
	is := is.New(t)
	file := filepath.Join(t.TempDir(), "keys.json")
	newSlotKey(t, file, "--id", "agent")
	newSlotKey(t, file, "--id", "other")
	var out bytes.Buffer
	// No PROVIDER_KEYS_FILE in the environment: --file after the id is the only way to the file.
	is.NoErr(run(t.Context(), []string{"keys", "set", "agent", "--file", file, "--rpm", "7"}, noEnv, &out, &out))
	is.NoErr(run(t.Context(), []string{"keys", "revoke", "other", "--file", file}, noEnv, &out, &out))
	r, _, err := keyfile.Load(file, nil)
	is.NoErr(err)
	is.Equal(len(r.Slots), 1) // other is revoked
	is.Equal(r.Slots[0].ID, "agent")
	is.Equal(r.Slots[0].Limits.RequestsPerMinute, 7) // and agent's flag after its id applied
}

func TestAnUnknownKeysSubcommandSuggestsTheOneMeant(t *testing.T) {
	is := is.New(t)
	for typo, want := range map[string]string{"rm": "revoke", "delete": "revoke", "add": "new", "ls": "list", "lst": "list", "revok": "revoke", "update": "set"} {
		var out bytes.Buffer
		err := run(t.Context(), []string{"keys", typo, "agent", "--file", "x.json"}, noEnv, &out, &out)
		is.True(errors.Is(err, errUsage))
		is.True(strings.Contains(err.Error(), `did you mean "`+want+`"?`)) // not "pass --file"
	}
}

func TestKeysListReadsTheAdminKeyFromTheVariableKeyEnvNames(t *testing.T) {
	is := is.New(t)
	file := filepath.Join(t.TempDir(), "keys.json")
	newSlotKey(t, file, "--id", "agent")
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer admin-key-of-another-name" {
			http.Error(w, "{}", http.StatusForbidden)
			return
		}
		_ = json.NewEncoder(w).Encode(ops.UsageReport{Keys: []ops.KeyBudget{{Slot: "agent", DispatchesToday: 3}}})
	}))
	t.Cleanup(gw.Close)
	// The shell of a key-file gateway: PROVIDER_API_KEY cannot hold the admin key there.
	list, err := keysCmdEnv(t, file, map[string]string{"PMGATE_ADMIN_KEY": "admin-key-of-another-name"},
		"list", "--url", gw.URL, "--key-env", "PMGATE_ADMIN_KEY")
	is.NoErr(err)
	is.True(strings.Contains(list, "3/-")) // the counts came from --url with that key
}
