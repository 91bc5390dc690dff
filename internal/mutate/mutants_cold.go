package main

// The inline observers and the log's filter (issue 39 item 4), each caught by
// the test its -run names.
func init() {
	mutants = append(mutants,
		mutant{"observers: an inline subscriber is queued like the others", "app/observe.go",
			"\t\tif s.inline {\n\t\t\to.deliver(s, queued{ctx: ctx, ev: e})\n\t\t\tcontinue\n\t\t}",
			"\t\tif s.inline {\n\t\t\tgo o.deliver(s, queued{ctx: ctx, ev: e})\n\t\t\tcontinue\n\t\t}", "./app/", "InlineSubscriber"},
		mutant{"observers: an event a queued subscriber does not want is queued anyway", "app/observe.go",
			"if s.filter != nil && !s.filter.Wants(ctx, e) {", "if false && s.filter != nil && !s.filter.Wants(ctx, e) {", "./app/", "QueuedFilter"},
		mutant{"observers: events observed after Close reach an inline subscriber", "app/observe.go",
			"\tif o.closed.Load() {\n\t\treturn\n\t}\n\tfor _, s := range *o.subs.Load() {", "\tfor _, s := range *o.subs.Load() {", "./app/", "AfterCloseAnInlineSubscriber"},
		mutant{"log observer: wants the anchor lookups whatever its level", "app/observe.go",
			"\t\treturn l.Log.Enabled(ctx, anchorLevel(e))", "\t\treturn true", "./app/", "LogObserverWants"},
		mutant{"monitor: subscribed queued, so a request's rows are counted after its answer", "adapters/ops/monitor.go",
			"cfg.Events.SubscribeInline(\"metrics\", m)", "cfg.Events.Subscribe(\"metrics\", m)", "./adapters/ops/", "TheMonitorCountsInsideObserve"},
	)
}
