// The openai npm SDK's Responses API (responses.create, responses.stream)
// against the gateway's POST /v1/responses: text, tools, a tool loop and a
// mid-stream failure. Single dispatch is counted at the emulator.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { env, marker, Observer } from "./lib/harness.mjs";

const e = env();
const openai = new OpenAI({ baseURL: e.baseURL, apiKey: e.apiKey, maxRetries: 0 });
const observer = new Observer(e.observerURL);
const model = e.model;
const opts = { timeout: 90_000 };
const cityParameters = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
const weather = { type: "function", name: "get_weather", description: "Weather for a city", parameters: cityParameters, strict: false };
const clock = { type: "function", name: "get_time", description: "Time in a city", parameters: cityParameters, strict: false };

test("openai-node responses text", opts, async () => {
  const mk = marker();
  const r = await openai.responses.create({ model, input: `Hello ${mk}`, instructions: "Be brief.", store: false });
  assert.equal(r.status, "completed");
  assert.ok(r.output_text.length > 0, "the SDK's output_text has the answer");
  assert.ok(r.id.startsWith("resp_"));
  const o = await observer.until({ marker: mk }, (o) => o.emulator.user_query === 1);
  assert.equal(o.emulator.user_query, 1, "one upstream query");
});

test("openai-node responses stream", opts, async () => {
  const mk = marker();
  const stream = openai.responses.stream({ model, input: `Stream please ${mk}` });
  const types = [];
  let text = "";
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === "response.output_text.delta") text += ev.delta;
  }
  const final = await stream.finalResponse();
  assert.equal(types[0], "response.created");
  assert.equal(types.at(-1), "response.completed", "completed only after the proven end");
  assert.equal(final.status, "completed");
  assert.equal(final.output_text, text, "the deltas add up to the final text");
});

test("openai-node responses tool loop", opts, async () => {
  const mk = marker();
  const input = [{ role: "user", content: `weather and time please #loop=2 ${mk}` }];
  const tools = [weather, clock];
  let rounds = 0;
  for (;;) {
    const r = await openai.responses.create({ model, input, tools, store: false });
    assert.equal(r.status, "completed");
    const calls = r.output.filter((it) => it.type === "function_call");
    if (calls.length === 0) {
      assert.equal(rounds, 2, "two rounds of tools, then the answer");
      assert.match(r.output_text, /sunny/);
      break;
    }
    rounds++;
    for (const c of calls) {
      assert.match(c.call_id, /^call_pmn_/);
      JSON.parse(c.arguments);
    }
    // The echo as a client keeps it: the output items themselves, then the results.
    input.push(...r.output);
    for (const c of calls) input.push({ type: "function_call_output", call_id: c.call_id, output: `sunny for ${c.name} ${mk}` });
  }
  const o = await observer.until({ marker: mk }, (o) => o.emulator.tool_response === 2);
  assert.equal(o.emulator.user_query, 1);
  assert.equal(o.emulator.tool_response, 2, "one TOOL_RESPONSE per round");
});

test("openai-node responses streamed tool call", opts, async () => {
  const mk = marker();
  const stream = openai.responses.stream({ model, input: `weather please ${mk}`, tools: [weather], parallel_tool_calls: false });
  let args = "";
  for await (const ev of stream) if (ev.type === "response.function_call_arguments.delta") args += ev.delta;
  const final = await stream.finalResponse();
  const calls = final.output.filter((it) => it.type === "function_call");
  assert.equal(calls.length, 1);
  assert.equal(calls[0].arguments, args, "the argument deltas add up to the call's arguments");
  assert.match(calls[0].call_id, /^call_pmn_/);
});

test("openai-node responses failure mid-stream", opts, async () => {
  const stream = openai.responses.stream({ model, input: `hi #scenario=failure_after_text ${marker()}` });
  const types = [];
  let failed;
  try {
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === "response.failed") failed = ev.response;
    }
    await stream.finalResponse();
  } catch {
    // The SDK may throw at the end of a stream without response.completed.
  }
  assert.ok(!types.includes("response.completed"), "a broken upstream never yields response.completed");
  assert.equal(types.at(-1), "response.failed");
  assert.equal(failed.status, "failed");
  assert.ok(failed.error.code, "with the stable code");
});

test("openai-node responses previous_response_id refused", opts, async () => {
  await assert.rejects(
    openai.responses.create({ model, input: "hi", previous_response_id: "resp_x" }),
    (err) => err.status === 400 && err.code === "unsupported_parameter",
  );
});
