package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/keyfile"
	"github.com/pmgate/pmgate/adapters/ops"
	"github.com/pmgate/pmgate/adapters/otel"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/adapters/system"
	"github.com/pmgate/pmgate/adapters/update"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/ports"
)

// usageFlushInterval is how often the usage ledger's buffered rows are
// written to the store.
const usageFlushInterval = time.Second

// shutdownGrace bounds how long in-flight requests may finish after a signal.
const shutdownGrace = 30 * time.Second

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, upstream []postman.Option, started func(*gateway)) error {
	src, done, err := configSource("serve", serveHelp, args, getenv, stdout)
	if done || err != nil {
		return err
	}
	// SIGHUP is caught from here on: one sent while the gateway starts (a
	// reload right after a start) is a reload once it runs, never the end of
	// the process (SIGHUP's default).
	hup := notifyHUP()
	reloading := false
	defer func() {
		if !reloading {
			signal.Stop(hup)
		}
	}()
	// The env file's stamp is taken before the file is read: a change made
	// after the read, even while the gateway is still starting, is one the
	// first poll sees (taken later, it would be the stamp of the changed
	// file, and the change would wait for the next one).
	envStamp := fileStamp(src.envPath)
	cfg, env, err := src.load()
	if err != nil {
		for _, w := range cfg.fileWarnings { // a misspelt name is often why a value is missing
			fmt.Fprintf(stderr, "gateway: warning: %s\n", w)
		}
		return err
	}
	log, lc := newLoggerControl(cfg, stderr)
	for _, w := range configWarnings(cfg) {
		log.Warn("configuration warning", "warning", w)
	}
	cfg = applyMeasuredLimits(cfg, time.Now(), log)
	gw, err := startGateway(ctx, cfg, log, upstream...)
	if err != nil {
		return err
	}
	gw.enableReload(hup, src, env, lc, envStamp)
	reloading = true
	if started != nil {
		started(gw)
	}
	if isTerminal(stdout) {
		printBanner(stdout, cfg, gw.addr())
	}
	return gw.wait(ctx)
}

// gateway is a running gateway process: listener, HTTP server, store sweeper.
type gateway struct {
	cfg    config
	log    *slog.Logger
	ln     net.Listener
	srv    *http.Server
	store  *store
	svc    *app.Gateway
	stop   context.CancelFunc
	served chan error
	wg     sync.WaitGroup
	// runCtx ends when the gateway stops; reload watchers run under it.
	runCtx context.Context
	// live holds what a reload may replace (reload.go).
	live *liveState
	// events is the gateway's one observer: the monitor and the log
	// subscribe to it (the probe too); closed after the last request.
	events *app.Observers
}

// startGateway wires the ports into the app and starts serving. opts reach the
// Postman adapter (the demo trusts its emulator's CA and dials it).
func startGateway(ctx context.Context, cfg config, log *slog.Logger, opts ...postman.Option) (*gateway, error) {
	return startGatewayWith(ctx, cfg, log, nil, opts...)
}

// startGatewayWith is startGateway with the adapter wrapped by wrap (nil: not
// wrapped); `gateway probe` counts and bounds its dispatches this way.
func startGatewayWith(ctx context.Context, cfg config, log *slog.Logger, wrap func(ports.Upstream) ports.Upstream, opts ...postman.Option) (*gateway, error) {
	var store *store
	var window func() ports.RateWindow    // the adapter's, once it exists
	var credits func() ports.CreditReport // the adapter's, once it exists
	events := app.NewObservers(log)
	monitorCfg := ops.MonitorConfig{Version: version, Strategy: string(cfg.upstream.Strategy),
		Counts: func(ctx context.Context) (correlation.Counts, error) { return store.Counts(ctx) }, Events: events,
		RateWindow: func() ports.RateWindow { return window() }, Credits: func() ports.CreditReport { return credits() }}
	events.Subscribe("log", app.LogObserver{Log: log})
	started := false
	defer func() {
		if !started {
			events.Close()
		}
	}()
	var checker *update.Checker // the update notice, only where the owner set a manifest URL
	if cfg.updateManifest != nil {
		checker = update.New(cfg.updateManifest, version, nil, time.Now)
	}
	live := &liveState{log: log, events: events, opts: opts, strategy: string(cfg.upstream.Strategy)}
	var tracer ports.Tracer // nil: off, and the request path checks only that
	if cfg.otelEndpoint != "" {
		t, err := otel.New(ctx, cfg.otelEndpoint, cfg.otelService, version)
		if err != nil {
			return nil, err
		}
		tracer, live.tracer = t, t
	}
	client, err := live.newClient(cfg)
	if err != nil {
		return nil, err
	}
	store, err = openStore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	var upstream ports.Upstream = client
	window, credits = client.RateWindow, client.Credits
	if wrap != nil {
		upstream = wrap(client)
	} else {
		window, credits = live.rateWindow, live.credits // the adapter in force: a reload builds another
		// Only a gateway whose adapter is not wrapped (serve, demo) swaps it
		// on reload; the probe's wrapper counts one adapter's dispatches.
		var adapter ports.Upstream = client
		live.upstream.Store(&adapter)
		upstream = live
	}
	svc := app.New(app.Config{WorkspaceID: cfg.upstream.WorkspaceID, Correlation: cfg.correlation, Policy: cfg.policy,
		Resume: cfg.resume, Observer: events}, upstream, store, system.Clock{}, system.IDs{}, log)
	anchors := store.anchors
	if anchors != nil {
		svc.WithAnchors(anchors, cfg.anchorPolicy)
	}
	if store.attempts != nil {
		svc.WithAttempts(store.attempts, app.AttemptPolicy{TTL: cfg.attemptTTL, Grace: 30 * time.Second})
	}
	budget := app.NewUsage(store.usage, system.Clock{}, log, cfg.usageRetention)
	svc.WithUsage(budget)
	keys := apiKeys(cfg)
	live.keys, live.cfg = keys, cfg
	live.setVerification(probeVerification(cfg, time.Now))
	var keyWatch *keyfile.Watcher
	if cfg.keysFile != "" {
		keyWatch = keyWatcher(cfg, keys, log)
		keys.SetRefresh(keyWatch.Refresh) // the same owner as the poll's: it knows what this loads
	}
	monitorCfg.Usage, monitorCfg.Slots = budget, keys.Slots
	monitor := ops.NewMonitor(monitorCfg)
	verification := live.verification
	health := func(ctx context.Context) map[string]any {
		h := map[string]any{"correlation": storeHealth(ctx, cfg, store), "conversation": anchorHealth(ctx, cfg, anchors),
			"upstream_limits": limitsHealth(cfg)}
		if c := monitor.Credits(); c != nil {
			h["upstream_credits"] = c
		}
		return h
	}
	handler := httpapi.NewServer(httpapi.Config{
		Keys:               keys,
		PrincipalKey:       cfg.principalKey,
		Models:             cfg.request.models,
		Strategy:           string(cfg.upstream.Strategy),
		MaxBodyBytes:       int64(cfg.request.limits.MaxBodyBytes),
		MaxTools:           cfg.request.limits.MaxTools,
		MaxToolResultBytes: cfg.request.limits.MaxToolResultBytes,
		MaxConcurrent:      cfg.maxConcurrent,
		RequestTimeout:     cfg.request.limits.RequestTimeout,
		BodyReadTimeout:    cfg.bodyTimeout,
		AllowedHosts:       cfg.allowedHosts,
		ToolSchemaPolicy:   cfg.request.toolSchemaPolicy,
		WidenCombinators:   cfg.request.widenCombinators,
		UsageEstimatesOff:  !cfg.usageEstimates,
		Health:             health,
		Monitor:            monitor,
		Metrics:            monitor.Handler(),
		MetricsOpen:        cfg.metricsOpen,
		Usage:              budget,
		Admin:              controlPage(cfg, checker, monitor, health, verification),
		Verification:       verification,
		Readiness:          readiness(cfg, store, keys, &live.draining, live.verified),
		Tracer:             tracer,
	}, svc, log)
	tcp, err := listen(net.JoinHostPort(cfg.host, strconv.Itoa(cfg.port)),
		"set PROVIDER_PORT to a free port, or to 0 to pick one (demo: --port 0)")
	if err != nil {
		store.Close()
		return nil, err
	}
	ln := httpapi.NewListener(tcp, cfg.maxConnections, log)
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	gw := &gateway{cfg: cfg, log: log, ln: ln, store: store, svc: svc, stop: stop, served: make(chan error, 1),
		srv: httpapi.NewHTTPServer(handler, ln, log), runCtx: runCtx, live: live, events: events}
	started = true
	gw.wg.Add(1)
	go func() {
		defer gw.wg.Done()
		svc.RunSweeps(runCtx, time.Second)
	}()
	gw.wg.Add(1)
	go func() {
		defer gw.wg.Done()
		budget.Run(runCtx, usageFlushInterval)
	}()
	if checker != nil {
		gw.wg.Add(1)
		go func() {
			defer gw.wg.Done()
			checker.Run(runCtx, update.Interval)
		}()
	}
	if keyWatch != nil {
		// Registered before "listening": a SIGHUP sent as soon as the
		// gateway says it listens re-reads the key file (registered in the
		// goroutine, it could come before the registration and be lost).
		hup := notifyHUP()
		gw.wg.Add(1)
		go func() {
			defer gw.wg.Done()
			watchKeys(runCtx, keyWatch, hup)
		}()
	}
	go func() { gw.served <- gw.srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "strategy", string(cfg.upstream.Strategy),
		"correlation_store", cfg.store, "principal_key_random", cfg.principalRandom, "conversation_continuity", cfg.continuity)
	return gw, nil
}

// addr is the chosen listen address.
func (g *gateway) addr() string { return g.ln.Addr().String() }

// wait serves until ctx ends, then shuts down gracefully: stop accepting, let
// in-flight requests finish up to shutdownGrace, cancel pending tool-call
// groups and log the counts. A clean shutdown returns nil (exit 0).
func (g *gateway) wait(ctx context.Context) error {
	select {
	case err := <-g.served:
		g.stop()
		g.wg.Wait()
		g.events.Close()
		return err
	case <-ctx.Done():
	}
	g.live.draining.Store(true)
	if d := g.cfg.drainDelay; d > 0 {
		// Still serving: /readyz answers 503 draining, so a load balancer
		// takes the gateway out before it stops accepting.
		g.log.Info("draining: /readyz answers 503 until the shutdown starts", "delay", d.String())
		select {
		case <-time.After(d):
		case err := <-g.served:
			g.log.Warn("the listener ended while draining", "error", err)
		}
	}
	g.log.Info("shutting down", "grace", shutdownGrace.String())
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := g.srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		g.log.Warn("in-flight requests cut at the shutdown bound")
		_ = g.srv.Close()
		err = nil
	}
	// A response's access line is written after it went out: let the last
	// ones be written before the shutdown's own lines (bounded).
	if l, ok := g.ln.(*httpapi.Listener); ok {
		lctx, lcancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = l.Settled(lctx)
		lcancel()
	}
	g.stop()
	g.wg.Wait()
	g.events.Close() // after the last request and sweep: what they observed is delivered (and logged) now
	if g.live.tracer != nil {
		tctx, tcancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := g.live.tracer.Shutdown(tctx); err != nil {
			g.log.Warn("traces not flushed at shutdown", "error", err)
		}
		tcancel()
	}
	n, c := g.svc.Shutdown(context.Background())
	states := map[string]int{}
	for s, k := range c.ByState {
		states[string(s)] = k
	}
	g.log.Info("correlation store closed", "store", g.cfg.store, "pending_cancelled", n, "groups_by_state", states)
	g.store.Close()
	if err := <-g.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return err
}

// controlPage is the control page (nil when ADMIN_ENABLED is false): what it
// shows of the configuration is check-config's redacted summary, never a
// secret; its live data come from the monitor and the same health and
// verification functions as /health's.
func controlPage(cfg config, checker *update.Checker, monitor *ops.Monitor, health func(context.Context) map[string]any,
	verification func() (bool, map[string]any)) httpapi.ControlPage {
	if !cfg.adminEnabled {
		return nil
	}
	a := ops.AdminInfo{Version: version, Strategy: string(cfg.upstream.Strategy), UpstreamHost: cfg.upstream.Summary()["host"],
		Summary: cfg.summary(), Health: health, Verification: verification}
	if checker != nil {
		a.Update = func() any { return checker.Status() }
	}
	for _, m := range cfg.upstream.Models {
		a.Models = append(a.Models, ops.AdminModel{Public: m.Public, Upstream: m.Upstream, Observed: m.Observed})
	}
	return ops.NewPage(a, monitor)
}
