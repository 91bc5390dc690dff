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
import { env, marker, note, Observer } from "./lib/harness.mjs";
import { jsonLines, nativeBinary, querySizes, runAgent, tempHome, Window } from "./lib/agents.mjs";

const e = env();
const opencode = nativeBinary("opencode-linux-x64", "bin", "opencode");
const gateways = {
  default: { observer: new Observer(e.observerURL), baseURL: e.tapURL },
  wide: { observer: new Observer(e.wideObserverURL), baseURL: e.wideTapURL },
};

async function runOpencode({ gateway, prompt, tools }) {
  const home = tempHome("opencode");
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
    }),
  );
  const win = await Window.open(g.observer);
  try {
    const run = await runAgent({
      command: opencode,
      args: ["run", "--format", "json", "--pure", "--model", `pmgate/${e.model}`, prompt],
      cwd: home.work,
      timeoutMs: 120_000,
      env: {
        HOME: home.dir,
        XDG_CONFIG_HOME: xdg("config"),
        XDG_DATA_HOME: xdg("data"),
        XDG_CACHE_HOME: xdg("cache"),
        XDG_STATE_HOME: xdg("state"),
        OPENCODE_DISABLE_AUTOUPDATE: "1",
        OPENCODE_DISABLE_MODELS_FETCH: "1",
        OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
        OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
        OPENCODE_DISABLE_SHARE: "1",
      },
      watch: win.stopOnRefusal,
    });
    const seen = await win.close(prompt.match(/mk-[0-9a-f]+/)[0]);
    return { run, events: jsonLines(run.stdout), seen };
  } finally {
    home.remove();
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
];

for (const s of scenarios) {
  test(`opencode ${s.name}`, { timeout: 150_000 }, async () => {
    const m = marker();
    // bash runs (a harmless "value-command"); with parallel calling on, read
    // joins it in one group. The emulator's default choice (the first tool)
    // would be apply_patch, which only fails on its sample patch.
    const prompt = `Use your tools to look around, then tell me what you found. ${m} #tool=bash,read${s.loop > 1 ? ` #loop=${s.loop}` : ""}`;
    const { run, events, seen } = await runOpencode({ gateway: s.gateway, prompt, tools: s.tools });
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
