// Claude Code (the pinned native binary of @anthropic-ai/claude-code),
// headless, straight at the gateway's /v1/messages: ANTHROPIC_BASE_URL is the
// gateway's origin (through the observer's recording proxy, which checks every
// answer with the strict Anthropic grammar checker), ANTHROPIC_API_KEY its
// key, and every *_MODEL setting Claude Code reads pinned to the configured
// model. Upstream dispatches are counted at the emulator.
import { test as nodeTest } from "node:test";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { env, marker, note, Observer } from "./lib/harness.mjs";
import { describeConversations, jsonLines, nativeBinary, querySizes, runAgent, tempHome, Window } from "./lib/agents.mjs";

const e = env();
// PMGATE_CLIENTS_ONLY=<substring> runs only the matching scenarios (while working on one).
const test = (name, opts, fn) => (!process.env.PMGATE_CLIENTS_ONLY || name.includes(process.env.PMGATE_CLIENTS_ONLY) ? nodeTest(name, opts, fn) : nodeTest.skip(name));
const claude = nativeBinary("@anthropic-ai", "claude-code-linux-x64", "claude");
// The full recipe of docs/CLIENTS.md (as through 9router): the everyday coding
// tools named with --tools and the short, editable system prompt file.
const recipeArgs = ["--system-prompt-file", fileURLToPath(new URL("../../examples/claude-code/system-prompt.md", import.meta.url))];
const recipeTools = "Bash,Read,Edit,Write,Glob,Grep,TodoWrite";
const gateways = {
  default: { observer: new Observer(e.observerURL), origin: e.observerURL },
  wide: { observer: new Observer(e.wideObserverURL), origin: e.wideObserverURL }, // the query limit raised
};

/** modelEnv pins every model setting Claude Code 2.1.332 reads (main loop, side calls, subagents) to one model. */
export function modelEnv(model) {
  const names = ["ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_FABLE_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"];
  return Object.fromEntries(names.map((n) => [n, model]));
}

/**
 * runClaude runs one headless task against a gateway and returns the
 * stream-json events, the last result event, and what the gateway and the
 * emulator saw in the run's window.
 */
async function runClaude({ gateway, prompt, tools, maxTurns, home: keep, extraArgs = [], extraEnv = {}, stopOnRefusal = true, timeoutMs = 150_000 }) {
  const home = keep ?? tempHome("claude-direct");
  const win = await Window.open(gateways[gateway].observer);
  const args = ["-p", prompt, "--output-format", "stream-json", "--verbose", "--max-turns", String(maxTurns), "--model", e.model];
  if (tools) args.push("--tools", tools);
  // The emulator calls Bash with the command "value-command" (a harmless
  // "command not found"); allowing it lets the call run instead of being denied.
  args.push("--allowedTools", "Bash", ...extraArgs);
  try {
    const run = await runAgent({
      command: claude,
      args,
      cwd: home.work,
      timeoutMs,
      env: {
        HOME: home.dir,
        ANTHROPIC_BASE_URL: gateways[gateway].origin,
        ANTHROPIC_API_KEY: e.apiKey,
        ...modelEnv(e.model),
        DISABLE_TELEMETRY: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
        DISABLE_ERROR_REPORTING: "1",
        DISABLE_BUG_COMMAND: "1",
        ...extraEnv,
      },
      watch: stopOnRefusal ? win.stopOnRefusal : undefined,
    });
    const events = jsonLines(run.stdout);
    const seen = await win.close(prompt.match(/mk-[0-9a-f]+/)[0]);
    const result = events.filter((ev) => ev.type === "result").at(-1);
    const messages = seen.exchanges.filter((x) => x.api === "messages");
    const diag = `exit ${run.code}${run.signal ? ` (${run.signal})` : ""}${run.reason ? `, stopped: ${run.reason}` : ""}\n` +
      `gateway answers: ${JSON.stringify(messages.map((x) => ({ status: x.status, outcome: x.outcome, stop: x.stop_reason, code: x.error_code, retry: x.should_retry, msg: x.error_message?.slice(0, 200), violation: x.violation, stream: x.stream })))}\n` +
      `system events: ${JSON.stringify(events.filter((ev) => ev.type === "system" && ev.subtype !== "init").map((ev) => ({ subtype: ev.subtype, attempt: ev.attempt, error: ev.error, status: ev.error_status })))}\n` +
      `last result: ${JSON.stringify(result)}\nstderr: ${run.stderr.slice(-1500)}`;
    return { run, events, seen, result, messages, diag };
  } finally {
    if (!keep) home.remove();
  }
}

/** checkGrammar asserts that every Messages answer of the run passed the strict checker. */
function checkGrammar(r) {
  assert.ok(r.messages.length >= 1, `no Messages exchange reached the gateway\n${r.diag}`);
  for (const x of r.messages) assert.equal(x.violation ?? "", "", `a Messages answer broke the grammar\n${r.diag}`);
}

/** toolRounds counts the assistant messages that asked for tools (one event per content block). */
function toolRounds(events) {
  const ids = new Set();
  for (const ev of events) {
    if (ev.type === "assistant" && ev.message?.content?.some((c) => c.type === "tool_use")) ids.add(ev.message.id);
  }
  return ids.size;
}

const retriesOf = (events) => events.filter((ev) => ev.type === "system" && ev.subtype === "api_retry").length;

// (a) default tools with the query limit raised, (b) a two-tool recipe under
// the default limit, (c) a three-round tool loop: each finishes with the
// emulator's final answer and exactly one TOOL_RESPONSE dispatch per round.
const toolScenarios = [
  { name: "default tools (limit raised), tool round trip", gateway: "wide", tools: "", loop: 1, directive: "#tool=Bash" },
  { name: "--tools Bash,Read under the default limit, tool round trip", gateway: "default", tools: "Bash,Read", loop: 1, directive: "#tool=Bash,Read" },
  { name: "--tools Bash,Read, three-round tool loop", gateway: "default", tools: "Bash,Read", loop: 3, directive: "#tool=Bash" },
  { name: "recipe (--system-prompt-file, --tools " + recipeTools + ") under the default limit, three-round tool loop", gateway: "default",
    tools: recipeTools, loop: 3, directive: "#tool=Bash", extraArgs: recipeArgs },
];

for (const s of toolScenarios) {
  test(`claude-code-direct ${s.name}`, { timeout: 200_000 }, async () => {
    const m = marker();
    const directives = [s.directive, s.loop > 1 ? `#loop=${s.loop}` : ""].filter(Boolean).join(" ");
    const prompt = `Use your tools to look around, then tell me what you found. ${m} ${directives}`.trim();
    const r = await runClaude({ gateway: s.gateway, prompt, tools: s.tools, maxTurns: s.loop + 3, extraArgs: s.extraArgs });
    const init = r.events.find((ev) => ev.type === "system" && ev.subtype === "init");
    await note(s.name, `${r.run.ms} ms; ${init?.tools?.length ?? "?"} tools; first turn upstream ${querySizes(r.seen.queries)}; ` +
      `${r.seen.userQueries} USER_QUERY, ${r.seen.toolResponses} TOOL_RESPONSE; ${r.messages.length} Messages requests; ${retriesOf(r.events)} api_retry`);
    assert.deepEqual(r.seen.refusals, [], `the gateway refused requests\n${r.diag}`);
    checkGrammar(r);
    assert.ok(r.result, `no stream-json result event\n${r.diag}\nstdout tail: ${r.run.stdout.slice(-3000)}`);
    assert.equal(r.result.subtype, "success", r.diag);
    assert.equal(r.result.is_error, false, r.diag);
    assert.equal(r.run.code, 0, r.diag);
    assert.equal(toolRounds(r.events), s.loop, `tool rounds\n${r.diag}`);
    const uses = r.events.flatMap((ev) => (ev.type === "assistant" ? ev.message?.content ?? [] : [])).filter((c) => c.type === "tool_use");
    const perRound = s.directive.split(",").length;
    assert.equal(uses.length, s.loop * perRound, `${perRound} tool call(s) per round: ${uses.map((u) => u.name)}`);
    assert.equal(r.seen.userQueries, 1, `one USER_QUERY for the task\n${r.diag}`);
    assert.equal(r.seen.toolResponses, s.loop, `one TOOL_RESPONSE dispatch per tool round, counted at the emulator\n${r.diag}`);
    assert.equal(r.seen.rejected, 0, "the emulator rejected nothing");
    assert.equal(retriesOf(r.events), 0, `no api_retry\n${r.diag}`);
    assert.match(r.result.result, /^Tool results received: /, "the final answer quotes the tool results");
  });
}

// (d) claude -p, then claude -p --continue in the same home: the second turn
// continues the upstream conversation (the emulator sees turn 2 of the same
// conversation, with only the new prompt as its query), not a fresh transcript.
test("claude-code-direct two-turn session (--continue) continued upstream", { timeout: 400_000 }, async () => {
  const home = tempHome("claude-direct");
  try {
    const marks = [marker(), marker()];
    const prompts = [`Say hello. ${marks[0]} #loop=0`, `And once more, please. ${marks[1]} #loop=0`];
    const turns = [];
    for (let i = 0; i < prompts.length; i++) {
      // The full recipe, so the session docs/CLIENTS.md describes is the one continued.
      turns.push(await runClaude({ gateway: "default", prompt: prompts[i], tools: recipeTools, maxTurns: 2, home,
        extraArgs: [...recipeArgs, ...(i > 0 ? ["--continue"] : [])] }));
    }
    await note("two-turn session (--continue)", turns.map((t, i) => `turn ${i + 1}: ${t.run.ms} ms; upstream ${querySizes(t.seen.queries)}; ` +
      `${t.seen.userQueries} USER_QUERY, ${t.seen.continued} continued; gateway ${describeConversations(t.seen.conversations)}`).join(" | "));
    const diag = turns.map((t, i) => `turn ${i + 1}: ${t.diag}; conversations ${JSON.stringify(t.seen.conversations)}`).join("\n");
    for (const t of turns) {
      assert.deepEqual(t.seen.refusals, [], diag);
      checkGrammar(t);
      assert.equal(t.result?.subtype, "success", diag);
      assert.equal(t.seen.userQueries, 1, `one USER_QUERY per turn\n${diag}`);
      assert.equal(t.seen.toolResponses + t.seen.rejected, 0, diag);
    }
    assert.equal(turns[0].seen.continued, 0, diag);
    const second = turns[1];
    assert.equal(second.seen.continued, 1, `the second turn continued the upstream conversation\n${diag}`);
    assert.equal(second.seen.conversations.at(-1)?.msg, "conversation: continued", diag);
    const q = second.seen.queries.filter((x) => x.chat_type === "USER_QUERY");
    assert.equal(q.length, 1, diag);
    assert.equal(q[0].turn, 2, `turn 2 of the same conversation at the emulator\n${diag}`);
    assert.ok(q[0].query_chars <= prompts[1].length + 64, `only the new prompt went upstream (${q[0].query_chars} chars)\n${diag}`);
    assert.match(second.result.result, /turn 2 of this conversation/, diag);
  } finally {
    home.remove();
  }
});

// (e) a fail-closed upstream (text, then a failure): Claude Code must report
// an error, never a success, with the non-streaming fallback on (default) and
// off (CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK=1, so a broken stream cannot
// hide behind a JSON re-send). Retries are capped to keep the run short; each
// answer the gateway gave must be a failure that passes the checker.
for (const fallback of [true, false]) {
  const name = `fail-closed stream is reported as an error (non-streaming fallback ${fallback ? "on" : "off"})`;
  test(`claude-code-direct ${name}`, { timeout: 200_000 }, async () => {
    const m = marker();
    const extraEnv = { CLAUDE_CODE_MAX_RETRIES: "1", ...(fallback ? {} : { CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK: "1" }) };
    const r = await runClaude({ gateway: "default", prompt: `Say hello. ${m} #scenario=failure_after_text`, tools: "Bash,Read", maxTurns: 2,
      extraEnv, stopOnRefusal: false });
    const streamed = r.messages.filter((x) => x.stream).length;
    await note(name, `${r.run.ms} ms; ${r.messages.length} Messages requests (${streamed} streamed), outcomes ${r.messages.map((x) => x.outcome)}; ` +
      `${r.seen.userQueries} USER_QUERY; ${retriesOf(r.events)} api_retry; result ${r.result?.subtype} is_error=${r.result?.is_error}`);
    checkGrammar(r);
    for (const x of r.messages) assert.equal(x.outcome, "failed", `the gateway never answered a broken upstream with a success\n${r.diag}`);
    if (!fallback) assert.equal(r.messages.filter((x) => !x.stream).length, 0, `no non-streaming re-send with the fallback off\n${r.diag}`);
    assert.ok(r.result, `no stream-json result event\n${r.diag}`);
    assert.ok(r.result.is_error === true || r.result.subtype !== "success", `Claude Code reported an error\n${r.diag}`);
    assert.notEqual(r.run.code, 0, r.diag);
  });
}

// (f) a deterministic refusal (the first turn over the default query limit:
// default tools on the default gateway) is a 400 with x-should-retry: false.
// Claude Code's retry layer does not retry it (no api_retry event, no
// backoff); what it does instead, measured with 2.1.332, is its 400 recovery:
// the same request once more, once without thinking.display, then the same
// three with every deferred tool sent up front (21 tools, refused by
// POSTMAN_MAX_TOOLS_UPSTREAM) — six requests at most, each refused before the
// upstream, nothing dispatched.
test("claude-code-direct a deterministic refusal (query too long) is not retried", { timeout: 200_000 }, async () => {
  const m = marker();
  const r = await runClaude({ gateway: "default", prompt: `Look around. ${m} #tool=Bash`, maxTurns: 2, stopOnRefusal: false });
  await note("deterministic refusal (query too long)", `${r.run.ms} ms; ${r.messages.length} Messages requests (Claude Code's 400 recovery variants); ` +
    `answers ${[...new Set(r.messages.map((x) => `${x.status} ${x.error_code}`))].join(", ")}; ${retriesOf(r.events)} api_retry`);
  checkGrammar(r);
  assert.equal(r.messages[0].status, 400, r.diag);
  assert.equal(r.messages[0].error_code, "upstream_query_too_long", r.diag);
  for (const x of r.messages) {
    assert.equal(x.status, 400, r.diag);
    assert.equal(x.should_retry, "false", r.diag);
  }
  assert.ok(r.messages.length <= 6, `Claude Code's recovery is bounded (${r.messages.length} requests)\n${r.diag}`);
  assert.equal(r.seen.userQueries + r.seen.toolResponses + r.seen.rejected, 0, "nothing was sent upstream");
  assert.equal(retriesOf(r.events), 0, `Claude Code's retry layer did not retry\n${r.diag}`);
  assert.ok(r.result?.is_error === true || r.result?.subtype !== "success", `Claude Code reported the refusal\n${r.diag}`);
});
