package ports_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/ports"
)

func TestNoteRequestKeepsOneGroupPerName(t *testing.T) {
	is := is.New(t)
	is.True(!ports.NoteRequest(context.Background(), "upstream", slog.Int("status", 200))) // no record: the caller logs it itself
	var l ports.RequestLog
	ctx := ports.WithRequestLog(context.Background(), &l)
	is.True(ports.NoteRequest(ctx, "conversation", slog.String("decision", "fresh")))
	is.True(ports.NoteRequest(ctx, "upstream", slog.Int("status", 500)))
	is.True(ports.NoteRequest(ctx, "upstream", slog.Int("status", 200))) // replaced, never a second key
	got := l.AppendGroups([]slog.Attr{slog.String("method", "POST")})
	is.Equal(len(got), 3)
	is.Equal(got[0].Key, "method")
	is.Equal(got[1].String(), "conversation=[decision=fresh]")
	is.Equal(got[2].String(), "upstream=[status=200]")
}
