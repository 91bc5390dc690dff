package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/secret"
)

func TestTheRedactingLoggerRemovesSecrets(t *testing.T) {
	is := is.New(t)
	const cookie, downstreamKey = "sid-SECRET-cookie-0123456789", "pk-DOWNSTREAM-key-0123456789abcdef"
	var buf bytes.Buffer
	l := slog.New(redactingHandler(slog.NewTextHandler(&buf, nil), secret.NewRedactor(cookie, downstreamKey)))
	l = l.With("k", "with "+cookie)
	l.Info("msg postman.sid="+cookie, "a", "Bearer abc.def", "b", errors.New("x-access-token: tok-1"),
		slog.Group("g", "c", downstreamKey), "n", 7)
	out := buf.String()
	for _, s := range []string{cookie, downstreamKey, "abc.def", "tok-1"} {
		is.True(!strings.Contains(out, s)) // every secret and credential pattern is removed
	}
	is.True(strings.Contains(out, "n=7"))           // other values stay
	is.True(strings.Contains(out, secret.Redacted)) // with the redaction marker
}
