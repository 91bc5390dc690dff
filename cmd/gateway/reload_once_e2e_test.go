package main

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
)

// TestAReloadNamesAChangeOnce: the documented flow edits the env file (the
// poll reloads it) and then runs `systemctl reload` (SIGHUP): the setting
// that waits for a restart is named by the reload that found it, not again
// by the next one.
func TestAReloadNamesAChangeOnce(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	file := writeEnvFile(t, "", accessTokenEnv(emu, testToken)...)
	s := serveEnvFile(t, emu, file, true)
	writeEnvFile(t, file, append(accessTokenEnv(emu, testToken), "MAX_TOOLS=3")...)
	waitLog(t, s, `"reason":"env_file_changed","applied":"","restart_needed":"MAX_TOOLS"`)
	is.NoErr(syscall.Kill(os.Getpid(), syscall.SIGHUP))
	waitLog(t, s, `"msg":"configuration reloaded","reason":"sighup"`)
	is.Equal(strings.Count(s.logs.String(), `"restart_needed":"MAX_TOOLS"`), 1) // once, by the reload that found it
	is.True(strings.Contains(s.logs.String(), `"reason":"sighup","applied":"","restart_needed":""`))
}
