// The Vercel AI SDK (ai 6, the newest major whose engines accept Node 20) with
// @ai-sdk/openai-compatible at the gateway (through the observer's recording
// proxy), with tools declared in everyday zod: string formats, a regex, a
// record, enums with defaults, multi-key objects. generateText and streamText
// run their multi-step loops (stopWhen: stepCountIs(n)). A scenario passes
// when the loop ends with the final text, every tool round was answered, the
// emulator saw one TOOL_RESPONSE per round and the gateway answered every
// request with a success. The multi-turn session resends its history as the
// SDK returned it (result.response.messages) and must continue its upstream
// conversation: only the new user message goes upstream on later turns.
import { test } from "node:test";
import assert from "node:assert/strict";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { z } from "zod";
import { env, marker, note, Observer } from "./lib/harness.mjs";
import { describeConversations, querySizes, Window } from "./lib/agents.mjs";

const e = env();
const observer = new Observer(e.observerURL);
const pmgate = createOpenAICompatible({ name: "pmgate", baseURL: e.tapURL, apiKey: e.apiKey, includeUsage: true });

/** tools returns the scenario's tools; calls records every execution. */
function tools(m, calls) {
  return {
    inviteMember: tool({
      description: "Invite a person to a workspace",
      inputSchema: z.object({
        email: z.string().email(),
        homepage: z.string().url().optional(),
        workspaceId: z.string().uuid(),
        startsAt: z.string().datetime(),
        code: z.string().regex(/^[A-Z]{3}-[0-9]{4}$/).optional(),
        labels: z.record(z.string(), z.string()),
        role: z.enum(["viewer", "editor", "admin"]).default("viewer"),
        notify: z.boolean().default(true),
        seats: z.number().int().min(1).max(50),
        team: z.object({ name: z.string(), size: z.number().int().default(1) }),
      }),
      execute: async (input) => {
        calls.push({ tool: "inviteMember", input });
        return { invited: input.email, role: input.role, marker: m };
      },
    }),
    getWeather: tool({
      description: "Weather for a city",
      inputSchema: z.object({ city: z.string(), unit: z.enum(["celsius", "fahrenheit"]).default("celsius") }),
      execute: async (input) => {
        calls.push({ tool: "getWeather", input });
        return `sunny in ${input.city} ${m}`;
      },
    }),
  };
}

const scenarios = [
  { name: "generateText, tool round trip", stream: false, loop: 1 },
  { name: "generateText, #loop=3", stream: false, loop: 3 },
  { name: "streamText, tool round trip", stream: true, loop: 1 },
  { name: "streamText, #loop=3", stream: true, loop: 3 },
];

for (const s of scenarios) {
  test(`ai-sdk ${s.name}`, { timeout: 60_000 }, async () => {
    const m = marker();
    const calls = [];
    const win = await Window.open(observer);
    const t0 = performance.now();
    const args = {
      model: pmgate(e.model),
      tools: tools(m, calls),
      stopWhen: stepCountIs(s.loop + 2),
      maxRetries: 0,
      prompt: `Invite the team and check the weather. ${m}${s.loop > 1 ? ` #loop=${s.loop}` : ""}`,
    };
    let text = "";
    let steps = [];
    let streamError, callError;
    try {
      if (s.stream) {
        const r = streamText({ ...args, onError: ({ error }) => (streamError = error) });
        await r.consumeStream();
        [text, steps] = await Promise.all([r.text, r.steps]);
      } else {
        ({ text, steps } = await generateText(args));
      }
    } catch (err) {
      callError = err;
    }
    const ms = Math.round(performance.now() - t0);
    const seen = await win.close(m);
    const reasons = steps.map((st) => st.finishReason);
    const results = steps.flatMap((st) => st.content.filter((c) => c.type === "tool-result" || c.type === "tool-error"));
    const toolErrors = results.filter((c) => c.type === "tool-error").map((c) => `${c.toolName}: ${String(c.error?.message ?? c.error).slice(0, 200)}`);
    await note(s.name, `${ms} ms; upstream ${querySizes(seen.queries)}; ${seen.userQueries} USER_QUERY, ${seen.toolResponses} TOOL_RESPONSE; ` +
      `steps ${reasons.join(",")}; ${calls.length} executions, ${toolErrors.length} tool errors${toolErrors.length ? ` (${toolErrors.join("; ")})` : ""}`);
    const diag = `gateway refusals: ${JSON.stringify(seen.refusals)}\nsteps: ${reasons}\nerror: ${callError ?? streamError}\n` +
      `tool errors: ${toolErrors}\ntext: ${text}`;
    assert.deepEqual(seen.refusals, [], `the gateway refused requests\n${diag}`);
    assert.equal(callError ?? streamError, undefined, diag);
    assert.deepEqual(reasons, [...Array(s.loop).fill("tool-calls"), "stop"], diag);
    assert.match(text, /^Tool results received: /, diag);
    assert.ok(text.includes(m), `the final answer quotes the tool results\n${diag}`);
    assert.deepEqual(toolErrors, [], `every tool call was valid and executed\n${diag}`);
    assert.equal(results.length, calls.length);
    assert.equal(seen.toolResponses, s.loop, "one TOOL_RESPONSE dispatch per tool round, counted at the emulator");
    assert.equal(seen.rejected, 0, "the emulator rejected nothing");
  });
}

test("ai-sdk multi-turn session continues its upstream conversation", { timeout: 60_000 }, async () => {
  const marks = [marker(), marker(), marker()];
  const texts = [`hello ${marks[0]}`, `tell me more ${marks[1]}`, `thanks ${marks[2]}`];
  const system = "You are terse. " + "Follow the rules. ".repeat(300);
  const messages = [];
  const turns = [];
  for (let i = 0; i < texts.length; i++) {
    messages.push({ role: "user", content: texts[i] });
    const win = await Window.open(observer);
    const args = { model: pmgate(e.model), system, messages, maxRetries: 0 };
    let text, response, streamError;
    if (i === 1) {
      const r = streamText({ ...args, onError: ({ error }) => (streamError = error) });
      await r.consumeStream();
      [text, response] = await Promise.all([r.text, r.response]);
    } else {
      ({ text, response } = await generateText(args));
    }
    const seen = await win.close(marks[i]);
    turns.push({ text, seen, streamError });
    messages.push(...response.messages);
  }
  const per = turns.map((t, i) => `turn ${i + 1}${i === 1 ? " (streamText)" : ""}: upstream ${querySizes(t.seen.queries)}, gateway ${describeConversations(t.seen.conversations)}`);
  await note("multi-turn session", per.join(" | "));
  const diag = turns.map((t, i) => `turn ${i + 1}: ${JSON.stringify(t.text)} refusals ${JSON.stringify(t.seen.refusals)} error ${t.streamError} ` +
    `conversations ${JSON.stringify(t.seen.conversations)}`).join("\n");
  for (let i = 0; i < turns.length; i++) {
    const { text, seen, streamError } = turns[i];
    assert.deepEqual(seen.refusals, [], `turn ${i + 1}: the gateway refused requests\n${diag}`);
    assert.equal(streamError, undefined, diag);
    assert.equal(seen.userQueries, 1, `turn ${i + 1}: one USER_QUERY\n${diag}`);
    assert.equal(seen.rejected, 0, "the emulator rejected nothing");
    const q = seen.queries.filter((x) => x.chat_type === "USER_QUERY");
    assert.equal(q.length, 1, `turn ${i + 1}: its words reached the upstream once\n${diag}`);
    if (i === 0) {
      assert.equal(seen.continued, 0, diag);
      assert.ok(q[0].query_chars > system.length, `the first turn sends the whole transcript\n${diag}`);
      continue;
    }
    assert.equal(seen.continued, 1, `turn ${i + 1} continued at the emulator\n${diag}`);
    assert.equal(q[0].turn, i + 1, diag);
    assert.equal(text, `Hello again from the pmgate emulator (turn ${i + 1} of this conversation). You said: ${texts[i]}`, diag);
    assert.ok(q[0].query_chars <= texts[i].length + 64, `turn ${i + 1} sends only the new user message (${q[0].query_chars} chars)\n${diag}`);
    assert.deepEqual(seen.conversations.map((c) => c.msg), ["conversation: continued"], diag);
    assert.equal(seen.conversations[0].new_messages, 1, diag);
  }
  const first = await observer.get({ marker: marks[0] });
  assert.equal(first.emulator.user_query, 1, "the first turn's words reached the upstream once: the history was never re-sent");
});

// The agent loop as a session (the recipe of docs/CLIENTS.md: the SDK as is):
// a three-round tool task to its final answer, then 19 more turns (a tool
// round every fifth), each resending the history as the SDK returned it. Every
// later turn must continue the upstream conversation with only its new user
// message; the largest upstream query is reported.
test("ai-sdk 20-turn agent session with tool loops continues upstream", { timeout: 120_000 }, async () => {
  const messages = [];
  let largest = 0;
  const per = [];
  for (let turn = 1; turn <= 20; turn++) {
    const m = marker();
    const loop = turn === 1 ? 3 : turn % 5 === 0 ? 1 : 0;
    messages.push({ role: "user", content: `Turn ${turn}: invite the team and check the weather. ${m} #loop=${loop}` });
    const calls = [];
    const win = await Window.open(observer);
    const { text, steps, response } = await generateText({ model: pmgate(e.model), tools: tools(m, calls), messages,
      stopWhen: stepCountIs(loop + 2), maxRetries: 0 });
    const seen = await win.close(m);
    messages.push(...response.messages);
    const reasons = steps.map((st) => st.finishReason);
    const diag = `turn ${turn}: steps ${reasons}; refusals ${JSON.stringify(seen.refusals)}; conversations ${JSON.stringify(seen.conversations)}; text ${text}`;
    assert.deepEqual(seen.refusals, [], diag);
    assert.deepEqual(reasons, [...Array(loop).fill("tool-calls"), "stop"], diag);
    assert.equal(seen.toolResponses, loop, `one TOOL_RESPONSE per round\n${diag}`);
    const q = seen.queries.filter((x) => x.chat_type === "USER_QUERY");
    assert.equal(q.length, 1, diag);
    if (turn > 1) {
      assert.equal(seen.continued, 1, `turn ${turn} continued at the emulator\n${diag}`);
      assert.ok(q[0].query_chars <= messages.at(-1 - response.messages.length).content.length + 64, `only the new message went upstream\n${diag}`);
    }
    largest = Math.max(largest, q[0].query_chars);
    per.push(q[0].query_chars);
  }
  await note("20-turn agent session", `largest upstream query ${largest} chars; USER_QUERY sizes ${per.join(",")}`);
});
