// Command hop is the floor of any gateway for the load rig: a bare
// httputil.ReverseProxy on a loopback address that forwards every request to
// the emulator origin over TLS (trusting only the CA file given by -ca), adds
// the x-access-token header and flushes SSE immediately. It parses nothing and
// rewrites nothing else, so whatever a real gateway costs beyond it is the
// gateway's own work. Its one addition to a textbook ReverseProxy is full
// duplex on the inbound request (see run), without which it drops streams.
//
// It prints "hop listening http://ADDR" on stdout once it accepts connections
// and stops on SIGINT or SIGTERM. The token comes from the environment
// variable named by -token-env (default HOP_ACCESS_TOKEN), never from a flag.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hop:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("hop", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address (loopback only)")
	upstream := fs.String("upstream", "", "emulator origin, https://127.0.0.1:PORT (loopback only)")
	caFile := fs.String("ca", "", "PEM file of the CA to trust for the upstream")
	tokenEnv := fs.String("token-env", "HOP_ACCESS_TOKEN", "environment variable holding the x-access-token value")
	maxIdle := fs.Int("max-idle", 256, "idle upstream connections kept per host")
	if err := fs.Parse(args); err != nil {
		return err
	}
	target, err := url.Parse(*upstream)
	if err != nil || target.Scheme != "https" || target.Host == "" || (target.Path != "" && target.Path != "/") {
		return errors.New("-upstream must be https://HOST:PORT")
	}
	if !loopback(target.Hostname()) {
		return errors.New("-upstream must be a loopback address")
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || !loopback(host) {
		return errors.New("-addr must be a loopback host:port")
	}
	token := os.Getenv(*tokenEnv)
	if token == "" {
		return fmt.Errorf("%s is empty", *tokenEnv)
	}
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		return fmt.Errorf("read -ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return errors.New("-ca holds no PEM certificate")
	}
	if *maxIdle < 1 {
		return errors.New("-max-idle must be positive")
	}

	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool},
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   false,
		DisableCompression:  true,
		MaxIdleConns:        *maxIdle,
		MaxIdleConnsPerHost: *maxIdle,
		IdleConnTimeout:     90 * time.Second,
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target) // also sets the outbound Host to the upstream's
			pr.Out.Header.Set("X-Access-Token", token)
		},
		Transport:     transport,
		FlushInterval: -1, // flush after every write: SSE passes through at once
		ErrorLog:      log.New(os.Stderr, "hop: ", log.LstdFlags|log.Lmicroseconds),
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Full duplex: otherwise net/http drains and closes the inbound body when
	// the response header is written, and the transport's final read of that
	// body (its check that nothing follows Content-Length) then fails and tears
	// down the upstream connection mid-response (golang/go#40747).
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		proxy.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "hop listening http://%s\n", ln.Addr())

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	transport.CloseIdleConnections()
	return nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
