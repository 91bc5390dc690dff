package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// verifyRaw runs `gateway verify` with the seeded flags on raw and returns
// its output and error.
func verifyRaw(t *testing.T, raw []byte, flags ...string) (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	args := append([]string{"verify"}, append(append(append([]string(nil), seededFlags...), flags...), path)...)
	err := run(t.Context(), args, noEnv, &out, &out)
	return out.String(), err
}

func goodReport(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/probe/good.json")
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// editReport applies edit to the decoded good seed and encodes it again.
func editReport(t *testing.T, edit func(d map[string]any)) []byte {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(goodReport(t), &d); err != nil {
		t.Fatal(err)
	}
	edit(d)
	raw, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestVerifyRefusesARepeatedKey(t *testing.T) {
	is := is.New(t)
	good := goodReport(t)
	for name, raw := range map[string]string{
		"top level": strings.Replace(string(good), `"mode": "emulator",`, `"mode": "emulator", "mode": "live",`, 1),
		"nested":    strings.Replace(string(good), `"public": "pmgate-demo",`, `"public": "pmgate-demo", "public": "pmgate-demo",`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			is.True(raw != string(good))
			out, err := verifyRaw(t, []byte(raw))
			is.True(err != nil) // one report must not read differently to another parser
			is.Equal(failedBranches(out), []string{branchFormat})
			is.True(strings.Contains(out, "repeated key"))
		})
	}
}

func TestVerifyRefusesTrailingData(t *testing.T) {
	is := is.New(t)
	for _, tail := range []string{"{}", `{"schema":"x"}`, "[]", "1"} {
		out, err := verifyRaw(t, append(goodReport(t), tail...))
		is.True(err != nil)
		is.Equal(failedBranches(out), []string{branchFormat})
		is.True(strings.Contains(out, "data after the report object")) // saying what is wrong
	}
}

func TestVerifyRefusesAReportWhoseOwnVerdictIsFail(t *testing.T) {
	is := is.New(t)
	out, err := verifyRaw(t, editReport(t, func(d map[string]any) { d["verdict"] = "fail" }))
	is.True(err != nil) // the probe said it failed: verify does not overrule it
	is.Equal(failedBranches(out), []string{branchVerdict})
	out, err = verifyRaw(t, editReport(t, func(d map[string]any) { d["failures"] = []any{"cleanup: shutdown not proven clean"} }))
	is.True(err != nil) // a pass with failures listed is no pass
	is.Equal(failedBranches(out), []string{branchVerdict})
}

func TestVerifyRefusesAReportWrittenInTheFuture(t *testing.T) {
	is := is.New(t)
	out, err := verifyRaw(t, goodReport(t), "--now", "2026-12-01T08:50:00Z") // written ten minutes later
	is.True(err != nil)
	is.Equal(failedBranches(out), []string{branchFreshness})
	is.True(strings.Contains(out, "written in the future"))
	_, err = verifyRaw(t, goodReport(t), "--now", "2026-12-01T08:58:00Z") // within the clock skew allowed
	is.NoErr(err)
}

func TestVerifyRefusesAContinuationsBudgetAboveTheDefault(t *testing.T) {
	is := is.New(t)
	out, err := verifyRaw(t, editReport(t, func(d map[string]any) {
		d["policy"].(map[string]any)["limit_max_continuations"] = 2
	}))
	is.True(err != nil)
	is.Equal(failedBranches(out), []string{branchPolicy})
}

func TestHygieneFindsASixByteSecret(t *testing.T) {
	is := is.New(t)
	raw := editReport(t, func(d map[string]any) { d["model"].(map[string]any)["upstream_enum"] = "Q7x!zP" })
	is.Equal(hygiene(raw, []string{"Q7x!zP"}), "the report contains a configured secret or a marker")
	is.Equal(hygiene(goodReport(t), []string{"Q7x!zP"}), "") // and only when it is there
}

func TestProbeReportMustBeARegularFileOfBoundedSize(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "report.fifo")
	is.NoErr(syscall.Mkfifo(fifo, 0o600))
	big := filepath.Join(dir, "big.json")
	is.NoErr(os.WriteFile(big, bytes.Repeat([]byte(" "), maxReportBytes+1), 0o600))
	for name, path := range map[string]string{"fifo": fifo, "device": "/dev/zero", "too big": big} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			done := make(chan map[string]any, 1)
			go func() {
				_, fields := probeVerification(seededConfig(t, map[string]string{"PROBE_REPORT": path}), time.Now)()
				done <- fields
			}()
			select {
			case fields := <-done:
				is.Equal(fields["upstream_verified_reason"], "PROBE_REPORT could not be read")
			case <-time.After(5 * time.Second):
				if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				t.Fatal("reading PROBE_REPORT blocked")
			}
			var out bytes.Buffer
			err := run(t.Context(), []string{"verify", path}, noEnv, &out, &out)
			is.True(err != nil) // verify refuses it too, at once
		})
	}
}

func TestHealthNeedsALiveReportForAServedModel(t *testing.T) {
	is := is.New(t)
	written := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	at := func() time.Time { return written.Add(time.Hour) }
	dir := t.TempDir()
	write := func(name string, raw []byte) string {
		p := filepath.Join(dir, name)
		is.NoErr(os.WriteFile(p, raw, 0o600))
		return p
	}
	liveRaw := editReport(t, func(d map[string]any) { d["mode"] = "live" })
	live := write("live.json", liveRaw)
	cfg := seededConfig(t, map[string]string{"PROBE_REPORT": live})
	ok, fields := probeVerification(cfg, at)()
	is.True(!ok) // no MAC: anyone could have written it
	is.True(strings.HasPrefix(fields["upstream_verified_reason"].(string), "mac: "))

	write("live.json.mac", []byte(reportMAC(cfg.upstream, liveRaw)+"\n")) // as probe writes it
	ok, fields = probeVerification(cfg, at)()
	is.True(ok) // a live report for this configuration, made with its credential
	is.Equal(fields["upstream_verified_at"], "2026-12-01T09:00:00Z")

	edited := editReport(t, func(d map[string]any) { d["mode"] = "live"; d["written_at"] = "2026-12-01T09:30:00Z" })
	is.True(string(edited) != string(liveRaw))
	write("live.json", edited) // edited after the probe: the MAC no longer matches
	ok, fields = probeVerification(cfg, at)()
	is.True(!ok)
	is.True(strings.HasPrefix(fields["upstream_verified_reason"].(string), "mac: "))
	write("live.json", liveRaw)
	another := seededConfig(t, map[string]string{"PROBE_REPORT": live})
	another.upstream.SessionCookie += "-another"
	write("live.json.mac", []byte(reportMAC(another.upstream, liveRaw)+"\n")) // made with another credential
	ok, _ = probeVerification(cfg, at)()
	is.True(!ok)

	ok, fields = probeVerification(seededConfig(t, map[string]string{"PROBE_REPORT": "testdata/probe/good.json"}), at)()
	is.True(!ok) // the emulator proves nothing about the upstream
	is.True(strings.HasPrefix(fields["upstream_verified_reason"].(string), "mode: "))

	other := write("other.json", editReport(t, func(d map[string]any) {
		d["mode"] = "live"
		d["model"].(map[string]any)["public"] = "pmgate-other"
	}))
	ok, fields = probeVerification(seededConfig(t, map[string]string{"PROBE_REPORT": other}), at)()
	is.True(!ok) // evidence about a model this configuration does not serve
	is.True(strings.HasPrefix(fields["upstream_verified_reason"].(string), "model: "))
}
