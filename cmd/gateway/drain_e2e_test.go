package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestReadyzAnswersDrainingDuringTheShutdownDelay: with SHUTDOWN_DELAY_MS,
// a stopping gateway keeps serving for that long and /readyz answers 503
// with its draining check, as the README says; then it stops.
func TestReadyzAnswersDrainingDuringTheShutdownDelay(t *testing.T) {
	is := is.New(t)
	s := serveWith(t, newEmulator(t), "access_token", map[string]string{"SHUTDOWN_DELAY_MS": "3000"})
	resp, err := http.Get(s.base + "/readyz")
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, 200) // ready before the signal
	s.cancel()                     // SIGTERM
	var got struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		resp, err = http.Get(s.base + "/readyz")
		is.NoErr(err) // still accepting during the delay
		_ = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if resp.StatusCode == 503 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	is.Equal(resp.StatusCode, 503)
	is.Equal(got.Status, "not_ready")
	is.Equal(got.Checks["draining"], "shutting down") // the load balancer's cue
	select {
	case err := <-s.done:
		is.NoErr(err) // then a clean exit
		s.done <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop after the delay")
	}
}
