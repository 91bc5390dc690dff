package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/domain/errs"
)

// keysCmd runs `gateway keys …` through run and returns stdout.
func keysCmd(t *testing.T, file string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := map[string]string{"PROVIDER_KEYS_FILE": file, "PROVIDER_MODELS": testModel + ",gpt-other"}
	err := run(t.Context(), append([]string{"keys"}, args...), func(k string) string { return env[k] }, &out, &errOut)
	return out.String(), err
}

var keyLine = regexp.MustCompile(`(?m)^key\s+(pmg-[A-Za-z0-9_-]{43})$`)

// newSlotKey runs `keys new` and returns the printed key.
func newSlotKey(t *testing.T, file string, args ...string) string {
	t.Helper()
	out, err := keysCmd(t, file, append([]string{"new"}, args...)...)
	if err != nil {
		t.Fatalf("keys new: %v", err)
	}
	m := keyLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("keys new printed no key: %q", out)
	}
	return m[1]
}

func TestKeysNewListRevokeEditTheFile(t *testing.T) {
	is := is.New(t)
	file := filepath.Join(t.TempDir(), "keys.json")
	key := newSlotKey(t, file, "--id", "editor", "--models", testModel, "--max-concurrent", "2", "--note", "my editor")
	other := newSlotKey(t, file)
	is.True(key != other) // every key is fresh

	stored, err := os.ReadFile(file)
	is.NoErr(err)
	is.True(!strings.Contains(string(stored), key)) // only the hash is stored
	is.True(!strings.Contains(string(stored), other))

	list, err := keysCmd(t, file, "list")
	is.NoErr(err)
	is.True(strings.Contains(list, "editor"))
	is.True(strings.Contains(list, testModel))
	is.True(strings.Contains(list, "my editor"))
	is.True(!strings.Contains(list, key)) // list never shows a key

	_, err = keysCmd(t, file, "new", "--id", "editor")
	is.True(err != nil) // an id in use is refused
	_, err = keysCmd(t, file, "new", "--models", "no-such-model")
	is.True(errs.Has(err, errs.ConfigInvalid)) // a model outside PROVIDER_MODELS is refused

	_, err = keysCmd(t, file, "revoke", "editor")
	is.NoErr(err)
	list, _ = keysCmd(t, file, "list")
	is.True(!strings.Contains(list, "editor")) // revoked
	_, err = keysCmd(t, file, "revoke", "editor")
	is.True(err != nil) // twice is an error
}

func TestServeRefusesABadKeyConfiguration(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.json")
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(broken, []byte(`{"version":1,"slots":[{"id":"a"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte(`{"version":1,"slots":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string]map[string]string{
		"both forms":   {"PROVIDER_API_KEY": testKey, "PROVIDER_KEYS_FILE": broken},
		"broken file":  {"PROVIDER_KEYS_FILE": broken},
		"no slot":      {"PROVIDER_KEYS_FILE": empty},
		"missing file": {"PROVIDER_KEYS_FILE": filepath.Join(dir, "nope.json")},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			base := map[string]string{"PROVIDER_MODELS": testModel, "POSTMAN_TRANSPORT_STRATEGY": "access_token",
				"POSTMAN_ACCESS_TOKEN": testToken, "POSTMAN_ORIGIN": "https://127.0.0.1:1", "POSTMAN_WORKSPACE_ID": testWorkspace,
				"POSTMAN_MODEL_MAP": testModel + "=GPT_55"}
			for k, v := range env {
				base[k] = v
			}
			err := run(t.Context(), []string{"check-config"}, func(k string) string { return base[k] }, io.Discard, io.Discard)
			is.True(errs.Has(err, errs.ConfigInvalid)) // refused at start-up
			is.Equal(exitCode(err), 78)
			is.True(!strings.Contains(err.Error(), testKey))
		})
	}
}

// keysServe starts serve on a fresh key file with two slots and returns it
// with the two keys.
func keysServe(t *testing.T, st string, extra map[string]string) (s *served, file, editor, router string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "keys.json")
	editor = newSlotKey(t, file, "--id", "editor")
	router = newSlotKey(t, file, "--id", "router", "--models", testModel)
	env := map[string]string{"PROVIDER_API_KEY": "", "PROVIDER_KEYS_FILE": file}
	for k, v := range extra {
		env[k] = v
	}
	return serve(t, st, env), file, editor, router
}

func bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }

func TestTwoSlotsAreIsolatedEndToEnd(t *testing.T) {
	stores := map[string]func(t *testing.T) map[string]string{
		"memory": func(*testing.T) map[string]string { return map[string]string{"MAX_CONCURRENT_REQUESTS": "64"} },
		"postgres": func(t *testing.T) map[string]string {
			k := make([]byte, 32)
			_, _ = rand.Read(k)
			return map[string]string{"CORRELATION_STORE": "postgres", "CORRELATION_POSTGRES_URL": pgSchema(t),
				"CORRELATION_PRINCIPAL_KEY": base64.RawURLEncoding.EncodeToString(k), "MAX_CONCURRENT_REQUESTS": "64"}
		},
	}
	for storeName, storeEnv := range stores {
		for _, st := range strategies {
			t.Run(storeName+"/"+st, func(t *testing.T) {
				is := is.New(t)
				s, _, editor, router := keysServe(t, st, storeEnv(t))

				history := []msg{{"role": "user", "content": "weather please"}}
				status, c, _ := turnResult(t, s, chatBody(t, testModel, history, toolsJSON, ""), bearer(editor)...)
				is.Equal(status, 200)
				cont := append(append([]msg(nil), history...), assistantAndResults(c, sunny)...)
				body := chatBody(t, testModel, cont, toolsJSON, "")

				// The router slot sees the editor's ids exactly like forged ones.
				stolen := s.post(t, body, bearer(router)...)
				stolenBody, _ := io.ReadAll(stolen.Body)
				forged := strings.ReplaceAll(body, c.Choices[0].Message.ToolCalls[0].ID, "call_pmn_"+strings.Repeat("A", 32))
				for _, tc := range c.Choices[0].Message.ToolCalls[1:] {
					forged = strings.ReplaceAll(forged, tc.ID, "call_pmn_"+strings.Repeat("B", 32))
				}
				forgedResp := s.post(t, forged, bearer(editor)...)
				forgedBody, _ := io.ReadAll(forgedResp.Body)
				is.Equal(stolen.StatusCode, 404)
				is.Equal(forgedResp.StatusCode, 404)
				is.Equal(string(stolenBody), string(forgedBody)) // the same body as a forged id
				var e errorBody
				is.NoErr(json.Unmarshal(stolenBody, &e))
				is.Equal(e.Error.Code, "unknown_tool_call")

				codes := raceContinuationsAs(router, body, 32, s)
				is.Equal(codes, map[string]int{"404 unknown_tool_call": 32}) // every racer from the wrong slot is refused, none rate-limited
				is.Equal(s.emu.Count(emulator.KindToolResponse), 0)          // and nothing was dispatched

				status, c, _ = turnResult(t, s, body, bearer(editor)...)
				is.Equal(status, 200) // the owner continues
				is.Equal(c.Choices[0].FinishReason, "stop")
				is.Equal(s.emu.Count(emulator.KindToolResponse), 1)
			})
		}
	}
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestServePicksUpKeyChangesWithoutARestart(t *testing.T) {
	is := is.New(t)
	s, file, editor, router := keysServe(t, "access_token", nil)
	status := func(key, body string) int { return s.post(t, body, bearer(key)...).StatusCode }
	hello := userBody("hello", false, "")

	is.Equal(status(editor, hello), 200)
	is.Equal(status(router, hello), 200)
	models := s.get(t, "/v1/models", bearer(router)...)
	is.True(strings.Contains(models, testModel))

	late := newSlotKey(t, file, "--id", "late")
	eventually(t, "a new slot works", func() bool { return status(late, hello) == 200 })

	_, err := keysCmd(t, file, "revoke", "editor")
	is.NoErr(err)
	eventually(t, "a revoked slot is refused", func() bool { return status(editor, hello) == 401 })
	is.Equal(status(router, hello), 200) // the others are untouched

	is.NoErr(os.WriteFile(file, []byte(`{"version":1,"slots":[{"id":"broken"`), 0o600))
	eventually(t, "the broken file is reported", func() bool { return strings.Contains(s.logs.String(), "key file refused") })
	is.Equal(status(router, hello), 200) // a broken file keeps the previous set
	is.Equal(status(late, hello), 200)
	is.Equal(status(editor, hello), 401)
	for _, k := range []string{editor, router, late} {
		is.True(!strings.Contains(s.logs.String(), k)) // no key in any log line
	}
}

// get performs an authenticated GET and returns the body.
func (s *served) get(t *testing.T, path string, header ...string) string {
	t.Helper()
	b, _ := io.ReadAll(s.do(t, "GET", path, nil, header...).Body)
	return string(b)
}

func TestARotatedAPIKeyCannotContinueTheOldKeysToolCalls(t *testing.T) {
	is := is.New(t)
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	env := map[string]string{"CORRELATION_STORE": "postgres", "CORRELATION_POSTGRES_URL": pgSchema(t),
		"CORRELATION_PRINCIPAL_KEY": base64.RawURLEncoding.EncodeToString(k)}
	emu := newEmulator(t)
	before := serveWith(t, emu, "access_token", env)
	_, cont, _ := pending(t, before, "issued to the old key")
	body := chatBody(t, testModel, cont, toolsJSON, "")

	rotatedKey := "sk-rotated-0123456789abcdef"
	env["PROVIDER_API_KEY"] = rotatedKey
	after := serveWith(t, emu, "access_token", env) // a replica (or a restart) with the new key
	status, _, e := turnResult(t, after, body, bearer(rotatedKey)...)
	is.Equal(status, 404) // the new key is a new trust domain
	is.Equal(e.Error.Code, "unknown_tool_call")
	is.Equal(emu.Count(emulator.KindToolResponse), 0)

	status, _, _ = turnResult(t, before, body) // the old key, while still configured, continues
	is.Equal(status, 200)
	is.Equal(emu.Count(emulator.KindToolResponse), 1)
}

func TestReplicasShareSlotsThroughOneKeyFile(t *testing.T) {
	is := is.New(t)
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	file := filepath.Join(t.TempDir(), "keys.json")
	editor := newSlotKey(t, file, "--id", "editor")
	env := map[string]string{"PROVIDER_API_KEY": "", "PROVIDER_KEYS_FILE": file, "CORRELATION_STORE": "postgres",
		"CORRELATION_POSTGRES_URL": pgSchema(t), "CORRELATION_PRINCIPAL_KEY": base64.RawURLEncoding.EncodeToString(k)}
	emu := newEmulator(t)
	a, b := serveWith(t, emu, "web_session", env), serveWith(t, emu, "web_session", env)

	history := []msg{{"role": "user", "content": "weather please"}}
	status, c, _ := turnResult(t, a, chatBody(t, testModel, history, toolsJSON, ""), bearer(editor)...)
	is.Equal(status, 200)
	body := chatBody(t, testModel, append(history, assistantAndResults(c, sunny)...), toolsJSON, "")

	late := newSlotKey(t, file, "--id", "late")
	hello := userBody("hello", false, "")
	for _, s := range []*served{a, b} {
		eventually(t, "each replica reloads the file", func() bool { return s.post(t, hello, bearer(late)...).StatusCode == 200 })
	}
	status, _, e := turnResult(t, b, body, bearer(late)...)
	is.Equal(status, 404) // another slot, on the other replica, cannot continue it
	is.Equal(e.Error.Code, "unknown_tool_call")
	status, _, _ = turnResult(t, b, body, bearer(editor)...)
	is.Equal(status, 200) // the same slot continues through the other replica
	is.Equal(emu.Count(emulator.KindToolResponse), 1)
}

func TestMetricsAndTheControlPageNameTheSlotNeverTheKey(t *testing.T) {
	is := is.New(t)
	s, _, k := slotsServe(t, "access_token", nil, []string{"--id", "editor"}, []string{"--id", "router", "--models", testModel},
		[]string{"--id", "owner", "--scope", "admin"})
	editor, router, owner := k["editor"], k["router"], k["owner"]
	is.Equal(s.post(t, userBody("hello", false, ""), bearer(editor)...).StatusCode, 200)
	is.Equal(s.post(t, userBody("hello", false, ""), bearer(router)...).StatusCode, 200)
	metrics := s.get(t, "/metrics", bearer(owner)...)
	is.True(strings.Contains(metrics, `pmgate_key_requests_total{slot="editor"} 1`)) // counted per slot id
	is.True(strings.Contains(metrics, `pmgate_key_requests_total{slot="router"} 1`))
	live := s.get(t, "/admin/api/live", bearer(owner)...)
	is.True(strings.Contains(live, `"slot":"editor"`)) // the recent list names the slot
	for _, k := range []string{editor, router, owner} {
		is.True(!strings.Contains(metrics, k)) // never a key
		is.True(!strings.Contains(live, k))
	}
}

func TestKeysNewRefusesAnAllowlistItCannotCheck(t *testing.T) {
	is := is.New(t)
	file := filepath.Join(t.TempDir(), "keys.json")
	var out, errOut bytes.Buffer
	env := map[string]string{"PROVIDER_KEYS_FILE": file} // no PROVIDER_MODELS: nothing to check --models against
	err := run(t.Context(), []string{"keys", "new", "--models", "no-such-model"}, func(k string) string { return env[k] }, &out, &errOut)
	is.True(err != nil)                                       // refused rather than a file serve would refuse
	is.True(strings.Contains(err.Error(), "PROVIDER_MODELS")) // saying what it needs
	_, statErr := os.Stat(file)
	is.True(os.IsNotExist(statErr)) // nothing written
	is.True(!keyLine.MatchString(out.String()))
}

func TestKeysRevokeWritesARevocationEvenWhenTheRestOfTheFileIsRefused(t *testing.T) {
	is := is.New(t)
	file := filepath.Join(t.TempDir(), "keys.json")
	newSlotKey(t, file, "--id", "editor")
	newSlotKey(t, file, "--id", "router", "--models", testModel)
	// PROVIDER_MODELS changes: router's allowlist is no longer served.
	var out, errOut bytes.Buffer
	env := map[string]string{"PROVIDER_KEYS_FILE": file, "PROVIDER_MODELS": "gpt-other"}
	err := run(t.Context(), []string{"keys", "revoke", "editor"}, func(k string) string { return env[k] }, &out, &errOut)
	is.NoErr(err)                                        // the revocation is written
	is.True(strings.Contains(out.String(), "warning: ")) // and the refused rest is named
	list, err := keysCmd(t, file, "list")
	is.NoErr(err)
	is.True(!strings.Contains(list, "editor")) // revoked
	is.True(strings.Contains(list, "router"))
}
