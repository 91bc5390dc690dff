package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// mkfifo makes a FIFO in a fresh directory and returns its path. On the
// test's end it is opened for writing once, so a reader the defect left
// blocked on it is released (a test that failed must not hang the run).
func mkfifo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() { releaseFIFO(path) })
	return path
}

// releaseFIFO gives a reader blocked on the FIFO at path its end of file.
func releaseFIFO(path string) {
	if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}

// returnsWithin runs f and fails the test when it has not returned after d; then it
// releases fifo (the reader the defect blocked) and waits for f.
func returnsWithin[T any](t *testing.T, d time.Duration, fifo string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(d):
		for {
			releaseFIFO(fifo)
			select {
			case <-done:
				t.Fatalf("still waiting on the FIFO after %s", d)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// TestAFIFOAsTheEnvFileIsRefusedAtOnce: check-config and serve refuse an env
// file that is a FIFO (or a device) at once, naming --env-file, instead of
// waiting for a writer.
func TestAFIFOAsTheEnvFileIsRefusedAtOnce(t *testing.T) {
	for _, command := range []string{"check-config", "serve"} {
		t.Run(command, func(t *testing.T) {
			is := is.New(t)
			fifo := mkfifo(t)
			var errOut bytes.Buffer
			err := returnsWithin(t, 5*time.Second, fifo, func() error {
				return run(t.Context(), []string{command, "--env-file", fifo}, noEnv, io.Discard, &errOut)
			})
			is.Equal(exitCode(err), 2) // a usage error, at once
			is.True(strings.Contains(err.Error(), "--env-file is not a regular file"))
			err = run(t.Context(), []string{command, "--env-file", os.DevNull}, noEnv, io.Discard, &errOut)
			is.True(err != nil && strings.Contains(err.Error(), "--env-file is not a regular file")) // a device neither
		})
	}
}

// TestAnEnvFileLargerThanItsBoundIsRefused: the env file is read to its
// bound, never further.
func TestAnEnvFileLargerThanItsBoundIsRefused(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "big.env")
	is.NoErr(os.WriteFile(path, []byte("A=1\n"), 0o600))
	is.NoErr(os.Truncate(path, maxEnvFileBytes+1)) // a valid line, then NULs past the bound
	_, err := readEnvFile(path)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "--env-file is larger than 1048576 bytes"))
}

// TestAReloadThatFindsAFIFOIsRefusedAndTheNextOneApplies: the env file of a
// running serve is replaced by a FIFO; the reload is refused at once (it
// used to wedge the reload goroutine, losing every later reload), and the
// next change — a rotated PROVIDER_API_KEY — is applied: the new key works,
// the old one is refused.
func TestAReloadThatFindsAFIFOIsRefusedAndTheNextOneApplies(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	file := writeEnvFile(t, "", accessTokenEnv(emu, testToken)...)
	s := serveEnvFile(t, emu, file, true)
	fifo := mkfifo(t)
	is.NoErr(os.Link(fifo, file+".fifo"))
	is.NoErr(os.Rename(file+".fifo", file)) // the env file is now the FIFO
	t.Cleanup(func() { releaseFIFO(fifo) }) // runs before serve's cleanup: a wedged reload ends
	waitLog(t, s, `"msg":"configuration reload refused; the previous configuration stays in force","reason":"env_file_changed"`)
	is.True(strings.Contains(s.logs.String(), "--env-file is not a regular file"))

	rotated := "sk-rotated-after-fifo-0123456789"
	writeEnvFile(t, file, append(accessTokenEnv(emu, testToken), "PROVIDER_API_KEY="+rotated)...)
	waitLog(t, s, `"applied":"PROVIDER_API_KEY"`)
	status, _ := chatStatus(t, s, rotated)
	is.Equal(status, 200) // the new key is in force
	status, _ = chatStatus(t, s, testKey)
	is.Equal(status, 401) // the old one is gone
}

// TestTheTrustFilesAreBoundedRegularFiles: SSL_CERT_FILE must be a regular
// file within its bound; a FIFO, a device or an oversized file is refused at
// once with the setting named and nothing of the file quoted. In SSL_CERT_DIR
// a FIFO is skipped (never waited on) and an oversized file refused.
func TestTheTrustFilesAreBoundedRegularFiles(t *testing.T) {
	emu := newEmulator(t)
	ca, err := os.ReadFile(emu.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	// A valid certificate followed by NULs past the bound: accepted only by a
	// reader that ignores the bound.
	big := filepath.Join(t.TempDir(), "big.pem")
	if err := os.WriteFile(big, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, maxCertFileBytes+1); err != nil {
		t.Fatal(err)
	}

	t.Run("SSL_CERT_FILE", func(t *testing.T) {
		is := is.New(t)
		fifo := mkfifo(t)
		for path, want := range map[string]string{
			fifo:       "SSL_CERT_FILE: is not a regular file",
			os.DevNull: "SSL_CERT_FILE: is not a regular file",
			big:        "SSL_CERT_FILE: is larger than 4194304 bytes",
		} {
			err := returnsWithin(t, 5*time.Second, fifo, func() error { return poolErr(path, "") })
			is.True(err != nil) // refused
			is.True(strings.Contains(err.Error(), want))
			is.True(!strings.Contains(err.Error(), path)) // the rule, not the path
		}
		pool, err := rootPool(emu.CAFile(), "")
		is.NoErr(err)
		is.True(pool != nil) // a real bundle still reads
	})

	t.Run("SSL_CERT_DIR", func(t *testing.T) {
		is := is.New(t)
		dir := t.TempDir()
		is.NoErr(os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o600))
		fifo := filepath.Join(dir, "a-fifo")
		is.NoErr(syscall.Mkfifo(fifo, 0o600))
		t.Cleanup(func() { releaseFIFO(fifo) })
		err := returnsWithin(t, 5*time.Second, fifo, func() error { return poolErr("", dir) })
		is.NoErr(err) // the FIFO is skipped, the certificate beside it read
		is.NoErr(os.Link(big, filepath.Join(dir, "big.pem")))
		err = poolErr("", dir)
		is.True(err != nil) // an oversized file is refused, not skipped
		is.True(strings.Contains(err.Error(), "SSL_CERT_DIR: holds a file larger than 4194304 bytes"))
	})
}

// poolErr is rootPool's error.
func poolErr(file, dir string) error { _, err := rootPool(file, dir); return err }

// TestCheckConfigNamesSSLCertFileForAFIFO: the refusal is one of
// check-config's problems, naming the setting, at start (a reload reads the
// same way).
func TestCheckConfigNamesSSLCertFileForAFIFO(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	fifo := mkfifo(t)
	file := writeEnvFile(t, "", append(accessTokenEnv(emu, testToken), "SSL_CERT_FILE="+fifo)...)
	var errOut bytes.Buffer
	err := returnsWithin(t, 5*time.Second, fifo, func() error {
		return run(t.Context(), []string{"check-config", "--env-file", file}, noEnv, io.Discard, &errOut)
	})
	is.Equal(exitCode(err), 78) // a configuration refusal
	is.True(strings.Contains(errOut.String(), "SSL_CERT_FILE: is not a regular file"))
}
