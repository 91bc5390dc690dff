// Claude Code (the pinned native binary of @anthropic-ai/claude-code), headless,
// through the pinned 9router's /v1/messages: 9router translates Anthropic
// messages to chat completions and calls the gateway (through the observer's
// recording proxy). A scenario passes when Claude Code's last stream-json
// result is a success, the emulator saw one TOOL_RESPONSE per tool round, and
// the gateway answered every request with a success. The two-turn session
// (claude -p, then claude -p --continue in the same home) reports whether the
// gateway continued the upstream conversation or started fresh, and why.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { env, marker, note, Observer } from "./lib/harness.mjs";
import { startNineRouter } from "./lib/ninerouter.mjs";
import { describeConversations, jsonLines, nativeBinary, querySizes, runAgent, tempHome, Window } from "./lib/agents.mjs";

const e = env();
const claude = nativeBinary("@anthropic-ai", "claude-code-linux-x64", "claude");
// The recipe of docs/CLIENTS.md: the everyday coding tools named with --tools
// (without them Claude Code sends a user message of about 9,200 characters
// describing its deferred tools, skills and sub-agents) and its system prompt
// replaced by the short, editable examples/claude-code/system-prompt.md.
const systemPrompt = fileURLToPath(new URL("../../examples/claude-code/system-prompt.md", import.meta.url));
const recipeArgs = ["--system-prompt-file", systemPrompt];
const recipeTools = "Bash,Read,Edit,Write,Glob,Grep,TodoWrite";
const gateways = {
  default: { observer: new Observer(e.observerURL), baseURL: e.tapURL },
  wide: { observer: new Observer(e.wideObserverURL), baseURL: e.wideTapURL }, // the query limit raised
};

/**
 * runClaude runs one headless task. It stops early when the gateway refused a
 * request (9router would turn it into a 503 and Claude Code would retry for
 * minutes) and returns the stream-json events and the gateway's refusals.
 */
async function runClaude({ prefix, gateway, prompt, tools, maxTurns, home: keep, extraArgs = [] }) {
  const home = keep ?? tempHome("claude");
  const model = `${prefix}/${e.model}`;
  const win = await Window.open(gateways[gateway].observer);
  const args = ["-p", prompt, "--output-format", "stream-json", "--verbose", "--max-turns", String(maxTurns), "--model", model];
  if (tools) args.push("--tools", tools);
  args.push(...extraArgs);
  // The emulator calls Bash with the command "value-command" (a harmless
  // "command not found"); allowing it lets the call run instead of being denied.
  args.push("--allowedTools", "Bash");
  try {
    const run = await runAgent({
      command: claude,
      args,
      cwd: home.work,
      timeoutMs: 150_000,
      env: {
        HOME: home.dir,
        ANTHROPIC_BASE_URL: router.origin,
        ANTHROPIC_API_KEY: router.clientKey,
        ANTHROPIC_MODEL: model,
        ANTHROPIC_SMALL_FAST_MODEL: model,
        ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
        ANTHROPIC_DEFAULT_SONNET_MODEL: model,
        ANTHROPIC_DEFAULT_OPUS_MODEL: model,
        DISABLE_TELEMETRY: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
        DISABLE_ERROR_REPORTING: "1",
        DISABLE_BUG_COMMAND: "1",
      },
      watch: win.stopOnRefusal,
    });
    const events = jsonLines(run.stdout);
    const seen = await win.close(prompt.match(/mk-[0-9a-f]+/)[0]);
    return { run, events, seen };
  } finally {
    if (!keep) home.remove();
  }
}

/** toolRounds counts the assistant messages that asked for tools (one event per content block). */
function toolRounds(events) {
  const ids = new Set();
  for (const ev of events) {
    if (ev.type === "assistant" && ev.message?.content?.some((c) => c.type === "tool_use")) ids.add(ev.message.id);
  }
  return ids.size;
}

// With its default tool set (about 12 tools sent, the rest deferred behind
// ToolSearch) the first turn is above the service's default query limit, so
// it goes to the gateway with the limit raised, and the emulator is told to
// call Bash (#tool=Bash) rather than the first tool offered (Agent, a
// sub-agent). With --tools Bash,Read it fits the default limit; the emulator
// then calls both as one parallel group (Claude Code also sends a
// DeferredToolPlaceholder tool, which a model would not call).
const scenarios = [
  { name: "default tools, tool round trip", gateway: "wide", tools: "", loop: 1, directive: "#tool=Bash" },
  { name: "default tools, #loop=3", gateway: "wide", tools: "", loop: 3, directive: "#tool=Bash" },
  { name: "--tools Bash,Read, tool round trip", gateway: "default", tools: "Bash,Read", loop: 1, directive: "#tool=Bash,Read" },
  { name: "--tools Bash,Read, #loop=3", gateway: "default", tools: "Bash,Read", loop: 3, directive: "#tool=Bash,Read" },
  { name: "recipe (--system-prompt-file, --tools " + recipeTools + "), #loop=3", gateway: "default", tools: recipeTools, loop: 3, directive: "#tool=Bash", extraArgs: recipeArgs },
];
// Its default tool set against the default limit: the gateway refuses the
// first turn before sending it (400 upstream_query_too_long); Claude Code only
// sees 9router's 503 and would retry, so the run is stopped at the refusal.
const overLimit = { name: "default tools over the default query limit", gateway: "default", tools: "", loop: 1, directive: "#tool=Bash" };
scenarios.push(overLimit);
// A two-turn session with the recipe: a text answer (#loop=0: no tool round
// although tools are offered), then claude -p --continue in the same home,
// which resends the session's history through 9router; the gateway must
// continue the upstream conversation with only the new prompt.
const session = { name: "recipe, two-turn session (--continue)", gateway: "default", tools: recipeTools };
scenarios.push(session);
// A 20-turn session with the recipe (one strategy: it measures the client):
// every fifth turn runs a tool round; the largest upstream query is reported.
const long = { name: "recipe, 20-turn session (--continue)", gateway: "default", tools: recipeTools };
scenarios.push(long);
// One 9router provider node per scenario: 9router locks a node's model after
// an error, which must not decide the next scenario. Model "<prefix>/<model>".
scenarios.forEach((s, i) => (s.prefix = `pmgate-${i}`));
const router = await startNineRouter({
  upstreams: scenarios.map((s) => ({ prefix: s.prefix, baseURL: gateways[s.gateway].baseURL, apiKey: e.apiKey })),
});
after(() => router.stop());

test(`claude-code ${overLimit.name}`, { timeout: 200_000 }, async () => {
  const m = marker();
  const { run, seen } = await runClaude({ prefix: overLimit.prefix, gateway: "default", prompt: `Look around. ${m} #tool=Bash`, maxTurns: 2 });
  await note(overLimit.name, `${run.ms} ms; gateway answered ${JSON.stringify(seen.refusals)}`);
  assert.ok(seen.refusals.length >= 1, `the gateway refused nothing: ${run.stdout.slice(-2000)}`);
  for (const e of seen.exchanges) {
    assert.equal(e.status, 400);
    assert.equal(e.error_code, "upstream_query_too_long", JSON.stringify(e));
  }
  assert.equal(seen.userQueries + seen.toolResponses + seen.rejected, 0, "nothing was sent upstream");
  assert.match(run.reason, /the gateway refused/, "the run was stopped at the refusal");
});

test(`claude-code ${session.name}`, { timeout: 400_000 }, async () => {
  const home = tempHome("claude");
  try {
    const marks = [marker(), marker()];
    const prompts = [`Say hello. ${marks[0]} #loop=0`, `And once more, please. ${marks[1]} #loop=0`];
    const turns = [];
    for (let i = 0; i < prompts.length; i++) {
      const r = await runClaude({ prefix: session.prefix, gateway: session.gateway, prompt: prompts[i], tools: session.tools, maxTurns: 2,
        home, extraArgs: [...recipeArgs, ...(i > 0 ? ["--continue"] : [])] });
      const result = r.events.filter((ev) => ev.type === "result").at(-1);
      turns.push({ ...r, result });
    }
    const per = turns.map((t, i) => `turn ${i + 1}: ${t.run.ms} ms; upstream ${querySizes(t.seen.queries)}; ${t.seen.userQueries} USER_QUERY, ` +
      `${t.seen.continued} continued; gateway ${describeConversations(t.seen.conversations)}`);
    await note(session.name, per.join(" | "));
    const diag = turns.map((t, i) => `turn ${i + 1}: exit ${t.run.code}${t.run.reason ? `, stopped: ${t.run.reason}` : ""}; refusals ${JSON.stringify(t.seen.refusals)}; ` +
      `result ${JSON.stringify(t.result)}; conversations ${JSON.stringify(t.seen.conversations)}; stderr ${t.run.stderr.slice(-1000)}`).join("\n");
    for (let i = 0; i < turns.length; i++) {
      const { run, seen, result, events } = turns[i];
      assert.deepEqual(seen.refusals, [], `turn ${i + 1}: the gateway refused requests\n${diag}`);
      assert.ok(result, `turn ${i + 1}: no stream-json result event\n${diag}`);
      assert.equal(result.subtype, "success", diag);
      assert.equal(result.is_error, false, diag);
      assert.equal(run.code, 0, diag);
      assert.equal(toolRounds(events), 0, `turn ${i + 1}: a text answer\n${diag}`);
      assert.equal(seen.toolResponses + seen.rejected, 0, diag);
      assert.ok(seen.conversations.length >= 1, `turn ${i + 1}: the gateway logged its conversation decision\n${diag}`);
    }
    assert.equal(turns[0].seen.continued, 0, diag);
    // Continued at the emulator: only the new user message went upstream, in
    // the session's conversation (its "turn 2" answer).
    const second = turns[1];
    assert.equal(second.seen.continued, 1, `the second turn continued the upstream conversation\n${diag}`);
    assert.equal(second.seen.conversations.at(-1).msg, "conversation: continued", diag);
    assert.match(second.result.result, /^Hello again from the pmgate emulator \(turn 2 of this conversation\)\. You said: /, diag);
    assert.ok(second.result.result.includes(marks[1]), diag);
    const q = second.seen.queries.filter((x) => x.chat_type === "USER_QUERY");
    assert.equal(q.length, 1, diag);
    assert.equal(q[0].turn, 2, diag);
    assert.ok(q[0].query_chars <= prompts[1].length + 64, `only the new prompt went upstream (${q[0].query_chars} chars)\n${diag}`);
  } finally {
    home.remove();
  }
});

test(`claude-code ${long.name}`, { timeout: 900_000, skip: e.strategy !== "web_session" && "runs once, in web_session" }, async () => {
  const home = tempHome("claude");
  try {
    let largest = 0;
    const sizes = [];
    for (let turn = 1; turn <= 20; turn++) {
      const m = marker();
      const tool = turn % 5 === 0;
      const prompt = tool ? `Turn ${turn}: look around again. ${m} #tool=Bash` : `Turn ${turn}: go on. ${m} #loop=0`;
      const r = await runClaude({ prefix: long.prefix, gateway: long.gateway, prompt, tools: long.tools, maxTurns: 3,
        home, extraArgs: [...recipeArgs, ...(turn > 1 ? ["--continue"] : [])] });
      const result = r.events.filter((ev) => ev.type === "result").at(-1);
      const diag = `turn ${turn}: exit ${r.run.code}; refusals ${JSON.stringify(r.seen.refusals)}; result ${JSON.stringify(result)}; ` +
        `conversations ${JSON.stringify(r.seen.conversations)}`;
      assert.deepEqual(r.seen.refusals, [], diag);
      assert.equal(result?.subtype, "success", diag);
      assert.equal(r.seen.toolResponses, tool ? 1 : 0, diag);
      if (turn > 1) assert.equal(r.seen.continued, 1, `turn ${turn} continued the upstream conversation\n${diag}`);
      for (const q of r.seen.queries.filter((x) => x.chat_type === "USER_QUERY")) {
        largest = Math.max(largest, q.query_chars);
        sizes.push(q.query_chars);
      }
    }
    await note(long.name, `largest upstream query ${largest} chars; USER_QUERY sizes ${sizes.join(",")}`);
  } finally {
    home.remove();
  }
});

for (const s of scenarios.filter((x) => x !== overLimit && x !== session && x !== long)) {
  test(`claude-code ${s.name}`, { timeout: 200_000 }, async () => {
    const m = marker();
    const directives = [s.directive, s.loop > 1 ? `#loop=${s.loop}` : ""].filter(Boolean).join(" ");
    const prompt = `Use your tools to look around, then tell me what you found. ${m} ${directives}`.trim();
    const { run, events, seen } = await runClaude({ prefix: s.prefix, gateway: s.gateway, prompt, tools: s.tools, maxTurns: s.loop + 3,
      extraArgs: s.extraArgs ?? [] });
    const result = events.filter((ev) => ev.type === "result").at(-1);
    const retries = events.filter((ev) => ev.type === "system" && ev.subtype === "api_retry").length;
    const init = events.find((ev) => ev.type === "system" && ev.subtype === "init");
    await note(s.name, `${run.ms} ms; ${init?.tools?.length ?? "?"} tools; upstream ${querySizes(seen.queries)}; ` +
      `${seen.userQueries} USER_QUERY, ${seen.toolResponses} TOOL_RESPONSE; ${retries} api_retry`);
    const diag = `exit ${run.code}${run.signal ? ` (${run.signal})` : ""}${run.reason ? `, stopped: ${run.reason}` : ""}\n` +
      `gateway refusals: ${JSON.stringify(seen.refusals)}\nlast result: ${JSON.stringify(result)}\nstderr: ${run.stderr.slice(-2000)}`;
    assert.deepEqual(seen.refusals, [], `the gateway refused requests\n${diag}`);
    assert.ok(result, `no stream-json result event\n${diag}\nstdout tail: ${run.stdout.slice(-3000)}`);
    assert.equal(result.subtype, "success", diag);
    assert.equal(result.is_error, false, diag);
    assert.equal(run.code, 0, diag);
    assert.equal(toolRounds(events), s.loop, `tool rounds\n${diag}`);
    const uses = events.flatMap((ev) => (ev.type === "assistant" ? ev.message?.content ?? [] : [])).filter((c) => c.type === "tool_use");
    const perRound = s.directive.split(",").length;
    assert.equal(uses.length, s.loop * perRound, `${perRound} tool call(s) per round: ${uses.map((u) => u.name)}`);
    assert.equal(seen.toolResponses, s.loop, "one TOOL_RESPONSE dispatch per tool round, counted at the emulator");
    assert.equal(seen.rejected, 0, "the emulator rejected nothing");
    assert.match(result.result, /^Tool results received: /, "the final answer quotes the tool results");
  });
}
