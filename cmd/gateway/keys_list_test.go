package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/ops"
)

// keys list shows each slot's dispatches today and this month, each against
// its own limit, as the running gateway at --url counts them.
func TestKeysListShowsTodayAndThisMonthEachAgainstItsLimit(t *testing.T) {
	is := is.New(t)
	file := filepath.Join(t.TempDir(), "keys.json")
	newSlotKey(t, file, "--id", "agent", "--per-day", "5", "--per-month", "100")
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/admin/api/usage" || r.Header.Get("Authorization") != "Bearer owner-key" {
			http.Error(w, "{}", http.StatusForbidden)
			return
		}
		_ = json.NewEncoder(w).Encode(ops.UsageReport{Keys: []ops.KeyBudget{{Slot: "agent", DispatchesToday: 2, DispatchesMonth: 7}}})
	}))
	t.Cleanup(gw.Close)
	list, err := keysCmdEnv(t, file, map[string]string{"PROVIDER_API_KEY": "owner-key"}, "list", "--url", gw.URL)
	is.NoErr(err)
	// ID SCOPE CREATED MODELS MAX_CONCURRENT RPM TODAY MONTH
	is.True(regexp.MustCompile(`(?m)^agent\s+inference\s+\S+\s+all\s+-\s+-\s+2/5\s+7/100\s*$`).MatchString(list))
}
