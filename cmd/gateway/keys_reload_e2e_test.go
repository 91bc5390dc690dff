package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// TestAKeyRevokedRightAfterItsFirstUseIsRefusedWithinASecond: a slot made by
// `keys new` while serve runs is loaded by its key's first request (the key
// was unknown); revoking it then brings the file back to the bytes loaded at
// start-up. The revocation still takes effect within a second — by the poll
// alone or with SIGHUP — and /admin stops listing the slot.
func TestAKeyRevokedRightAfterItsFirstUseIsRefusedWithinASecond(t *testing.T) {
	for _, after := range []time.Duration{0, 300 * time.Millisecond, 2 * time.Second} {
		for _, hup := range []bool{false, true} {
			t.Run(fmt.Sprintf("after %s, sighup %v", after, hup), func(t *testing.T) {
				is := is.New(t)
				file := filepath.Join(t.TempDir(), "keys.json")
				owner := newSlotKey(t, file, "--id", "owner", "--scope", "admin")
				s := serve(t, "access_token", map[string]string{"PROVIDER_API_KEY": "", "PROVIDER_KEYS_FILE": file})
				hello := userBody("hello", false, "")
				status := func(key string) int { return s.post(t, hello, bearer(key)...).StatusCode }

				fast := newSlotKey(t, file, "--id", "fast") // while serve runs
				is.Equal(status(fast), 200)                 // its first use loads it
				time.Sleep(after)
				_, err := keysCmd(t, file, "revoke", "fast")
				is.NoErr(err)
				revoked := time.Now()
				if hup {
					is.NoErr(syscall.Kill(os.Getpid(), syscall.SIGHUP))
				}
				for status(fast) != 401 {
					if time.Since(revoked) > time.Second {
						t.Fatalf("the revoked key still answers after %s", time.Since(revoked).Round(time.Millisecond))
					}
					time.Sleep(20 * time.Millisecond)
				}
				is.Equal(status(owner), 200) // the other slot is untouched
				var live struct {
					Keys []struct {
						Slot string `json:"slot"`
					} `json:"keys"`
				}
				is.NoErr(json.Unmarshal([]byte(s.get(t, "/admin/api/live", bearer(owner)...)), &live))
				var slots []string
				for _, k := range live.Keys {
					slots = append(slots, k.Slot)
				}
				is.Equal(slots, []string{"owner"}) // /admin no longer lists the revoked slot
			})
		}
	}
}

// TestARaisedSlotLimitCountsTheRequestAlreadyRunning: with max_concurrent 1
// and one request running, a reload to 2 admits one more, not two.
func TestARaisedSlotLimitCountsTheRequestAlreadyRunning(t *testing.T) {
	is := is.New(t)
	file := filepath.Join(t.TempDir(), "keys.json")
	key := newSlotKey(t, file, "--id", "agent", "--max-concurrent", "1")
	emu := newEmulator(t, func(c *emulator.Config) { c.SlowDelay = 2 * time.Second })
	s := serveWith(t, emu, "access_token", map[string]string{"PROVIDER_API_KEY": "", "PROVIDER_KEYS_FILE": file})
	slow := userBody("#scenario=slow_stream", true, "")
	start := func() (int, error) { // one slow stream; its status once it starts or is refused
		req, _ := http.NewRequestWithContext(t.Context(), "POST", s.base+"/v1/chat/completions", strings.NewReader(slow))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		go func() { // keep it running to its end, then let it go
			buf := make([]byte, 512)
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					resp.Body.Close()
					return
				}
			}
		}()
		return resp.StatusCode, nil
	}
	code, err := start()
	is.NoErr(err)
	is.Equal(code, 200) // the first is running

	raised, err := os.ReadFile(file)
	is.NoErr(err)
	raised = []byte(strings.Replace(string(raised), `"max_concurrent": 1`, `"max_concurrent": 2`, 1))
	is.True(strings.Contains(string(raised), `"max_concurrent": 2`))
	is.NoErr(os.WriteFile(file, raised, 0o600))
	eventually(t, "the raised limit is loaded", func() bool { return strings.Contains(s.logs.String(), `"cause":"poll"`) })

	codes := make(chan int, 2)
	for range 2 {
		go func() {
			c, err := start()
			if err != nil {
				c = -1
			}
			codes <- c
		}()
	}
	got := map[int]int{}
	for range 2 {
		got[<-codes]++
	}
	is.Equal(got, map[int]int{200: 1, 429: 1}) // one more place, not two: the running request counts
}
