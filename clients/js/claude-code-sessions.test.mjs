// Claude Code (the pinned native binary) in LONG headless sessions straight at
// the gateway's /v1/messages under the default limits, following the recipe
// of docs/CLIENTS.md: one session of many user turns (claude -p, then
// claude -p --continue in the same home), many tool rounds with tool outputs
// of about 1.5 KB and 25 KB, and every kind of failure once in the middle of
// it. After each failure the user's next turn must succeed, and the session
// must finish. What reached the upstream is counted at the emulator; every
// request Claude Code sent and every answer it got is recorded by a small
// proxy in front of the observer (the bodies, to judge Claude Code's own
// compaction and its retries).
import { test as nodeTest } from "node:test";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { env, marker, note, Observer } from "./lib/harness.mjs";
import { describeConversations, jsonLines, nativeBinary, runAgent, tempHome, Window } from "./lib/agents.mjs";

const e = env();
// PMGATE_CLIENTS_ONLY=<substring> runs only the matching scenarios (while working on one).
const test = (name, opts, fn) => (!process.env.PMGATE_CLIENTS_ONLY || name.includes(process.env.PMGATE_CLIENTS_ONLY) ? nodeTest(name, opts, fn) : nodeTest.skip(name));
const claude = nativeBinary("@anthropic-ai", "claude-code-linux-x64", "claude");
const recipeArgs = ["--system-prompt-file", fileURLToPath(new URL("../../examples/claude-code/system-prompt.md", import.meta.url))];
const recipeTools = "Bash,Read,Edit,Write,Glob,Grep,TodoWrite";
const observer = new Observer(e.observerURL); // the default gateway: query limit 10,000
const queryLimit = 10_000;

/** modelEnv pins every model setting Claude Code 2.1.332 reads to one model. */
function modelEnv(model) {
  const names = ["ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_FABLE_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"];
  return Object.fromEntries(names.map((n) => [n, model]));
}

/**
 * Recorder is a loopback proxy in front of the observer that keeps every
 * request Claude Code sends (its parsed body) with the status, the gateway's
 * error code and its x-pmgate-conversation header.
 */
class Recorder {
  static async start(target) {
    const r = new Recorder();
    r.target = new URL(target);
    r.log = [];
    r.server = createServer((req, res) => r.#forward(req, res));
    await new Promise((ok) => r.server.listen(0, "127.0.0.1", ok));
    r.origin = `http://127.0.0.1:${r.server.address().port}`;
    return r;
  }

  #forward(req, res) {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      let body = null;
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch {
        /* not JSON */
      }
      const rec = { seq: this.log.length, method: req.method, path: req.url, body, bytes: raw.length, status: 0, code: "", conversation: "", answer: "" };
      this.log.push(rec);
      const headers = { ...req.headers, host: this.target.host };
      delete headers["content-length"];
      const up = httpRequest({ host: this.target.hostname, port: this.target.port, method: req.method, path: req.url, headers: { ...headers, "content-length": raw.length } }, (ur) => {
        rec.status = ur.statusCode;
        rec.conversation = ur.headers["x-pmgate-conversation"] ?? "";
        res.writeHead(ur.statusCode, ur.headers);
        ur.on("data", (c) => {
          if (rec.answer.length < 1 << 20) rec.answer += c.toString("utf8");
          res.write(c);
        });
        ur.on("end", () => {
          const m = rec.answer.match(/"code"\s*:\s*"([a-z_]+)"/);
          rec.code = m ? m[1] : "";
          res.end();
        });
        ur.on("error", () => res.destroy());
      });
      up.on("error", () => res.destroy());
      req.on("aborted", () => up.destroy());
      up.end(raw);
    });
  }

  /** messages is the recorded POST /v1/messages requests (not count_tokens) from seq on. */
  messages(since = 0) {
    return this.log.filter((r) => r.seq >= since && r.method === "POST" && /^\/v1\/messages(\?|$)/.test(r.path));
  }

  close() {
    return new Promise((ok) => this.server.close(ok));
  }
}

/**
 * Session is one Claude Code session in a private home: a work directory,
 * and a bin directory first on PATH with the executable "value-command" the
 * emulator's Bash calls run. It prints the session marker, a call counter,
 * a one-shot line (a "#scenario=" directive for the emulator: the file
 * "once", printed by the call numbered in "once_at"), then filler up to the
 * size in the file "size".
 */
class Session {
  constructor(m) {
    this.home = tempHome("claude-sessions");
    this.bin = join(this.home.dir, "bin");
    mkdirSync(this.bin);
    this.marker = m;
    this.turns = [];
    const script = `#!/bin/sh
d="${this.bin}"
n=$(cat "$d/size")
c=$(( $(cat "$d/count" 2>/dev/null || echo 0) + 1 ))
echo "$c" > "$d/count"
once=""
if [ -f "$d/once_at" ] && [ "$(cat "$d/once_at")" = "$c" ]; then once=$(cat "$d/once"); rm -f "$d/once_at" "$d/once"; fi
printf 'value-command output %s call %s %s\\n' "${m}" "$c" "$once"
yes 'lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod' | head -c "$n"
echo
`;
    writeFileSync(join(this.bin, "value-command"), script);
    chmodSync(join(this.bin, "value-command"), 0o755);
    this.size(1500);
  }

  size(n) {
    writeFileSync(join(this.bin, "size"), String(n));
  }

  /** onceAt makes the n-th call from now (1: the next) print line, once. */
  onceAt(n, line) {
    writeFileSync(join(this.bin, "once"), line);
    writeFileSync(join(this.bin, "once_at"), String(this.calls() + n));
  }

  calls() {
    try {
      return Number(readFileSync(join(this.bin, "count"), "utf8"));
    } catch {
      return 0;
    }
  }

  remove() {
    this.home.remove();
  }
}

/**
 * turn runs one user turn of the session (--continue after the first) and
 * returns the stream-json events, the last result event, the recorded
 * requests of the turn, and what the gateway and the emulator saw.
 */
async function turn(session, rec, { prompt, maxTurns = 8, extraEnv = {}, label }) {
  const first = session.turns.length === 0;
  const win = await Window.open(observer);
  const emuSince = (await upstream(-1)).emulator_seq;
  const since = rec.log.length;
  const args = ["-p", prompt, "--output-format", "stream-json", "--verbose", "--max-turns", String(maxTurns), "--model", e.model,
    "--tools", recipeTools, "--allowedTools", "Bash", ...recipeArgs, ...(first ? [] : ["--continue"])];
  const run = await runAgent({
    command: claude,
    args,
    cwd: session.home.work,
    timeoutMs: 120_000,
    env: {
      HOME: session.home.dir,
      // Git looks no higher than the session's home: a repository that
      // appears above it (in /tmp) would change Claude Code's environment.
      GIT_CEILING_DIRECTORIES: session.home.dir,
      PATH: `${session.bin}:${process.env.PATH}`,
      ANTHROPIC_BASE_URL: rec.origin,
      ANTHROPIC_API_KEY: e.apiKey,
      ...modelEnv(e.model),
      DISABLE_TELEMETRY: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_ERROR_REPORTING: "1",
      DISABLE_BUG_COMMAND: "1",
      // A failed stream is retried at most once: the session measures what
      // comes after a failure, not Claude Code's backoff.
      CLAUDE_CODE_MAX_RETRIES: "1",
      ...extraEnv,
    },
  });
  const events = jsonLines(run.stdout);
  const seen = await win.close(session.marker);
  seen.upstream = (await upstream(emuSince)).upstream;
  const result = events.filter((ev) => ev.type === "result").at(-1);
  const requests = rec.messages(since);
  const t = { label: label ?? prompt.slice(0, 40), prompt, run, events, seen, result, requests };
  t.diag = `turn ${session.turns.length + 1} (${t.label}): exit ${run.code}${run.signal ? ` (${run.signal})` : ""}${run.reason ? `, stopped: ${run.reason}` : ""}\n` +
    `requests: ${JSON.stringify(requests.map((r) => ({ status: r.status, code: r.code, conv: r.conversation, msgs: r.body?.messages?.length, bytes: r.bytes })))}\n` +
    `upstream: ${JSON.stringify(seen.upstream.slice(-12).map((q) => ({ t: q.chat_type, s: q.status, q: q.query_chars, turn: q.turn, ids: q.call_ids })))}\n` +
    `conversations: ${describeConversations(seen.conversations)}\n` +
    `system events: ${JSON.stringify(events.filter((ev) => ev.type === "system" && ev.subtype !== "init").map((ev) => ({ subtype: ev.subtype, attempt: ev.attempt, status: ev.error_status })))}\n` +
    `last result: ${JSON.stringify(result)?.slice(0, 600)}\nstderr: ${run.stderr.slice(-800)}`;
  session.turns.push(t);
  return t;
}

/** upstream asks the observer for every upstream request from the emulator's request number since on. */
async function upstream(since) {
  const r = await fetch(`${e.observerURL}/_observe?${new URLSearchParams({ emu_since: String(since), ex_since: "1000000000", conv_since: "1000000000" })}`);
  if (!r.ok) throw new Error(`observer: ${r.status}`);
  return r.json();
}

/** toolRounds counts the assistant messages of a turn that asked for tools. */
function toolRounds(events) {
  const ids = new Set();
  for (const ev of events) {
    if (ev.type === "assistant" && ev.message?.content?.some((c) => c.type === "tool_use")) ids.add(ev.message.id);
  }
  return ids.size;
}

const succeeded = (t) => t.result?.subtype === "success" && t.result?.is_error === false && t.run.code === 0;
const failedVisibly = (t) => t.run.code !== 0 || t.result?.is_error === true || (t.result && t.result.subtype !== "success");

/** roles compresses a Messages body's roles: "user assistant(tool_use) user(tool_result+text)". */
function roles(body) {
  return (body?.messages ?? []).map((m) => {
    if (typeof m.content === "string") return m.role;
    const kinds = [...new Set(m.content.map((c) => c.type))];
    return `${m.role}(${kinds.join("+")})`;
  }).join(" ");
}

const systemText = (body) => (typeof body?.system === "string" ? body.system : (body?.system ?? []).map((b) => b.text).join("\n"));

/** lastUserText is the text blocks of the last user message of a body. */
function lastUserText(body) {
  const m = (body?.messages ?? []).filter((x) => x.role === "user").at(-1);
  if (!m) return "";
  return typeof m.content === "string" ? m.content : m.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

/** shape describes a recorded request the way the compaction note asks for. */
export function shape(r) {
  const sys = systemText(r.body);
  const last = (r.body?.messages ?? []).at(-1);
  const endsAfter = last?.role === "user" && Array.isArray(last.content) && last.content.some((c) => c.type === "tool_result") ? "tool results" : "assistant text or user text";
  return {
    path: r.path, status: r.status, code: r.code, conversation: r.conversation, bytes: r.bytes,
    system_chars: sys.length, system_head: sys.slice(0, 200), tools: r.body?.tools?.length ?? 0,
    roles: roles(r.body), last_user_text: lastUserText(r.body).slice(0, 300), ends_after: endsAfter,
    max_tokens: r.body?.max_tokens, stream: r.body?.stream,
  };
}

/** requestsAfter is the number of requests of a turn after the first one answered with code. */
function requestsAfter(t, code) {
  const i = t.requests.findIndex((r) => r.code === code);
  return i < 0 ? -1 : t.requests.length - 1 - i;
}

const compacted = (t) => t.events.some((ev) => ev.type === "system" && ev.subtype === "compact_boundary");
const retriesOf = (t) => t.events.filter((ev) => ev.type === "system" && ev.subtype === "api_retry").length;

/**
 * The steps of the long session: each is one user turn. expect "ok" turns
 * must finish with a success, "error" turns must be reported as an error;
 * rounds is the number of tool rounds an "ok" turn runs. before() prepares
 * the tool output (its size, a one-shot directive) or the upstream.
 */
function steps(m) {
  // Claude Code merges a prompt that failed with the next prompt into one
  // user message, which the gateway sends up as the next turn: "#scenario=
  // usage_last" (the normal turn) is the newest scenario directive there, so
  // the emulator does not play the failed prompt's scenario again.
  const normal = "#scenario=usage_last";
  const big = 25_000;
  const small = 1_500;
  return [
    { label: "5 tool rounds, 1.5 KB outputs", prompt: `Start: look around the project. ${m} #tool=Bash #loop=5 ${normal}`, expect: "ok", rounds: 5, size: small },
    // The project becomes a git repository: Claude Code sends an
    // "Environment update" system message after the prompt.
    { label: "5 tool rounds, 25 KB outputs, after git init", prompt: `Now read the build logs. ${m} #tool=Bash #loop=5 ${normal}`, expect: "ok", rounds: 5, size: big,
      before: (s) => execFileSync("git", ["init", "-q", s.home.work]) },
    { label: "truncated stream mid-text", failure: "truncated_frame", prompt: `Summarize what you saw. ${m} #loop=0 #scenario=truncated_frame`, expect: "error" },
    { label: "after the truncated stream: 3 tool rounds", prompt: `Go on with the logs. ${m} #tool=Bash #loop=3 ${normal}`, expect: "ok", rounds: 3, size: small },
    { label: "failure event after text", failure: "failure_after_text", prompt: `What is the state now? ${m} #loop=0 #scenario=failure_after_text`, expect: "error" },
    { label: "after the failure event: 3 tool rounds", prompt: `Check the tests. ${m} #tool=Bash #loop=3 ${normal}`, expect: "ok", rounds: 3, size: small },
    { label: "dropped connection", failure: "drop_after_request", prompt: `Anything else? ${m} #loop=0 #scenario=drop_after_request`, expect: "error" },
    { label: "after the dropped connection: 3 tool rounds, 25 KB outputs", prompt: `Read the long log again. ${m} #tool=Bash #loop=3 ${normal}`, expect: "ok", rounds: 3, size: big },
    { label: "failure in the middle of a tool loop (round 2 of 4)", failure: "failure_after_text in a TOOL_RESPONSE", prompt: `Run the checks one by one. ${m} #tool=Bash #loop=4`,
      expect: "error", size: small, before: (s) => s.onceAt(2, "#scenario=failure_after_text") },
    { label: "after the tool-loop failure: 2 tool rounds", prompt: `Try the checks again. ${m} #tool=Bash #loop=2 ${normal}`, expect: "ok", rounds: 2, size: small },
    { label: "loop-approval gate after 2 of 5 rounds", failure: "loop approval gate", prompt: `Run every check. ${m} #tool=Bash #loop=5 #approval_after=2`, expect: "error", size: small },
    { label: "after the gate: continue, 1 tool round", prompt: `Continue. ${m} #tool=Bash #loop=1 ${normal}`, expect: "ok", rounds: 1, size: small },
    { label: "/compact after a tool round", failure: "compaction (/compact)", prompt: `/compact Keep it short. ${m} #loop=0`, expect: "compact" },
    { label: "after /compact: 2 tool rounds", prompt: `Carry on. ${m} #tool=Bash #loop=2 ${normal}`, expect: "ok", rounds: 2, size: small },
    { label: "conversation lost upstream", failure: "conversation lost", prompt: `One more thing. ${m} #loop=0`, expect: "any",
      before: async () => assert.equal((await fetch(`${e.observerURL}/_forget`, { method: "POST" })).status, 204) },
    { label: "after the lost conversation: 1 tool round", prompt: `Finish up. ${m} #tool=Bash #loop=1 ${normal}`, expect: "ok", rounds: 1, size: small },
  ];
}

// The long session (issue 34's item 7 for Claude Code direct): 16 user turns,
// 29 tool rounds planned, outputs of 1.5 KB and 25 KB, and each failure once.
test("claude-code-sessions long session: every failure once, the next turn goes on", { timeout: 420_000 }, async () => {
  const m = marker();
  const rec = await Recorder.start(e.observerURL);
  const s = new Session(m);
  try {
    for (const step of steps(m)) {
      if (step.size) s.size(step.size);
      if (step.before) await step.before(s);
      const t = await turn(s, rec, { prompt: step.prompt, label: step.label, maxTurns: (step.rounds ?? 5) + 3 });
      t.step = step;
    }
    const turns = s.turns;
    if (process.env.PMGATE_SCC_DUMP) {
      writeFileSync(process.env.PMGATE_SCC_DUMP, JSON.stringify({
        turns: turns.map((t) => ({ label: t.step.label, events: t.events, stderr: t.run.stderr, conversations: t.seen.conversations, upstream: t.seen.upstream, requests: t.requests.map((r) => r.seq) })),
        log: rec.log.map((r) => ({ ...shape(r), seq: r.seq, answer: r.answer, body: r.body })),
      }));
    }
    const all = turns.flatMap((t) => t.seen.upstream);
    const queries = all.filter((q) => q.chat_type === "USER_QUERY");
    const largest = Math.max(...queries.map((q) => q.query_chars));
    const rounds = turns.reduce((n, t) => n + toolRounds(t.events), 0);
    const describe = (t) => `${t.step.label}: ${succeeded(t) ? "finished" : failedVisibly(t) ? "error shown" : "?"}` +
      `${compacted(t) ? " (compacted)" : ""}; ${toolRounds(t.events)} tool rounds; requests ${t.requests.map((r) => `${r.status}${r.code ? ` ${r.code}` : ""}${r.conversation ? ` [${r.conversation}]` : ""}`).join(", ")}; ` +
      `upstream ${t.seen.userQueries} USER_QUERY (largest ${Math.max(0, ...t.seen.upstream.filter((q) => q.chat_type === "USER_QUERY").map((q) => q.query_chars))} chars), ${t.seen.toolResponses} TOOL_RESPONSE; ` +
      `${JSON.stringify(t.requests[0]?.body?.messages?.at(-1) ?? {}).includes("# Environment update") ? "ends with Claude Code's environment update; " : ""}` +
      `gateway ${describeConversations(t.seen.conversations)}; ${retriesOf(t)} api_retry; shown: ${JSON.stringify((t.result?.result ?? "").slice(0, 160))}`;
    for (const t of turns) await note(`long session, turn ${turns.indexOf(t) + 1}`, describe(t));
    await note("long session", `${turns.length} user turns, ${rounds} tool rounds, ${s.calls()} value-command runs; upstream ${queries.length} USER_QUERY ` +
      `(largest ${largest} chars), ${all.filter((q) => q.chat_type === "TOOL_RESPONSE").length} TOOL_RESPONSE, ${all.filter((q) => q.rejected).length} rejected; ` +
      `disclosures ${[...new Set(turns.flatMap((t) => t.requests.map((r) => r.conversation).filter(Boolean)))].join(", ") || "none"}`);
    const diag = turns.map((t) => t.diag).join("\n\n");

    // Each turn as expected: failures shown as errors, every next turn finished.
    for (const [i, t] of turns.entries()) {
      const st = t.step;
      if (st.expect === "error") {
        assert.ok(failedVisibly(t), `turn ${i + 1} (${st.label}) was reported as a success\n${t.diag}`);
      } else if (st.expect !== "any") {
        assert.ok(succeeded(t), `turn ${i + 1} (${st.label}) did not finish\n${t.diag}`);
      }
      if (st.expect === "ok") assert.equal(toolRounds(t.events), st.rounds, `turn ${i + 1} (${st.label}): tool rounds\n${t.diag}`);
      if (st.expect === "compact") {
        assert.ok(compacted(t), `turn ${i + 1}: /compact compacted (a compact_boundary event)\n${t.diag}`);
        assert.ok(!JSON.stringify(t.events).includes("Error during compaction"), `turn ${i + 1}: no compaction error\n${t.diag}`);
        const after = turns[i + 1].requests[0];
        assert.match(lastUserText({ messages: after.body.messages.slice(0, 1) }), /^This session is being continued from a previous conversation/, `the next turn starts from the summary\n${turns[i + 1].diag}`);
      }
    }
    // The whole session, counted at the emulator: within the limit, nothing rejected, no result twice.
    assert.ok(rounds >= 25, `at least 25 tool rounds (${rounds})\n${diag}`);
    assert.ok(largest <= queryLimit, `the largest upstream query is ${largest} chars\n${diag}`);
    assert.equal(all.filter((q) => q.rejected).length, 0, `the emulator rejected nothing\n${diag}`);
    const ids = all.filter((q) => q.chat_type === "TOOL_RESPONSE").flatMap((q) => q.call_ids);
    assert.ok(ids.length >= rounds, `the TOOL_RESPONSE bodies name the calls (${ids.length} ids)\n${diag}`);
    assert.deepEqual(ids.filter((id, k) => ids.indexOf(id) !== k), [], `no tool result was dispatched twice\n${diag}`);
    assert.deepEqual(rec.log.filter((r) => r.code === "upstream_query_too_long").map((r) => r.seq), [], `no turn was refused as too long\n${diag}`);
    // The gate: answered once with its own code after 2 rounds. Claude Code's
    // 400 recovery re-sends a 400 (measured: 5 more requests, see the
    // report): none of them may reach the upstream, each is refused.
    const gate = turns.find((t) => t.step.failure === "loop approval gate");
    const afterGate = requestsAfter(gate, "upstream_loop_approval");
    await note("loop-approval gate", `${afterGate} requests after the gate's 400 (${gate.requests.slice(-afterGate).map((r) => `${r.status} ${r.code}`).join(", ")}); ` +
      `upstream in the turn: ${gate.seen.userQueries} USER_QUERY, ${gate.seen.toolResponses} TOOL_RESPONSE; shown: ${JSON.stringify(gate.result?.result?.slice(0, 200))}`);
    assert.ok(afterGate >= 0, `the gate was answered with upstream_loop_approval\n${gate.diag}`);
    // Every re-send of the gated results gets the gate's answer again (row
    // C33), never "already consumed" or a conflict.
    const gated = gate.requests.filter((r) => r.code === "upstream_loop_approval").length;
    assert.equal(gated, 1 + afterGate, `the gate and each re-send were answered as the gate\n${gate.diag}`);
    assert.ok(afterGate <= 5, `Claude Code's re-sends are bounded (${afterGate})\n${gate.diag}`);
    for (const r of gate.requests.slice(gate.requests.length - afterGate)) assert.ok(r.status >= 400 && r.status < 500, `a re-send after the gate was refused\n${gate.diag}`);
    assert.equal(gate.seen.userQueries, 1, `one USER_QUERY in the gated turn\n${gate.diag}`);
    assert.equal(gate.seen.toolResponses, 2, `two TOOL_RESPONSE (the second answered by the gate), none after it\n${gate.diag}`);
    // The lost conversation: 410 upstream_conversation_lost (400 on the
    // Messages API) once; a re-send by Claude Code starts fresh, never on the
    // lost conversation.
    const lost = turns.find((t) => t.step.failure === "conversation lost");
    const afterLost = requestsAfter(lost, "upstream_conversation_lost");
    await note("conversation lost", `${afterLost} requests after the 410 (${lost.requests.slice(lost.requests.length - afterLost).map((r) => `${r.status}${r.code ? ` ${r.code}` : ""}`).join(", ")}); ` +
      `gateway ${describeConversations(lost.seen.conversations)}; shown: ${JSON.stringify(lost.result?.result?.slice(0, 200))}`);
    assert.equal(lost.requests[0].code, "upstream_conversation_lost", lost.diag);
    assert.ok(afterLost <= 1, `Claude Code re-sent the 410 at most once (${afterLost})\n${lost.diag}`);
    assert.deepEqual(lost.seen.conversations.slice(1).map((c) => c.msg).filter((x) => x !== "conversation: fresh"), [], `a re-send started fresh\n${lost.diag}`);
  } finally {
    s.remove();
    await rec.close();
  }
});

/**
 * autoSession prepares a session for Claude Code's automatic compaction: the
 * PreCompact hook's output is Claude Code's own way to add instructions to a
 * compaction; here it is the emulator's "#loop=0" (answer with text, as a
 * model told "Respond with TEXT ONLY" does), with the marker. autoEnv makes
 * Claude Code's window small (CLAUDE_CODE_AUTO_COMPACT_WINDOW, in tokens; it
 * compacts a little below it), so that a context of 25 KB tool outputs
 * passes it.
 */
function autoSession(m) {
  const s = new Session(m);
  mkdirSync(join(s.home.dir, ".claude"), { recursive: true });
  writeFileSync(join(s.home.dir, ".claude", "settings.json"), JSON.stringify({
    hooks: { PreCompact: [{ matcher: "auto", hooks: [{ type: "command", command: `echo "Keep it short. ${m} #loop=0"` }] }] },
  }));
  return s;
}
const autoEnv = (window) => ({ CLAUDE_CODE_AUTO_COMPACT_WINDOW: String(window), CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: "50" });

/** runAuto runs the turns of an automatic-compaction session and reports them. */
async function runAuto(name, s, rec, steps) {
  for (const st of steps) {
    if (st.size) s.size(st.size);
    const t = await turn(s, rec, { prompt: st.prompt, label: st.label, extraEnv: st.env ?? {} });
    t.step = st;
  }
  if (process.env.PMGATE_SCC_DUMP) {
    writeFileSync(`${process.env.PMGATE_SCC_DUMP}.${name.replace(/\W+/g, "-")}`, JSON.stringify({
      turns: s.turns.map((t) => ({ label: t.step.label, events: t.events, stderr: t.run.stderr, conversations: t.seen.conversations, upstream: t.seen.upstream, requests: t.requests.map((r) => r.seq) })),
      log: rec.log.map((r) => ({ ...shape(r), seq: r.seq, answer: r.answer, body: r.body })),
    }));
  }
  for (const t of s.turns) {
    const boundary = t.events.find((ev) => ev.type === "system" && ev.subtype === "compact_boundary");
    await note(`${name}, ${t.step.label}`, `${succeeded(t) ? "finished" : "failed"}${boundary ? ` (compacted: ${boundary.compact_metadata?.trigger}, ${boundary.compact_metadata?.pre_tokens} → ${boundary.compact_metadata?.post_tokens} tokens)` : ""}; ` +
      `${toolRounds(t.events)} tool rounds; requests ${t.requests.map((r) => `${r.status}${r.code ? ` ${r.code}` : ""}${r.conversation ? ` [${r.conversation}]` : ""}`).join(", ")}; ` +
      `upstream ${t.seen.userQueries} USER_QUERY (largest ${Math.max(0, ...t.seen.upstream.filter((q) => q.chat_type === "USER_QUERY").map((q) => q.query_chars))} chars), ${t.seen.toolResponses} TOOL_RESPONSE; gateway ${describeConversations(t.seen.conversations)}`);
  }
  return s.turns;
}

/** checkAuto asserts a session whose every turn finishes and one of which compacted automatically. */
function checkAuto(turns) {
  const diag = turns.map((t) => t.diag).join("\n\n");
  const auto = turns.filter((t) => t.events.some((ev) => ev.type === "system" && ev.subtype === "compact_boundary" && ev.compact_metadata?.trigger === "auto"));
  assert.equal(auto.length, 1, `Claude Code compacted automatically once\n${diag}`);
  for (const t of turns) {
    assert.ok(succeeded(t), `turn "${t.step.label}" did not finish\n${t.diag}`);
    assert.equal(toolRounds(t.events), t.step.rounds, `turn "${t.step.label}": tool rounds\n${t.diag}`);
    assert.ok(!JSON.stringify(t.events).includes("Error during compaction"), `no compaction error\n${t.diag}`);
  }
  const all = turns.flatMap((t) => t.seen.upstream);
  assert.ok(Math.max(...all.filter((q) => q.chat_type === "USER_QUERY").map((q) => q.query_chars)) <= queryLimit, diag);
  assert.equal(all.filter((q) => q.rejected).length, 0, diag);
  const ids = all.filter((q) => q.chat_type === "TOOL_RESPONSE").flatMap((q) => q.call_ids);
  assert.deepEqual(ids.filter((id, k) => ids.indexOf(id) !== k), [], `no tool result was dispatched twice\n${diag}`);
}

// Automatic compaction at the start of a turn, after a turn of tool rounds:
// the window is set from turn 2 on, which starts over it (5 rounds of 25 KB
// make about 47,000 tokens in Claude Code's count).
test("claude-code-sessions automatic compaction at the start of a turn, after tool rounds", { timeout: 300_000 }, async () => {
  const m = marker();
  const rec = await Recorder.start(e.observerURL);
  const s = autoSession(m);
  try {
    const turns = await runAuto("automatic compaction at a turn's start", s, rec, [
      { label: "5 tool rounds, 25 KB outputs", prompt: `Read the logs. ${m} #tool=Bash #loop=5 #usage=conversation`, size: 25_000, rounds: 5 },
      { label: "compaction, then 2 tool rounds, 1.5 KB", prompt: `Now the small logs. ${m} #tool=Bash #loop=2 #scenario=usage_last`, size: 1_500, rounds: 2, env: autoEnv(40_000) },
      { label: "1 tool round", prompt: `Finish. ${m} #tool=Bash #loop=1 #scenario=usage_last`, rounds: 1, env: autoEnv(40_000) },
    ]);
    checkAuto(turns);
  } finally {
    s.remove();
    await rec.close();
  }
});

// Automatic compaction in the middle of a tool loop: Claude Code compacts
// when a 25 KB result takes its context over the window, then sends that
// result after the summary. Its summary request goes up in the conversation
// first (the result is too large to start fresh), so whether the round passes
// depends on what the service does with a pending call after a newer user
// query, which nobody has measured: the emulator's default abandons the call
// (TOOL_CALL_NOT_FOUND: that round fails once and the next turn goes on; a
// known gap, kept as todo) and "#pending=keep" keeps it answerable (the
// gateway then answers the call once, in that conversation, and the session
// passes).
async function midLoopSession(pending) {
  const m = marker();
  const rec = await Recorder.start(e.observerURL);
  const s = autoSession(m);
  try {
    const turns = await runAuto(`automatic compaction mid-loop${pending}`, s, rec, [
      { label: "2 tool rounds, 25 KB outputs", prompt: `Read the logs. ${m} #tool=Bash #loop=2 #usage=conversation${pending}`, size: 25_000, rounds: 2 },
      { label: "3 tool rounds, 25 KB, compaction in the loop", prompt: `And the other logs. ${m} #tool=Bash #loop=3 #scenario=usage_last`, rounds: 3, env: autoEnv(40_000) },
      { label: "1 tool round, 1.5 KB", prompt: `Finish. ${m} #tool=Bash #loop=1 #scenario=usage_last`, size: 1_500, rounds: 1, env: autoEnv(40_000) },
    ]);
    checkAuto(turns);
    const mid = turns[1];
    assert.ok(mid.seen.conversations.some((c) => c.disclosure === "continued-with-earlier-history"), `the pending call was answered in its conversation\n${mid.diag}`);
  } finally {
    s.remove();
    await rec.close();
  }
}

test("claude-code-sessions automatic compaction in the middle of a tool loop, the service keeping the pending call", { timeout: 300_000 }, () => midLoopSession(" #pending=keep"));

test("claude-code-sessions automatic compaction in the middle of a tool loop", { timeout: 300_000, todo: "what the service does with a pending call after a newer user query is not measured; the emulator's default abandons it: see docs/CLIENTS.md" }, () => midLoopSession(""));
