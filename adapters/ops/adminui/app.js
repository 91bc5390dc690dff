// pmgate control page. The page carries no data: everything comes from
// /admin/api/* with the API key the user typed, kept in sessionStorage. Every
// value is written with textContent or SVG attributes, never as HTML.
"use strict";

(function () {
  const KEY = "pmgate.apiKey";
  const POLL_MS = 1000;
  const SVGNS = "http://www.w3.org/2000/svg";
  const NODE_W = 140, NODE_H = 44;

  const $ = (id) => document.getElementById(id);
  let overview = null;
  let timer = null;
  let revealed = false;

  function key() { return sessionStorage.getItem(KEY) || ""; }

  async function api(path) {
    const res = await fetch(path, {
      headers: { "Authorization": "Bearer " + key() },
      cache: "no-store",
      credentials: "omit",
      referrerPolicy: "no-referrer",
    });
    let body = null;
    try { body = await res.json(); } catch (e) { body = null; }
    if (!res.ok) {
      const err = new Error((body && body.error && body.error.message) || ("HTTP " + res.status));
      err.status = res.status;
      err.code = body && body.error && body.error.code;
      throw err;
    }
    return body;
  }

  function setConn(state, text) {
    const el = $("conn");
    el.className = "badge " + state;
    el.textContent = text;
    document.body.dataset.conn = state;
  }

  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); }

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function fillRows(tbody, rows, render) {
    clear(tbody);
    for (const r of rows) {
      const tr = document.createElement("tr");
      render(tr, r);
      tbody.appendChild(tr);
    }
  }

  function clock(iso) {
    const d = new Date(iso);
    return isNaN(d) ? "" : d.toLocaleTimeString([], { hour12: false });
  }

  function ms(v) { return v === null || v === undefined ? "–" : (v < 10 ? v.toFixed(2) : Math.round(v)) + " ms"; }

  // ---- sign in / out

  function showLogin(message) {
    stop();
    $("data").hidden = true;
    $("signout").hidden = true;
    $("login").hidden = false;
    const err = $("login-error");
    err.hidden = !message;
    err.textContent = message || "";
    setConn("off", "not signed in");
    $("key").focus();
  }

  async function open() {
    setConn("wait", "connecting…");
    try {
      overview = await api("/admin/api/overview");
    } catch (e) {
      if (e.status === 401) {
        sessionStorage.removeItem(KEY);
        showLogin("The key was refused (" + (e.code || "invalid_api_key") + "). No data is shown without the gateway's API key.");
      } else if (e.status === 403) {
        sessionStorage.removeItem(KEY);
        showLogin("This is an inference key (" + (e.code || "insufficient_scope") + "): it may use the API but not read this page. Sign in with an admin key.");
      } else {
        showLogin("The gateway did not answer: " + e.message);
      }
      return;
    }
    $("login").hidden = true;
    $("login-error").hidden = true;
    $("data").hidden = false;
    $("signout").hidden = false;
    renderOverview(overview);
    await poll();
    timer = setInterval(poll, POLL_MS);
  }

  function stop() { if (timer) { clearInterval(timer); timer = null; } }

  // ---- static part

  function renderOverview(o) {
    $("version").textContent = "version " + o.version;
    $("strategy").textContent = o.strategy;
    $("upstream-host").textContent = o.upstream_host || "–";
    fillRows($("models").tBodies[0], o.models, (tr, m) => {
      cell(tr, m.public); cell(tr, m.upstream); cell(tr, (m.observed || []).join(", ") || "–");
    });
    const cfg = Object.keys(o.config || {}).sort().map((k) => [k, o.config[k]]);
    fillRows($("config").tBodies[0], cfg, (tr, kv) => { cell(tr, kv[0]); cell(tr, kv[1]); });
    drawMachine(o.machine, "machine", "machine-title");
    if (o.conversation_machine) drawMachine(o.conversation_machine, "conv-machine", "conv-machine-title");
    renderKey();
    renderSnippets();
  }

  // ---- the correlation machine, drawn from the declared table

  function svg(name, attrs, parent) {
    const el = document.createElementNS(SVGNS, name);
    for (const k in attrs) el.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(el);
    return el;
  }

  function drawMachine(m, rootId, titleId) {
    const root = $(rootId);
    const title = $(titleId);
    const arrow = rootId + "-arrow";
    clear(root);
    root.appendChild(title);
    root.setAttribute("viewBox", "0 -24 " + m.width + " " + (m.height + 44));
    // Drawn at its own size at most (CSSOM, which the policy allows; never a style attribute).
    root.style.maxWidth = Math.max(m.width, 720) + "px";
    root.style.minWidth = Math.min(m.width, 720) + "px";
    const defs = svg("defs", {}, root);
    for (const [id, cls] of [[arrow, "arrow"], [arrow + "-hot", "arrow-hot"]]) {
      const mk = svg("marker", { id: id, viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "10", markerHeight: "10", markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" }, defs);
      svg("path", { d: "M0,0 L10,5 L0,10 z", class: cls }, mk);
    }
    const pos = {};
    for (const s of m.states) pos[s.name] = s;
    const edges = svg("g", { class: "edges" }, root);
    for (const e of m.edges) {
      const a = pos[e.from], b = pos[e.to];
      let d, lx, ly;
      if (b.x > a.x) {
        const x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = b.x, y2 = b.y + NODE_H / 2;
        const mx = (x1 + x2) / 2;
        d = `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`;
        lx = mx; ly = (y1 + y2) / 2 - 4;
      } else {
        const x1 = a.x + NODE_W / 2, y1 = a.y, x2 = b.x + NODE_W / 2, y2 = b.y;
        const top = Math.min(y1, y2) - 18;
        d = `M${x1},${y1} C${x1},${top} ${x2},${top} ${x2},${y2}`;
        lx = (x1 + x2) / 2; ly = top + 4;
      }
      const g = svg("g", { class: "edge", "data-from": e.from, "data-to": e.to, "data-rows": e.rows.join(" ") }, edges);
      svg("path", { d: d, "marker-end": "url(#" + arrow + ")" }, g);
      const t = svg("text", { x: lx, y: ly, "text-anchor": "middle", class: "edge-label" }, g);
      t.textContent = e.rows.join(",");
      const hits = svg("text", { x: lx, y: ly + 14, "text-anchor": "middle", class: "edge-hits" }, g);
      hits.textContent = "";
    }
    const nodes = svg("g", { class: "nodes" }, root);
    for (const s of m.states) {
      const g = svg("g", { class: "state" + (s.terminal ? " terminal" : "") + (s.initial ? " initial" : ""), "data-state": s.name, "data-count": "0" }, nodes);
      const tip = svg("title", {}, g);
      tip.textContent = s.name + (s.loops.length ? " — rows that keep the state: " + s.loops.join(", ") : "");
      svg("rect", { x: s.x, y: s.y, width: NODE_W, height: NODE_H, rx: 8 }, g);
      const name = svg("text", { x: s.x + 10, y: s.y + 18, class: "state-name" }, g);
      name.textContent = s.name;
      const count = svg("text", { x: s.x + NODE_W - 10, y: s.y + 18, "text-anchor": "end", class: "state-count" }, g);
      count.textContent = "0";
      const loops = svg("text", { x: s.x + 10, y: s.y + 35, class: "state-loops" }, g);
      loops.textContent = s.loops.length ? "↻ " + s.loops.length + (s.loops.length === 1 ? " row keeps it" : " rows keep it") : "";
    }
  }

  function updateMachine(corr, transitions) {
    const byState = (corr && corr.groups_by_state) || {};
    for (const g of document.querySelectorAll("#machine .state")) {
      const n = byState[g.dataset.state] || 0;
      g.dataset.count = String(n);
      g.classList.toggle("occupied", n > 0);
      g.querySelector(".state-count").textContent = String(n);
    }
    const hits = {};
    const now = Date.now();
    const hot = {};
    for (const t of transitions) {
      hits[t.row] = (hits[t.row] || 0) + (t.count || 1);
      if (now - new Date(t.time).getTime() < 10000) hot[t.row] = true;
    }
    for (const g of document.querySelectorAll("#machine .edge")) {
      const rows = g.dataset.rows.split(" ");
      let n = 0, isHot = false;
      for (const r of rows) { n += hits[r] || 0; isHot = isHot || !!hot[r]; }
      g.classList.toggle("recent", n > 0);
      g.classList.toggle("hot", isHot);
      g.dataset.hits = String(n);
      g.querySelector("path").setAttribute("marker-end", isHot ? "url(#machine-arrow-hot)" : "url(#machine-arrow)");
      g.querySelector(".edge-hits").textContent = n > 0 ? "×" + n : "";
    }
  }

  // ---- live part

  async function poll() {
    let live;
    try {
      live = await api("/admin/api/live");
    } catch (e) {
      if (e.status === 401 || e.status === 403) {
        sessionStorage.removeItem(KEY);
        showLogin("The key is no longer accepted (" + (e.code || "HTTP " + e.status) + ").");
        return;
      }
      setConn("off", "disconnected — retrying");
      return;
    }
    setConn("on", "live");
    renderLive(live);
  }

  // renderUpdate shows the release check (only when the owner set
  // UPDATE_MANIFEST_URL): a newer release with its link, up to date, or why
  // it could not check. Nothing is ever downloaded.
  function renderUpdate(u) {
    const el = $("update");
    el.textContent = "";
    if (!u) return;
    if (u.state === "newer") {
      el.append("· release " + u.latest + " is available: ");
      const a = document.createElement("a");
      a.href = u.url; a.textContent = u.url; a.rel = "noopener noreferrer"; a.target = "_blank";
      el.append(a);
    } else if (u.state === "current") {
      el.textContent = "· up to date (latest release " + u.latest + ")";
    } else if (u.state === "could_not_check") {
      el.textContent = "· could not check for a newer release: " + u.reason;
    } else {
      el.textContent = "· checking for a newer release…";
    }
  }

  function renderLive(l) {
    renderUpdate(l.update);
    const verdict = $("health");
    if (l.upstream_verified) {
      verdict.textContent = "upstream verified";
      verdict.className = "verdict good";
    } else {
      verdict.textContent = "facade healthy · upstream not verified by /health";
      verdict.className = "verdict warn";
    }
    $("probe").textContent = l.probe ? ((l.probe.passed ? "passed" : "failed") + " at " + l.probe.time + (l.probe.detail ? " — " + l.probe.detail : "")) : "none" + (l.upstream_verified_reason ? " — " + l.upstream_verified_reason : "");
    $("updated").textContent = clock(l.time);
    const c = l.correlation || {};
    const parts = [];
    if (c.store) parts.push("store " + c.store + (c.state ? " (" + c.state + ")" : ""));
    if (c.enabled === false) parts.push("correlation disabled");
    if (c.live_groups !== undefined) parts.push("live groups " + c.live_groups + " / " + c.max_groups);
    if (c.live_calls !== undefined) parts.push("live calls " + c.live_calls + " / " + c.max_calls);
    $("corr-summary").textContent = parts.join(" · ");
    updateMachine(c, l.transitions);
    const conv = l.conversation || {};
    const byState = conv.anchors_by_state || {};
    for (const g of document.querySelectorAll("#conv-machine .state")) {
      const n = byState[g.dataset.state] || 0;
      g.dataset.count = String(n);
      g.classList.toggle("occupied", n > 0);
      g.querySelector(".state-count").textContent = String(n);
    }
    $("conv-summary").textContent = conv.continuity === false ? "conversation continuity is off" :
      (conv.anchors !== undefined ? "anchors " + conv.anchors + " / " + conv.max_anchors + " · " + conv.bytes + " bytes" : "");
    fillRows($("transitions").tBodies[0], l.transitions.slice(0, 20), (tr, t) => {
      cell(tr, clock(t.time)); cell(tr, t.row + (t.count > 1 ? " ×" + t.count : ""), "mono"); cell(tr, t.from); cell(tr, t.to);
      cell(tr, t.source === "sweep" ? "sweep" + (t.code ? " · " + t.code : "") : (t.code || "–"));
    });
    lastLive = l;
    renderOwner(l);
  }

  // ---- the owner's first screen

  const REFUSALS = ["key_rate_limited", "key_quota_exhausted", "concurrency_limit_exceeded", "upstream_rate_limited", "upstream_quota_exhausted"];
  let lastLive = null;

  function when(iso) {
    const d = new Date(iso);
    return isNaN(d) ? "" : d.toLocaleString([], { hour12: false });
  }

  // The plan as the service last reported it: labelled as reported and when,
  // never turned into "credits left now".
  function renderCredits(c) {
    const used = $("credits-used");
    used.textContent = "";
    $("credits-warning").hidden = true;
    $("credits-label").className = "verdict";
    if (!c || !c.known) {
      $("credits-label").textContent = c ? c.label : "no report";
      for (const id of ["credits-state", "credits-cycle", "credits-plan"]) $(id).textContent = "–";
      used.textContent = "–";
      $("credits-not").textContent = c ? c.not : "";
      return;
    }
    $("credits-label").textContent = c.label + " (" + c.strategy + ")";
    $("credits-label").classList.toggle("exhausted", c.usage_state !== "AVAILABLE");
    $("credits-state").textContent = c.usage_state || "not reported";
    if (c.used_ratio !== null && c.used_ratio !== undefined) {
      const m = document.createElement("meter");
      m.min = 0; m.max = 1; m.value = Math.min(c.used_ratio, 1); m.low = 0.5; m.high = 0.9; m.optimum = 0;
      m.setAttribute("aria-label", "used of the plan's limit, as reported");
      used.appendChild(m);
      used.appendChild(document.createTextNode(" " + (c.used_ratio * 100).toFixed(1) + " % (usage " + c.usage + " of limit " + c.limit + ", in the service's unit)"));
    } else {
      used.textContent = "not reported";
    }
    $("credits-cycle").textContent = c.cycle_end ? c.cycle_end.replace("T", " ").replace(/:\d\dZ$/, " UTC") : "not reported";
    const plan = [c.user_type, c.team_pooled ? "pooled by the team" : "", c.allow_overage === true ? "overage allowed" : (c.allow_overage === false ? "no overage" : "")];
    $("credits-plan").textContent = plan.filter((x) => x).join(" · ") || "–";
    const crossed = c.thresholds_crossed || [];
    if (crossed.length > 0) {
      $("credits-warning").textContent = "warning threshold" + (crossed.length > 1 ? "s " : " ") + crossed.map((t) => t.value + " %").join(", ") + " of the plan's limit crossed, as reported";
      $("credits-warning").hidden = false;
    }
    $("credits-not").textContent = c.not;
  }

  function renderOwner(l) {
    $("verified-until").textContent = l.upstream_verified && l.upstream_verified_until ? "verified until " + when(l.upstream_verified_until) + " (the probe report's age limit)" : "";
    const hour = Object.keys(l.last_hour || {}).map((k) => [k, l.last_hour[k]]).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    fillRows($("last-hour").tBodies[0], hour, (tr, kv) => {
      tr.className = REFUSALS.includes(kv[0]) ? "refusal" : "failed";
      tr.dataset.cause = kv[0];
      cell(tr, kv[0], "mono"); cell(tr, String(kv[1]), "num");
    });
    $("last-hour").hidden = hour.length === 0;
    $("last-hour-none").hidden = hour.length !== 0;
    const q = l.upstream_quota || { count: 0 };
    $("upstream-quota").textContent = q.count > 0 ? "upstream quota exhausted " + q.count + "× since start, last at " + when(q.last) : "the upstream has not reported an exhausted quota since start";
    const w = l.upstream_rate_limit;
    $("upstream-rate-limit").textContent = !w || !w.known ? "the upstream has not announced a rate-limit window yet"
      : "upstream rate-limit window: " + w.remaining + (w.limit > 0 ? " of " + w.limit : "") + " requests remain" +
        (w.reset ? ", resets at " + when(w.reset) : "") +
        (w.held_for_s > 0 ? "; new fresh turns are refused for " + Math.ceil(w.held_for_s) + " s (tool results are still sent)" : "");
    renderCredits(l.upstream_credits);
    fillRows($("budgets").tBodies[0], l.keys || [], (tr, k) => {
      tr.dataset.slot = k.slot;
      const limit = k.dispatches_per_day;
      tr.className = limit > 0 && k.dispatches_today >= limit ? "over" : "";
      cell(tr, k.slot, "mono"); cell(tr, k.scope);
      cell(tr, String(k.dispatches_today) + (limit > 0 ? " / " + limit : ""), "num today");
      const td = document.createElement("td");
      if (limit > 0) {
        const m = document.createElement("meter");
        m.min = 0; m.max = limit; m.value = Math.min(k.dispatches_today, limit); m.low = limit * 0.7; m.high = limit * 0.9; m.optimum = 0;
        m.setAttribute("aria-label", k.slot + ": " + k.dispatches_today + " of " + limit + " dispatches today");
        td.appendChild(m);
      } else {
        td.textContent = "no daily limit";
        td.className = "muted";
      }
      tr.appendChild(td);
      cell(tr, String(k.dispatches_month) + (k.dispatches_per_month > 0 ? " / " + k.dispatches_per_month : ""), "num");
      cell(tr, k.requests_per_minute > 0 ? String(k.requests_per_minute) : "–", "num");
    });
    const sel = $("filter-slot");
    const slots = new Set((l.keys || []).map((k) => k.slot));
    for (const r of l.requests) if (r.slot) slots.add(r.slot);
    const have = new Set([...sel.options].map((o) => o.value));
    for (const sl of [...slots].sort()) {
      if (!have.has(sl)) { const o = document.createElement("option"); o.value = sl; o.textContent = sl; sel.appendChild(o); }
    }
    renderRequests();
  }

  function outcomeOf(r) {
    if (r.status < 400 && !r.code) return "ok";
    return REFUSALS.includes(r.code) ? "refused" : "failed";
  }

  function renderRequests() {
    if (!lastLive) return;
    const slot = $("filter-slot").value, outcome = $("filter-outcome").value;
    const rows = lastLive.requests.filter((r) => (!slot || r.slot === slot) && (!outcome || outcomeOf(r) === outcome));
    $("filter-count").textContent = rows.length + " of " + lastLive.requests.length + " shown";
    fillRows($("requests").tBodies[0], rows, (tr, r) => {
      tr.dataset.outcome = outcomeOf(r);
      tr.className = { ok: "", failed: "failed", refused: "refusal" }[tr.dataset.outcome];
      const c = [cell(tr, clock(r.time)), cell(tr, r.slot || "–", "mono"), cell(tr, r.route, "mono"), cell(tr, r.model || "–"),
        cell(tr, String(r.status)), cell(tr, r.code || "–", "mono"), cell(tr, String(r.tool_calls), "num"),
        cell(tr, ms(r.duration_ms), "num"), cell(tr, ms(r.ttft_ms), "num"), cell(tr, r.request_id, "mono")];
      for (const td of c) td.title = td.textContent;
    });
  }

  function showView(name) {
    for (const v of ["owner", "internals"]) {
      $(v).hidden = v !== name;
      $("view-" + v).setAttribute("aria-pressed", String(v === name));
    }
  }

  // ---- key and snippets

  function masked() { return revealed ? key() : "$PMGATE_KEY"; }

  function renderKey() {
    const el = $("key-value");
    el.textContent = revealed ? key() : "•".repeat(12) + " (hidden)";
    el.classList.toggle("revealed", revealed);
    $("key-reveal").textContent = revealed ? "Hide key" : "Reveal key";
    $("key-reveal").setAttribute("aria-pressed", String(revealed));
  }

  function snippets(k) {
    const base = location.origin + "/v1";
    const model = (overview.models[0] && overview.models[0].public) || "MODEL";
    const router = "http://127.0.0.1:20128";
    return [
      ["curl", `curl -s ${base}/chat/completions \\
  -H "Authorization: Bearer ${k}" -H "Content-Type: application/json" \\
  -d '{"model":"${model}","messages":[{"role":"user","content":"Hello!"}]}'`],
      ["openai (npm)", `import OpenAI from "openai";
const client = new OpenAI({ baseURL: "${base}", apiKey: "${k}" });
const c = await client.chat.completions.create({ model: "${model}", messages: [{ role: "user", content: "Hello!" }] });
console.log(c.choices[0].message.content);`],
      ["openai-go", `client := openai.NewClient(option.WithBaseURL("${base}"), option.WithAPIKey("${k}"))
c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "${model}",
	Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello!")}})`],
      ["Claude Code", `# the recipe that fits the service's default budget: docs/CLIENTS.md#direct-v1messages
# write its prompt file first: gateway recipe claude-code --dir ~/pmgate-claude-code
# --allowedTools Bash: -p cannot ask, so Bash is refused without it (the agent then runs commands unasked)
ANTHROPIC_BASE_URL=${location.origin} ANTHROPIC_API_KEY="${k}" \\
ANTHROPIC_MODEL=${model} ANTHROPIC_SMALL_FAST_MODEL=${model} ANTHROPIC_DEFAULT_HAIKU_MODEL=${model} \\
ANTHROPIC_DEFAULT_SONNET_MODEL=${model} ANTHROPIC_DEFAULT_OPUS_MODEL=${model} CLAUDE_CODE_SUBAGENT_MODEL=${model} \\
DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \\
claude -p "…" --system-prompt-file ~/pmgate-claude-code/system-prompt.md \\
  --tools Bash,Read,Edit,Write,Glob,Grep,TodoWrite --allowedTools Bash`],
      ["9router", `# add pmgate as an OpenAI-compatible provider node of 9router (its control API)
curl -s ${router}/api/provider-nodes -H "Content-Type: application/json" \\
  -d '{"type":"openai-compatible","apiType":"chat","name":"pmgate","prefix":"pmgate","baseUrl":"${base}"}'
curl -s ${router}/api/providers -H "Content-Type: application/json" \\
  -d '{"provider":"<node id from the answer above>","name":"pmgate","apiKey":"${k}"}'
# clients then use ${router}/v1, a 9router key and the model pmgate/${model}`],
      ["Claude Code via 9router", `# the recipe that fits the service's default budget: docs/CLIENTS.md#claude-code
ANTHROPIC_BASE_URL=${router} ANTHROPIC_AUTH_TOKEN="$NINEROUTER_KEY" \\
ANTHROPIC_MODEL=pmgate/${model} ANTHROPIC_SMALL_FAST_MODEL=pmgate/${model} \\
DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \\
claude -p "…" --system-prompt-file ~/pmgate-claude-code/system-prompt.md \\
  --tools Bash,Read,Edit,Write,Glob,Grep,TodoWrite --allowedTools Bash`],
      ["opencode", `// ~/.config/opencode/opencode.json, then: opencode run --model pmgate/${model} "…"
// the "agent" block is the recipe that fits the default budget: docs/CLIENTS.md#opencode
// gateway recipe opencode --dir ~/pmgate-opencode writes the prompt file (and a config using it)
{"provider":{"pmgate":{"npm":"@ai-sdk/openai-compatible",
  "options":{"baseURL":"${base}","apiKey":"${k}"},
  "models":{"${model}":{}}}},
 "agent":{"build":{"prompt":"{file:/home/you/pmgate-opencode/build-prompt.md}"}}}`],
      ["Codex CLI", `# $CODEX_HOME/config.toml: examples/codex/config.toml, the recipe that fits the
# default budget (docs/CLIENTS.md#codex-cli); gateway recipe codex --dir ~/pmgate-codex writes it and
# its instructions file; then PMGATE_API_KEY="${k}" codex exec --skip-git-repo-check "…"
# (--skip-git-repo-check: codex exec refuses to run outside a git repository without it)
model = "${model}"
model_provider = "pmgate"
model_instructions_file = "/home/you/pmgate-codex/instructions.md"
include_permissions_instructions = false
include_apps_instructions = false
web_search = "disabled"
[agents]
enabled = false
[features]
apps = false
plugins = false
[model_providers.pmgate]
name = "pmgate"
base_url = "${base}"
env_key = "PMGATE_API_KEY"
wire_api = "responses"`],
    ];
  }

  function renderSnippets() {
    const root = $("snippets");
    clear(root);
    const shown = snippets(masked());
    const real = snippets(key());
    shown.forEach((s, i) => {
      const box = document.createElement("div");
      box.className = "snippet";
      const head = document.createElement("div");
      head.className = "snippet-head";
      const h = document.createElement("h3");
      h.textContent = s[0];
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = "Copy";
      b.setAttribute("aria-label", "Copy the " + s[0] + " snippet");
      b.addEventListener("click", () => copy(real[i][1], s[0] + " snippet"));
      head.appendChild(h); head.appendChild(b);
      const pre = document.createElement("pre");
      pre.tabIndex = 0;
      pre.dataset.snippet = s[0];
      pre.textContent = s[1];
      box.appendChild(head); box.appendChild(pre);
      root.appendChild(box);
    });
  }

  async function copy(text, what) {
    const status = $("copy-status");
    try {
      await navigator.clipboard.writeText(text);
      status.textContent = "copied the " + what;
    } catch (e) {
      status.textContent = "copying is not allowed here; select the text instead";
    }
  }

  // ---- wiring

  document.addEventListener("DOMContentLoaded", () => {
    $("login-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const v = $("key").value.trim();
      if (!v) return;
      sessionStorage.setItem(KEY, v);
      $("key").value = "";
      open();
    });
    $("signout").addEventListener("click", () => {
      sessionStorage.removeItem(KEY);
      revealed = false;
      overview = null;
      showLogin("");
    });
    $("key-reveal").addEventListener("click", () => {
      revealed = !revealed;
      renderKey();
      renderSnippets();
    });
    $("key-copy").addEventListener("click", () => copy(key(), "API key"));
    $("view-owner").addEventListener("click", () => showView("owner"));
    $("view-internals").addEventListener("click", () => showView("internals"));
    $("filter-slot").addEventListener("change", renderRequests);
    $("filter-outcome").addEventListener("change", renderRequests);
    $("filters").addEventListener("submit", (ev) => ev.preventDefault());
    if (key()) open(); else showLogin("");
  });
})();
