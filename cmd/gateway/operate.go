package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pmgate/pmgate/adapters/httpapi"
)

// listen opens the gateway's TCP listener; a busy port names the remedy.
func listen(addr, remedy string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%w: listen: %s is already in use (another gateway or demo?); %s", errUsage, addr, remedy)
	}
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}

// readiness is what GET /readyz checks: the correlation store answers, the
// key file gave at least one slot, the process is not draining, and — only
// when PROBE_REQUIRED_FOR_READY is true — a probe report verified the
// upstream. Each check is "ok" or a short fixed reason.
func readiness(cfg config, st *store, keys *httpapi.Keyring, draining *atomic.Bool, verified func() bool) func(context.Context) httpapi.Readiness {
	return func(ctx context.Context) httpapi.Readiness {
		rd := httpapi.Readiness{Ready: true, Checks: map[string]string{}}
		check := func(name string, ok bool, reason string) {
			if ok {
				rd.Checks[name] = "ok"
				return
			}
			rd.Ready, rd.Checks[name] = false, reason
		}
		check("draining", !draining.Load(), "shutting down")
		check("store", storeHealth(ctx, cfg, st)["state"] != "unavailable", "unavailable")
		check("keys", keys.Len() > 0, "no key slot loaded")
		if cfg.readyNeedsProbe {
			check("upstream_verified", verified(), "no valid probe report (PROBE_REPORT)")
		}
		return rd
	}
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printBanner is serve's few human lines on a terminal, besides the JSON log:
// where it listens, the control page, the store and the strategy.
func printBanner(w io.Writer, cfg config, addr string) {
	base := "http://" + addr
	admin := "off (ADMIN_ENABLED)"
	if cfg.adminEnabled {
		admin = base + "/admin"
	}
	fmt.Fprintf(w, `pmgate %s — serving
  base URL  %s/v1
  admin     %s
  store     %s
  strategy  %s
  models    %s
  ready     %s/readyz   (health: %s/health)
`, version, base, admin, cfg.store, cfg.upstream.Strategy, strings.Join(cfg.request.models, ", "), base, base)
}

const readyHelp = `usage: gateway ready [--url URL]

Asks a running gateway's GET /readyz and exits 0 when it is ready, 1 when it
is not or does not answer: the container image's health check (an image built
FROM scratch has no curl).

flags:
  --url URL   the readiness URL (default http://127.0.0.1:PROVIDER_PORT/readyz,
              PROVIDER_PORT defaulting to 8788)

variables read:
  PROVIDER_PORT
`

// runReady is `gateway ready`: one GET of /readyz, bounded by 5 s.
func runReady(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ready", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	port, err := intVar(getenv, "PROVIDER_PORT", 8788, 0, 65535) // serve's own rule for the variable
	if err != nil {
		return err
	}
	url := fs.String("url", "http://127.0.0.1:"+strconv.Itoa(port)+"/readyz", "the readiness URL")
	if done, err := parseFlags(fs, args, readyHelp, stdout); done || err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("%w: --url: %v", errUsage, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("not ready: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	fmt.Fprintf(stdout, "%s", body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("not ready: %s", resp.Status)
	}
	return nil
}
