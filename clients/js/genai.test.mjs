// The official Gemini SDK (@google/genai, pinned) against the gateway's Gemini
// API (/v1beta), through the observer's recording proxy, which checks every
// answer (analyzeGemini in cmd/gateway: a proven end is a last chunk with a
// finishReason). The SDK is the oracle for the JSON and stream shapes; the
// first test shows what it rejects on its own and what it does not (a stream
// that just stops), so that the suite's own end check is not left out.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ApiError, GoogleGenAI } from "@google/genai";
import { env, marker, Observer } from "./lib/harness.mjs";
import { Window } from "./lib/agents.mjs";
import { originOf } from "./lib/gemini.mjs";

const e = env();
const observer = new Observer(e.observerURL);
const origin = originOf(e.tapURL);
// gemini-cli's paths (/v1beta); the SDK's own default, /v1, has a test of its own.
const ai = new GoogleGenAI({ apiKey: e.apiKey, httpOptions: { baseUrl: origin, apiVersion: "v1beta" } });
const weather = {
  name: "get_weather",
  description: "Weather for a city",
  parametersJsonSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

/** checked runs fn in an observer window and asserts every Gemini answer in it passed the checker. */
async function checked(fn) {
  const win = await Window.open(observer);
  let out;
  let error;
  try {
    out = await fn();
  } catch (err) {
    error = err;
  }
  const seen = await win.close("");
  const gemini = seen.exchanges.filter((x) => x.api === "gemini");
  assert.ok(gemini.length >= 1, `no Gemini exchange was observed: ${JSON.stringify(seen.exchanges).slice(0, 600)}; error ${error}`);
  for (const x of gemini) assert.deepEqual(x.violations ?? [], [], `the gateway's answer broke the rules: ${JSON.stringify(x)}`);
  return { out, error, seen, gemini };
}

/** drain reads a stream to its end: the chunks, and the error that ended it, if any. */
async function drain(stream) {
  const chunks = [];
  try {
    for await (const c of await stream) chunks.push(c);
  } catch (err) {
    return { chunks, error: err };
  }
  return { chunks };
}

const finishOf = (chunks) => chunks.flatMap((c) => (c.candidates ?? []).map((x) => x.finishReason).filter(Boolean));
const textOf = (chunks) => chunks.map((c) => c.text ?? "").join("");

test("genai-node the pinned SDK: what it rejects in a stream, and what it does not", async () => {
  const data = (o) => `data: ${JSON.stringify(o)}\r\n\r\n`;
  const text = { candidates: [{ content: { role: "model", parts: [{ text: "Hi" }] }, index: 0 }] };
  const stop = { candidates: [{ content: { role: "model", parts: [{ text: "" }] }, finishReason: "STOP", index: 0 }] };
  const err = { error: { code: 502, message: "boom", status: "UNAVAILABLE" } };
  const run = (body) => {
    const fake = new GoogleGenAI({ apiKey: "k", httpOptions: { baseUrl: "http://127.0.0.1:9",
      fetch: async () => new Response(body, { headers: { "content-type": "text/event-stream" } }) } });
    return drain(fake.models.generateContentStream({ model: "m", contents: "x" }));
  };
  const ok = await run(data(text) + data(stop));
  assert.equal(ok.error, undefined);
  assert.deepEqual(finishOf(ok.chunks), ["STOP"]);
  // An error event, or a bare error object, ends the iteration with an ApiError.
  assert.ok((await run(data(text) + data(err))).error instanceof ApiError);
  assert.ok((await run(data(text) + JSON.stringify(err))).error, "a bare error after an event");
  // A stream that just stops is NOT an error to the SDK: only the missing finishReason tells.
  const cut = await run(data(text));
  assert.equal(cut.error, undefined);
  assert.deepEqual(finishOf(cut.chunks), []);
});

test("genai-node generateContent (JSON)", async () => {
  const m = marker();
  const { out: r, error, seen } = await checked(() => ai.models.generateContent({ model: e.model, contents: `Hello ${m}` }));
  assert.equal(error, undefined, String(error));
  assert.match(r.text, new RegExp(`You said: Hello ${m}`));
  assert.equal(r.candidates[0].finishReason, "STOP");
  assert.ok(r.usageMetadata?.totalTokenCount > 0, `usageMetadata ${JSON.stringify(r.usageMetadata)}`);
  assert.equal(seen.userQueries, 1, "one upstream query");
});

test("genai-node generateContentStream", async () => {
  const m = marker();
  const { out, error, gemini, seen } = await checked(() => drain(ai.models.generateContentStream({ model: e.model, contents: `Stream please ${m}` })));
  assert.equal(error ?? out.error, undefined, String(error ?? out.error));
  assert.match(textOf(out.chunks), new RegExp(`You said: Stream please ${m}`));
  assert.deepEqual(finishOf(out.chunks), ["STOP"], "one finishReason");
  assert.ok(out.chunks.at(-1).candidates?.[0]?.finishReason, "the finishReason is on the last chunk");
  assert.ok(out.chunks.some((c) => c.usageMetadata?.totalTokenCount > 0), "usageMetadata");
  assert.equal(gemini[0].done, true);
  assert.equal(seen.userQueries, 1);
});

test("genai-node a function call round trip (ids echoed)", async () => {
  const m = marker();
  const user = { role: "user", parts: [{ text: `Weather in Paris? ${m}` }] };
  const config = { tools: [{ functionDeclarations: [weather] }] };
  const first = await checked(() => ai.models.generateContent({ model: e.model, contents: [user], config }));
  assert.equal(first.error, undefined, String(first.error));
  const calls = first.out.functionCalls ?? [];
  assert.equal(calls.length, 1, JSON.stringify(first.out));
  assert.equal(calls[0].name, "get_weather");
  assert.ok(calls[0].id, "the gateway gives every call an id");
  assert.equal(typeof calls[0].args.city, "string");
  const model = first.out.candidates[0].content;
  const answer = { role: "user", parts: [{ functionResponse: { id: calls[0].id, name: "get_weather", response: { output: `sunny ${m}` } } }] };
  const second = await checked(() => drain(ai.models.generateContentStream({ model: e.model, contents: [user, model, answer], config })));
  assert.equal(second.error ?? second.out.error, undefined, String(second.error ?? second.out.error));
  assert.match(textOf(second.out.chunks), /Tool results received: /);
  assert.match(textOf(second.out.chunks), new RegExp(`sunny ${m}`));
  assert.deepEqual(finishOf(second.out.chunks), ["STOP"]);
  assert.equal(second.seen.toolResponses, 1, "one TOOL_RESPONSE dispatch");
  assert.equal(second.seen.userQueries, 0, "the result continued the group: no new USER_QUERY");
});

// @google/genai 3.1.0 defaults to apiVersion v1: POST /v1/models/{model}:generateContent.
test("genai-node the SDK's default /v1 paths", async () => {
  const m = marker();
  const v1 = new GoogleGenAI({ apiKey: e.apiKey, httpOptions: { baseUrl: origin } });
  const { out: r, error } = await checked(() => v1.models.generateContent({ model: e.model, contents: `Hello ${m}` }));
  assert.equal(error, undefined, String(error));
  assert.match(r.text, new RegExp(`You said: Hello ${m}`));
  const s = await checked(() => drain(v1.models.generateContentStream({ model: e.model, contents: `Stream ${m}` })));
  assert.equal(s.error ?? s.out.error, undefined, String(s.error ?? s.out.error));
  assert.deepEqual(finishOf(s.out.chunks), ["STOP"]);
});

test("genai-node countTokens errs high", async () => {
  const m = marker();
  const text = `Count these words please, all of them. ${m} `.repeat(20);
  const { out, error, seen } = await checked(() => ai.models.countTokens({ model: e.model, contents: text }));
  assert.equal(error, undefined, String(error));
  assert.ok(out.totalTokens >= Math.ceil(text.length / 4), `totalTokens ${out.totalTokens} for ${text.length} chars`);
  assert.equal(seen.userQueries, 0, "nothing went upstream");
});

test("genai-node models list and get", async () => {
  const win = await Window.open(observer);
  const names = [];
  for await (const md of await ai.models.list()) names.push(md.name);
  assert.ok(names.includes(`models/${e.model}`), `models ${JSON.stringify(names)}`);
  const one = await ai.models.get({ model: e.model });
  assert.equal(one.name, `models/${e.model}`);
  await win.close("");
});

test("genai-node a wrong key is refused", async () => {
  const bad = new GoogleGenAI({ apiKey: "wrong-key", httpOptions: { baseUrl: origin, apiVersion: "v1beta" } });
  const { error } = await checked(() => bad.models.generateContent({ model: e.model, contents: `Hello ${marker()}` }));
  assert.ok(error instanceof ApiError, String(error));
  assert.ok([400, 401, 403].includes(error.status), `status ${error.status}`);
});

// Every emulator fault: never a finishReason; the stream ends in an error the
// SDK raises (or a cut the suite's end check catches), the JSON call fails.
const faults = ["ambiguous_eof", "truncated_frame", "failure_after_text", "unknown_event", "model_mismatch", "empty_stream",
  "drop_after_request", "server_error", "json_200", "quota_usage_state", "data_after_done", "loop_approval"];
for (const sc of faults) {
  test(`genai-node fault ${sc}`, async () => {
    const s = await checked(() => drain(ai.models.generateContentStream({ model: e.model, contents: `hi ${marker()} #scenario=${sc}` })));
    const err = s.error ?? s.out.error;
    assert.deepEqual(finishOf(s.out?.chunks ?? []), [], "no finishReason after a failure");
    assert.ok(err, `the SDK raised no error for ${sc}: ${JSON.stringify(s.out?.chunks)}`);
    assert.notEqual(s.gemini.at(-1).done, true);
    const j = await checked(() => ai.models.generateContent({ model: e.model, contents: `hi ${marker()} #scenario=${sc}` }));
    assert.ok(j.error instanceof ApiError, `generateContent: ${String(j.error)} ${JSON.stringify(j.out)}`);
  });
}
