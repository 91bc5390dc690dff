package main

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestAnEnvFileChangedAsTheGatewayStartsIsReloaded: a deploy step that edits
// the env file as soon as the gateway says it is listening gets its change
// reloaded by the poll. The edit is made while the "listening" line is being
// written, before the watcher has started: the watcher compares with the
// file the configuration was read from, not with the one it finds when it
// starts (then the edit would wait, unnoticed, for a later one).
func TestAnEnvFileChangedAsTheGatewayStartsIsReloaded(t *testing.T) {
	emu := newEmulator(t)
	file := writeEnvFile(t, "", accessTokenEnv(emu, testToken)...)
	edited := append(accessTokenEnv(emu, testToken), "MAX_TOOLS=3")
	var once sync.Once
	s := serveEnvFileSeeing(t, emu, file, true, func(line []byte) {
		if !bytes.Contains(line, []byte(`"msg":"listening"`)) {
			return
		}
		once.Do(func() { // as writeEnvFile, from the gateway's goroutine (no t.Fatal)
			if err := os.WriteFile(file+".tmp", []byte(strings.Join(edited, "\n")+"\n"), 0o600); err != nil {
				t.Error(err)
			}
			if err := os.Rename(file+".tmp", file); err != nil {
				t.Error(err)
			}
		})
	})
	waitLog(t, s, `"reason":"env_file_changed","applied":"","restart_needed":"MAX_TOOLS"`)
}

// TestASIGHUPAsTheGatewayStartsIsAReload: `systemctl reload` right after a
// start sends SIGHUP as soon as the gateway says it is listening (or
// earlier). It is a reload — the key file and the configuration are read
// again — never the end of the process, SIGHUP's default. The signal is sent
// while the "listening" line is being written.
func TestASIGHUPAsTheGatewayStartsIsAReload(t *testing.T) {
	emu := newEmulator(t)
	file := writeEnvFile(t, "", accessTokenEnv(emu, testToken)...)
	var once sync.Once
	s := serveEnvFileSeeing(t, emu, file, true, func(line []byte) {
		if !bytes.Contains(line, []byte(`"msg":"listening"`)) {
			return
		}
		once.Do(func() {
			if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
				t.Error(err)
			}
		})
	})
	waitLog(t, s, `"msg":"configuration reloaded","reason":"sighup"`)
	select {
	case err := <-s.done:
		t.Fatalf("serve ended on SIGHUP: %v", err)
	default:
	}
}
