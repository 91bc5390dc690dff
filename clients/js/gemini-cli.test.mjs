// gemini-cli (the pinned @google/gemini-cli, a Node bundle), headless at the
// gateway's Gemini API (/v1beta, through the observer's recording proxy):
// GOOGLE_GEMINI_BASE_URL at the gateway's origin, GEMINI_API_KEY, nothing that
// phones out (lib/gemini.mjs). A scenario passes when gemini-cli's last
// stream-json event is a success (or, for a failure, an error: never a
// success), the emulator saw one TOOL_RESPONSE per tool round, and the gateway
// answered every request with a proven end (a finishReason) or an error.
import { test as nodeTest } from "node:test";
import assert from "node:assert/strict";
import { env, marker, note, Observer } from "./lib/harness.mjs";
import { describeConversations, querySizes, Window } from "./lib/agents.mjs";
import { GeminiHome, originOf, recipeTools, runGemini } from "./lib/gemini.mjs";

const e = env();
// PMGATE_CLIENTS_ONLY=<substring> runs only the matching scenarios (while working on one).
const test = (name, opts, fn) => (!process.env.PMGATE_CLIENTS_ONLY || name.includes(process.env.PMGATE_CLIENTS_ONLY) ? nodeTest(name, opts, fn) : nodeTest.skip(name));
const gateways = {
  default: { observer: new Observer(e.observerURL), origin: originOf(e.tapURL) },
  wide: { observer: new Observer(e.wideObserverURL), origin: originOf(e.wideTapURL) },
};
const queryLimit = 10_000;

/** turn runs one gemini-cli turn in home and returns the run with what the gateway and the emulator saw. */
async function turn(home, { gateway = "default", prompt, resume = false, recipe = true, yolo = true }) {
  const g = gateways[gateway];
  const win = await Window.open(g.observer);
  const r = await runGemini({ home, origin: g.origin, apiKey: e.apiKey, model: e.model, prompt, resume, recipe, yolo });
  r.seen = await win.close(prompt.match(/mk-[0-9a-f]+/)[0]);
  r.gemini = r.seen.exchanges.filter((x) => x.api === "gemini");
  r.diag = `exit ${r.run.code}${r.run.signal ? ` (${r.run.signal})` : ""}${r.run.reason ? `, stopped: ${r.run.reason}` : ""}\n` +
    `result: ${JSON.stringify(r.result)}\n` +
    `exchanges: ${JSON.stringify(r.seen.exchanges.map((x) => ({ path: x.api, status: x.status, code: x.error_code, done: x.done, finish: x.finish, calls: x.tool_calls?.length, v: x.violations })))}\n` +
    `upstream: ${querySizes(r.seen.queries)}; conversations: ${describeConversations(r.seen.conversations)}\n` +
    `stderr: ${r.run.stderr.slice(-1500)}`;
  return r;
}

/** succeeded asserts a successful turn: gemini-cli's own verdict, and the gateway's proven ends. */
function succeeded(r) {
  assert.deepEqual(r.seen.refusals, [], `the gateway refused requests\n${r.diag}`);
  assert.equal(r.run.code, 0, r.diag);
  assert.equal(r.result?.status, "success", r.diag);
  assert.ok(r.gemini.length > 0, `no request reached the Gemini routes\n${r.diag}`);
  for (const x of r.gemini) {
    assert.deepEqual(x.violations ?? [], [], `what the gateway sent breaks the stream rules\n${r.diag}`);
    assert.equal(x.done, true, `every answer ended with a finishReason\n${r.diag}`);
  }
}

/** failed asserts a failed turn: gemini-cli reports an error, never a success, and the gateway proved no end. */
function failed(r) {
  assert.notEqual(r.result?.status, "success", `gemini-cli reported a success\n${r.diag}`);
  assert.notEqual(r.run.code, 0, `gemini-cli exited 0\n${r.diag}`);
  assert.ok(r.result?.status === "error" || r.run.stderr.includes("Error when talking to Gemini API"), `no error shown\n${r.diag}`);
  const last = r.gemini.at(-1);
  assert.ok(last, r.diag);
  assert.notEqual(last.done, true, `the failed answer carried a finishReason\n${r.diag}`);
  for (const x of r.gemini) assert.deepEqual(x.violations ?? [], [], `what the gateway sent breaks the stream rules\n${r.diag}`);
}

const loopPrompt = (m, n) => `Run value-command to look around, then tell me what you found. ${m} #tool=run_shell_command #loop=${n}`;

test("gemini-cli recipe, text turn", { timeout: 150_000 }, async () => {
  const m = marker();
  const home = new GeminiHome(m, { tools: recipeTools, maxAttempts: 1 });
  try {
    const r = await turn(home, { prompt: `Say hello. ${m} #loop=0` });
    await note("recipe, text turn", `${r.run.ms} ms; upstream ${querySizes(r.seen.queries)}`);
    succeeded(r);
    assert.match(r.text, /You said: /, `the emulator's answer reached gemini-cli: ${JSON.stringify(r.text)}\n${r.diag}`);
    assert.equal(r.seen.userQueries, 1, r.diag);
    const q = r.seen.queries.filter((x) => x.chat_type === "USER_QUERY");
    assert.ok(q[0].query_chars <= queryLimit, r.diag);
  } finally {
    home.remove();
  }
});

test("gemini-cli recipe, #loop=3", { timeout: 150_000 }, async () => {
  const m = marker();
  const home = new GeminiHome(m, { tools: recipeTools, maxAttempts: 1 });
  try {
    const r = await turn(home, { prompt: loopPrompt(m, 3) });
    await note("recipe, #loop=3", `${r.run.ms} ms; upstream ${querySizes(r.seen.queries)}; ${r.seen.userQueries} USER_QUERY, ${r.seen.toolResponses} TOOL_RESPONSE; ` +
      `tools ${r.toolUses.map((x) => x.tool_name).join(",")}`);
    succeeded(r);
    assert.equal(r.toolUses.filter((x) => x.tool_name === "run_shell_command").length, 3, r.diag);
    assert.equal(r.toolResults.filter((x) => x.status === "success").length, 3, r.diag);
    assert.equal(home.calls(), 3, "value-command ran once per round");
    assert.match(r.text, /Tool results received: /, r.diag);
    assert.equal(r.seen.toolResponses, 3, `one TOOL_RESPONSE dispatch per tool round, counted at the emulator\n${r.diag}`);
    assert.equal(r.seen.rejected, 0, r.diag);
    // The gateway's call ids went to gemini-cli, and it answered with them.
    const ids = r.gemini.flatMap((x) => (x.tool_calls ?? []).map((c) => c.id));
    assert.equal(ids.length, 3, r.diag);
    for (const id of ids) assert.ok(r.toolUses.some((u) => u.tool_id.endsWith(`__${id}`)), `call id ${id} reached gemini-cli\n${r.diag}`);
    for (const x of r.seen.queries) assert.ok(x.query_chars <= queryLimit, r.diag);
  } finally {
    home.remove();
  }
});

// gemini-cli's own system prompt (about 32,000 characters) and tools: over the
// default limit, so the gateway refuses the first turn, and gemini-cli must
// show that as an error. Its size is the report's measurement.
test("gemini-cli default prompt and tools, refused under the default limits", { timeout: 150_000 }, async () => {
  const m = marker();
  const home = new GeminiHome(m, { maxAttempts: 1 });
  try {
    const r = await turn(home, { prompt: `Say hello. ${m} #loop=0`, recipe: false, yolo: false });
    const refusals = r.seen.refusals;
    await note("default prompt and tools", `${r.run.ms} ms; gateway: ${refusals.join(" | ") || "no refusal"}; upstream ${querySizes(r.seen.queries)}`);
    assert.equal(r.seen.userQueries, 0, `nothing went upstream\n${r.diag}`);
    assert.equal(refusals.length, 1, r.diag);
    assert.match(refusals[0], /HTTP 400 code=upstream_query_too_long/, r.diag);
    assert.notEqual(r.run.code, 0, r.diag);
    assert.notEqual(r.result?.status, "success", r.diag);
  } finally {
    home.remove();
  }
});

// The first turn's size with and without each half of the recipe, measured
// at the gateway whose query limit is raised (a one-line prompt; tool
// declarations travel apart from the query text and count only against the
// service's tool limit).
const sizes = [
  { name: "headless default (8 tools)", recipe: false, yolo: false },
  { name: "--yolo (15 tools)", recipe: false, yolo: true },
  { name: "tools.core only", recipe: false, tools: recipeTools },
  { name: "GEMINI_SYSTEM_MD only, --yolo", recipe: true, yolo: true },
  { name: "recipe (GEMINI_SYSTEM_MD and tools.core)", recipe: true, tools: recipeTools, fits: true },
];
for (const v of sizes) {
  test(`gemini-cli first-turn size, ${v.name}`, { timeout: 150_000, skip: e.strategy !== "access_token" && "measured once, in access_token" }, async () => {
    const m = marker();
    const home = new GeminiHome(m, { tools: v.tools, maxAttempts: 1 });
    try {
      const r = await turn(home, { gateway: "wide", prompt: `Say hello. ${m} #loop=0`, recipe: v.recipe, yolo: v.yolo ?? true });
      await note(`first-turn size, ${v.name}`, `upstream ${querySizes(r.seen.queries)}`);
      succeeded(r);
      const q = r.seen.queries.filter((x) => x.chat_type === "USER_QUERY");
      assert.equal(q.length, 1, r.diag);
      if (v.fits) assert.ok(q[0].query_chars <= queryLimit, r.diag);
    } finally {
      home.remove();
    }
  });
}

// Every emulator fault, in a first answer and in the answer to a tool result
// (after a tool round gemini-cli takes a stream without finishReason for a
// finished answer: the gateway must make it an error it shows). Retries off
// (maxAttempts 1): one failure, one verdict.
const faults = ["ambiguous_eof", "truncated_frame", "failure_after_text", "unknown_event", "model_mismatch", "empty_stream",
  "drop_after_request", "server_error", "json_200", "quota_usage_state", "data_after_done", "loop_approval"];
for (const sc of faults) {
  test(`gemini-cli fault ${sc}, first answer`, { timeout: 120_000 }, async () => {
    const m = marker();
    const home = new GeminiHome(m, { tools: recipeTools, maxAttempts: 1 });
    try {
      const r = await turn(home, { prompt: `Say hello. ${m} #loop=0 #scenario=${sc}` });
      await note(`fault ${sc}, first answer`, `exit ${r.run.code}; ${r.result?.status ?? "no result"}: ${(r.result?.error?.message ?? "").slice(0, 160)}`);
      failed(r);
    } finally {
      home.remove();
    }
  });
  test(`gemini-cli fault ${sc}, after a tool round`, { timeout: 120_000 }, async () => {
    const m = marker();
    const home = new GeminiHome(m, { tools: recipeTools, maxAttempts: 1 });
    try {
      home.onceAt(1, `#scenario=${sc}`);
      const r = await turn(home, { prompt: loopPrompt(m, 1) });
      await note(`fault ${sc}, after a tool round`, `exit ${r.run.code}; ${r.result?.status ?? "no result"}: ${(r.result?.error?.message ?? "").slice(0, 160)}`);
      failed(r);
      assert.equal(r.toolResults.length, 1, r.diag);
      assert.ok(r.seen.toolResponses <= 1, `the tool result went upstream at most once\n${r.diag}`);
    } finally {
      home.remove();
    }
  });
}

// A failure in the middle of a session does not end it: after a broken stream
// or the service's loop gate in the answer to a tool result, the next prompt
// (`--resume latest`, which resends the whole history, that tool round
// included) is answered, and the result that already went upstream is
// history: it is not dispatched again.
for (const sc of ["failure_after_text", "loop_approval"]) {
  test(`gemini-cli session goes on after ${sc} in a tool round`, { timeout: 240_000 }, async () => {
    const m = marker();
    const home = new GeminiHome(m, { tools: recipeTools, maxAttempts: 1 });
    try {
      home.onceAt(1, `#scenario=${sc}`);
      const first = await turn(home, { prompt: loopPrompt(m, 1) });
      failed(first);
      assert.ok(first.seen.toolResponses <= 1, `the tool result went upstream at most once\n${first.diag}`);
      const r = await turn(home, { prompt: `Turn 2: say something. ${marker()} #loop=0`, resume: true });
      await note(`session after ${sc}`, `turn 2: upstream ${querySizes(r.seen.queries)}; continued ${r.seen.continued}`);
      succeeded(r);
      assert.equal(r.seen.toolResponses, 0, `the earlier tool result was not dispatched again\n${r.diag}`);
      for (const x of r.seen.queries) assert.ok(x.query_chars <= queryLimit, r.diag);
    } finally {
      home.remove();
    }
  });
}

// A session: `gemini -p`, then `gemini -p --resume latest` in the same home
// (gemini-cli resends the whole history, tool rounds included; 0.61.0 sends
// each functionResponse of a resumed history twice); every later turn must
// continue the upstream conversation with only the new prompt. Two turns in
// both strategies, with and without a tool round in the first; and 25 turns
// (a tool round every fifth), also in both.
const sessions = [
  { turns: 2, name: "recipe, 2-turn session (--resume latest)", toolAt: () => false },
  { turns: 2, name: "recipe, 2-turn session after a tool round (--resume latest)", toolAt: (t) => t === 1 },
  { turns: 25, name: "recipe, 25-turn session (--resume latest)", toolAt: (t) => t % 5 === 0 },
];
for (const { turns, name, toolAt } of sessions) {
  test(`gemini-cli ${name}`, { timeout: turns * 60_000 }, async () => {
    const home = new GeminiHome(marker(), { tools: recipeTools, maxAttempts: 1 });
    try {
      let largest = 0;
      const per = [];
      for (let t = 1; t <= turns; t++) {
        const m = marker();
        const tool = toolAt(t);
        const prompt = tool ? `Turn ${t}: ${loopPrompt(m, 1)}` : `Turn ${t}: say something. ${m} #loop=0`;
        const r = await turn(home, { prompt, resume: t > 1 });
        const diag = `turn ${t}: ${r.diag}`;
        succeeded({ ...r, diag });
        assert.equal(r.seen.toolResponses, tool ? 1 : 0, diag);
        const q = r.seen.queries.filter((x) => x.chat_type === "USER_QUERY");
        if (t > 1) {
          assert.equal(r.seen.continued, 1, `turn ${t} continued the upstream conversation\n${diag}`);
          assert.equal(q.length, 1, diag);
          assert.ok(q[0].query_chars <= prompt.length + 64, `only the new prompt went upstream (${q[0].query_chars} chars)\n${diag}`);
          if (!tool) assert.match(r.text, new RegExp(`\\(turn ${t} of this conversation\\)`), diag);
        }
        for (const x of r.seen.queries) largest = Math.max(largest, x.query_chars);
        per.push(q.map((x) => x.query_chars).join("+") || "-");
      }
      assert.ok(largest <= queryLimit, `largest upstream query ${largest}`);
      await note(name, `largest upstream query ${largest} chars; USER_QUERY sizes per turn ${per.join(",")}`);
    } finally {
      home.remove();
    }
  });
}
