package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// The bounds of the files the configuration names and the gateway reads at
// start and again on every reload.
const (
	maxEnvFileBytes  = 1 << 20  // an env file (a real one is a few KiB)
	maxCertFileBytes = 4 << 20  // SSL_CERT_FILE and each file of SSL_CERT_DIR (a system bundle is ~0.2 MiB)
	maxCertDirBytes  = 64 << 20 // all the files of SSL_CERT_DIR together
	maxReportBytes   = 1 << 20  // a probe report (a real one is a few KiB)
)

// errNotRegular is readRegular's refusal of a FIFO, a device, a directory or
// a socket.
var errNotRegular = errors.New("not a regular file")

// errTooLarge is readRegular's refusal of a file over its bound.
type errTooLarge int

func (e errTooLarge) Error() string { return fmt.Sprintf("larger than %d bytes", int(e)) }

// readRegular reads a file the configuration names: a regular file only (a
// FIFO would block the reader, at start or in the reload goroutine; a device
// such as /dev/zero never ends), opened without blocking and checked on the
// open descriptor (so a swap after a check cannot slip a FIFO in), and at most
// max bytes, of which it never holds more than max+1. Its errors name neither
// the path nor any content: the caller names the setting. A failed open
// returns the *os.PathError (osReason words it).
func readRegular(path string, max int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, errNotRegular
	}
	raw, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > max {
		return nil, errTooLarge(max)
	}
	return raw, nil
}

// fileProblem words a readRegular error for a refusal: the rule broken, never
// the path or the content.
func fileProblem(err error) string {
	var tl errTooLarge
	switch {
	case errors.Is(err, errNotRegular):
		return "is not a regular file (a FIFO or a device would block or never end)"
	case errors.As(err, &tl):
		return "is " + tl.Error()
	}
	return "cannot be read: " + osReason(err)
}
