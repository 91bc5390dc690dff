package porttest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/ports"
)

// NewAttemptStore returns an empty attempt store whose records take at most
// maxBytes; stores are expected to be independent between calls.
type NewAttemptStore func(t *testing.T, maxBytes int64) ports.AttemptStore

// Attempt is a record in flight under key, owned by token, until T0+1m.
func Attempt(key, token string) ports.Attempt {
	return ports.Attempt{Key: key, BodyHash: "body-" + key, Token: token, Deadline: T0.Add(time.Minute), Expires: T0.Add(2 * time.Minute)}
}

// AttemptContract is the contract of ports.AttemptStore.
func AttemptContract(t *testing.T, newStore NewAttemptStore) {
	ctx := context.Background()
	t.Run("the first Begin records in flight, the next returns that record", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t, 1<<20)
		_, ok, err := s.Get(ctx, "k", T0)
		is.NoErr(err)
		is.True(!ok)
		got, began, err := s.Begin(ctx, Attempt("k", "a"), false, T0)
		is.NoErr(err)
		is.True(began)
		is.Equal(got.Token, "a")
		got, began, err = s.Begin(ctx, Attempt("k", "b"), true, T0) // in flight: never replaced
		is.NoErr(err)
		is.True(!began)
		is.Equal(got.Token, "a")
		is.True(!got.Done)
		is.Equal(got.BodyHash, "body-k")
		is.True(got.Deadline.Equal(T0.Add(time.Minute)))
	})
	t.Run("Finish records the outcome of its owner only", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t, 1<<20)
		_, _, err := s.Begin(ctx, Attempt("k", "a"), false, T0)
		is.NoErr(err)
		is.NoErr(s.Finish(ctx, "k", "b", "", []byte("other"), T0.Add(time.Hour), T0)) // not the owner
		got, ok, err := s.Get(ctx, "k", T0)
		is.NoErr(err)
		is.True(ok && !got.Done)
		is.NoErr(s.Finish(ctx, "k", "a", "", []byte(`{"v":1}`), T0.Add(time.Hour), T0))
		got, ok, err = s.Get(ctx, "k", T0)
		is.NoErr(err)
		is.True(ok && got.Done)
		is.Equal(string(got.Answer), `{"v":1}`)
		is.Equal(got.Code, "")
		is.True(got.Expires.Equal(T0.Add(time.Hour)))
		is.NoErr(s.Finish(ctx, "k", "a", "upstream_x", nil, T0.Add(time.Hour), T0)) // finished once
		got, _, _ = s.Get(ctx, "k", T0)
		is.Equal(got.Code, "")
	})
	t.Run("a failure is recorded with its code and no answer", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t, 1<<20)
		_, _, err := s.Begin(ctx, Attempt("k", "a"), false, T0)
		is.NoErr(err)
		is.NoErr(s.Finish(ctx, "k", "a", "upstream_incomplete_stream", nil, T0.Add(time.Hour), T0))
		got, ok, err := s.Get(ctx, "k", T0)
		is.NoErr(err)
		is.True(ok && got.Done)
		is.Equal(got.Code, "upstream_incomplete_stream")
		is.Equal(got.Answer, nil)
	})
	t.Run("a finished record is replaced only when asked", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t, 1<<20)
		_, _, _ = s.Begin(ctx, Attempt("k", "a"), false, T0)
		is.NoErr(s.Finish(ctx, "k", "a", "", []byte("x"), T0.Add(time.Hour), T0))
		got, began, err := s.Begin(ctx, Attempt("k", "b"), false, T0)
		is.NoErr(err)
		is.True(!began)
		is.True(got.Done)
		got, began, err = s.Begin(ctx, Attempt("k", "b"), true, T0)
		is.NoErr(err)
		is.True(began)
		is.True(!got.Done)
		got, _, _ = s.Get(ctx, "k", T0)
		is.Equal(got.Token, "b")
		is.True(!got.Done)
		is.Equal(got.Answer, nil)
	})
	t.Run("Abandon removes the owner's record in flight", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t, 1<<20)
		_, _, _ = s.Begin(ctx, Attempt("k", "a"), false, T0)
		is.NoErr(s.Abandon(ctx, "k", "b"))
		_, ok, _ := s.Get(ctx, "k", T0)
		is.True(ok) // not the owner
		is.NoErr(s.Abandon(ctx, "k", "a"))
		_, ok, _ = s.Get(ctx, "k", T0)
		is.True(!ok)
		_, began, err := s.Begin(ctx, Attempt("k", "c"), false, T0)
		is.NoErr(err)
		is.True(began)
	})
	t.Run("Await marks the owner's record in flight", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t, 1<<20)
		_, _, _ = s.Begin(ctx, Attempt("k", "a"), false, T0)
		got, _, _ := s.Get(ctx, "k", T0)
		is.True(!got.Awaited)
		is.NoErr(s.Await(ctx, "k", "b")) // not the owner
		got, _, _ = s.Get(ctx, "k", T0)
		is.True(!got.Awaited)
		is.NoErr(s.Await(ctx, "k", "a"))
		got, _, _ = s.Get(ctx, "k", T0)
		is.True(got.Awaited)
		is.NoErr(s.Finish(ctx, "k", "a", "", []byte("x"), T0.Add(time.Hour), T0))
		_, began, _ := s.Begin(ctx, Attempt("k", "c"), true, T0)
		is.True(began)
		got, _, _ = s.Get(ctx, "k", T0)
		is.True(!got.Awaited) // a new attempt is awaited by nobody yet
	})
	t.Run("an expired record is gone and frees its room", func(t *testing.T) {
		is := is.New(t)
		a := Attempt("k", "a")
		s := newStore(t, a.Size()+10)
		_, began, err := s.Begin(ctx, a, false, T0)
		is.NoErr(err)
		is.True(began)
		_, _, err = s.Begin(ctx, Attempt("j", "b"), false, T0)
		is.True(err == ports.ErrAttemptsFull) // over the budget
		_, ok, _ := s.Get(ctx, "k", a.Expires)
		is.True(!ok) // expired
		_, began, err = s.Begin(ctx, Attempt("j", "b"), false, a.Expires)
		is.NoErr(err)
		is.True(began)
	})
	t.Run("an answer over the budget is dropped, the record kept", func(t *testing.T) {
		is := is.New(t)
		a := Attempt("k", "a")
		s := newStore(t, a.Size()+100)
		_, _, _ = s.Begin(ctx, a, false, T0)
		is.NoErr(s.Finish(ctx, "k", "a", "", make([]byte, 200), T0.Add(time.Hour), T0))
		got, ok, err := s.Get(ctx, "k", T0)
		is.NoErr(err)
		is.True(ok && got.Done)
		is.Equal(got.Code, "")
		is.Equal(got.Answer, nil) // not kept
	})
	t.Run("concurrent Begins of one key: exactly one owns it", func(t *testing.T) {
		is := is.New(t)
		s := newStore(t, 1<<20)
		var mu sync.Mutex
		owners := 0
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, began, err := s.Begin(ctx, Attempt("k", fmt.Sprint(i)), false, T0)
				if err != nil {
					t.Error(err)
				}
				if began {
					mu.Lock()
					owners++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		is.Equal(owners, 1)
	})
}
