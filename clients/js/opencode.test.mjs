// opencode (the pinned native binary of opencode-ai), headless, at the gateway
// (through the observer's recording proxy) with a provider block that uses
// @ai-sdk/openai-compatible. A scenario passes when opencode ends with a text
// step whose reason is "stop", reports no error, the emulator saw one
// TOOL_RESPONSE per tool round, and the gateway answered every request with a
// success.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { env, marker, note, Observer } from "./lib/harness.mjs";
import { jsonLines, querySizes, runAgent, tempHome, Window } from "./lib/agents.mjs";
import { opencodeBinary, opencodeEnv, startServer } from "./lib/opencode.mjs";

const e = env();
const opencode = opencodeBinary();
const gateways = {
  default: { observer: new Observer(e.observerURL), baseURL: e.tapURL },
  wide: { observer: new Observer(e.wideObserverURL), baseURL: e.wideTapURL },
};

// The recipe of docs/CLIENTS.md: opencode's own tools, the build agent's
// prompt replaced by the short, editable examples/opencode/build-prompt.md.
const buildPrompt = fileURLToPath(new URL("../../examples/opencode/build-prompt.md", import.meta.url));
const recipe = { build: { prompt: `{file:${buildPrompt}}` } };

async function runOpencode({ gateway, prompt, tools, agent, home: keep, extraArgs = [], attach }) {
  const home = keep ?? tempHome("opencode");
  const g = gateways[gateway];
  const xdg = (d) => join(home.dir, d);
  mkdirSync(join(xdg("config"), "opencode"), { recursive: true });
  // The provider block a user writes (README "Clients").
  writeFileSync(
    join(xdg("config"), "opencode", "opencode.json"),
    JSON.stringify({
      $schema: "https://opencode.ai/config.json",
      provider: {
        pmgate: {
          npm: "@ai-sdk/openai-compatible",
          name: "pmgate",
          options: { baseURL: g.baseURL, apiKey: e.apiKey },
          models: { [e.model]: {} },
        },
      },
      ...(tools ? { tools } : {}),
      ...(agent ? { agent } : {}),
    }),
  );
  const win = await Window.open(g.observer);
  try {
    const run = await runAgent({
      command: opencode,
      args: ["run", "--format", "json", ...(attach ? ["--attach", attach] : ["--pure"]), "--model", `pmgate/${e.model}`, ...extraArgs, prompt],
      cwd: home.work,
      timeoutMs: 120_000,
      env: opencodeEnv(home),
      watch: win.stopOnRefusal,
    });
    const seen = await win.close(prompt.match(/mk-[0-9a-f]+/)[0]);
    return { run, events: jsonLines(run.stdout), seen };
  } finally {
    if (!keep) home.remove();
  }
}

// With its default tools the first turn is just above the service's default
// query limit, so it goes to the gateway with the limit raised; with tools
// turned off in its config ("tools": {name: false}) it fits the default.
const fewer = { apply_patch: false, edit: false, write: false, webfetch: false, task: false, todowrite: false, skill: false, glob: false, grep: false };
const scenarios = [
  { name: "default tools, tool round trip", loop: 1, gateway: "wide" },
  { name: "default tools, #loop=3", loop: 3, gateway: "wide" },
  { name: "bash and read only, #loop=3", loop: 3, gateway: "default", tools: fewer },
  { name: "recipe (build prompt, default tools), #loop=3", loop: 3, gateway: "default", agent: recipe },
];

for (const s of scenarios) {
  test(`opencode ${s.name}`, { timeout: 150_000 }, async () => {
    const m = marker();
    // bash runs (a harmless "value-command"); with parallel calling on, read
    // joins it in one group. The emulator's default choice (the first tool)
    // would be apply_patch, which only fails on its sample patch.
    const prompt = `Use your tools to look around, then tell me what you found. ${m} #tool=bash,read${s.loop > 1 ? ` #loop=${s.loop}` : ""}`;
    const { run, events, seen } = await runOpencode({ gateway: s.gateway, prompt, tools: s.tools, agent: s.agent });
    const steps = events.filter((ev) => ev.type === "step_finish").map((ev) => ev.part?.reason);
    const errors = events.filter((ev) => ev.type === "error");
    const tools = events.filter((ev) => ev.type === "tool_use").map((ev) => `${ev.part?.tool}:${ev.part?.state?.status}`);
    const text = events.filter((ev) => ev.type === "text").map((ev) => ev.part?.text ?? "").join("");
    await note(s.name, `${run.ms} ms; upstream ${querySizes(seen.queries)}; ${seen.userQueries} USER_QUERY, ` +
      `${seen.toolResponses} TOOL_RESPONSE; steps ${steps.join(",")}; tools ${tools.join(",")}`);
    const diag = `exit ${run.code}${run.signal ? ` (${run.signal})` : ""}${run.reason ? `, stopped: ${run.reason}` : ""}\n` +
      `gateway refusals: ${JSON.stringify(seen.refusals)}\nerrors: ${JSON.stringify(errors)}\nsteps: ${steps}\n` +
      `stderr: ${run.stderr.slice(-2000)}`;
    assert.deepEqual(seen.refusals, [], `the gateway refused requests\n${diag}`);
    assert.deepEqual(errors, [], diag);
    assert.equal(run.code, 0, diag);
    assert.equal(steps.filter((r) => r === "tool-calls").length, s.loop, `tool rounds\n${diag}`);
    assert.equal(tools.filter((x) => x === "bash:completed").length, s.loop, `bash ran once per round: ${tools}`);
    assert.equal(steps.at(-1), "stop", `the last step ends the task\n${diag}`);
    assert.match(text, /Tool results received: /, "the final answer quotes the tool results");
    assert.equal(seen.toolResponses, s.loop, "one TOOL_RESPONSE dispatch per tool round, counted at the emulator");
    assert.equal(seen.rejected, 0, "the emulator rejected nothing");
  });
}

/** textOf is the agent's answer text of one run. */
const textOf = (events) => events.filter((ev) => ev.type === "text").map((ev) => ev.part?.text ?? "").join("");

// A session with the recipe: opencode run, then opencode run --continue in the
// same home (it resends the session's history); every later turn must continue
// the upstream conversation with only the new prompt. Two turns in both
// strategies; 20 turns (a tool round every fifth) once, in web_session.
for (const turns of [2, 20]) {
  const name = `recipe, ${turns}-turn session (--continue)`;
  test(`opencode ${name}`, { timeout: turns * 60_000, skip: turns > 2 && e.strategy !== "web_session" && "runs once, in web_session" }, async () => {
    const home = tempHome("opencode");
    let server;
    try {
      let largest = 0;
      const per = [];
      for (let turn = 1; turn <= turns; turn++) {
        // The long session attaches every turn after the first to one
        // `opencode serve` (a plain `opencode run` spends most of its time
        // starting up); the two-turn session runs `opencode run` twice.
        if (turns > 2 && turn === 2) server = await startServer(home);
        const m = marker();
        const tool = turns > 2 && turn % 5 === 0;
        const prompt = tool ? `Turn ${turn}: look around again. ${m} #tool=bash` : `Turn ${turn}: say something. ${m} #loop=0`;
        const { run, events, seen } = await runOpencode({ gateway: "default", prompt, agent: recipe, home, extraArgs: turn > 1 ? ["--continue"] : [],
          attach: server?.url });
        const errors = events.filter((ev) => ev.type === "error");
        const diag = `turn ${turn}: exit ${run.code}${run.reason ? `, stopped: ${run.reason}` : ""}; refusals ${JSON.stringify(seen.refusals)}; ` +
          `errors ${JSON.stringify(errors)}; conversations ${JSON.stringify(seen.conversations)}; stderr ${run.stderr.slice(-1000)}`;
        assert.deepEqual(seen.refusals, [], diag);
        assert.deepEqual(errors, [], diag);
        assert.equal(run.code, 0, diag);
        assert.equal(seen.toolResponses, tool ? 1 : 0, diag);
        const q = seen.queries.filter((x) => x.chat_type === "USER_QUERY");
        if (turn > 1) {
          assert.equal(seen.continued, 1, `turn ${turn} continued the upstream conversation\n${diag}`);
          const cont = q.filter((x) => x.turn > 1); // (a title request, if any, is a conversation of its own)
          assert.equal(cont.length, 1, diag);
          assert.ok(cont[0].query_chars <= prompt.length + 64, `only the new prompt went upstream (${cont[0].query_chars} chars)\n${diag}`);
          // (attached to a server, opencode run prints no text events: the emulator's count above is the evidence)
          if (!tool && !server) assert.match(textOf(events), new RegExp(`\\(turn ${turn} of this conversation\\)`), diag);
        }
        for (const x of q) largest = Math.max(largest, x.query_chars);
        per.push(q.map((x) => x.query_chars).join("+") || "-");
      }
      await note(name, `largest upstream query ${largest} chars; USER_QUERY sizes per turn ${per.join(",")}`);
    } finally {
      server?.stop();
      home.remove();
    }
  });
}
