// The official Anthropic TypeScript SDK (@anthropic-ai/sdk, pinned) against
// the gateway's /v1/messages, through the observer's recording proxy, which
// checks every answer with the strict grammar checker. Its streaming
// accumulator (messages.stream().finalMessage()) is the oracle; the first test
// shows what it rejects, so that a pass means something.
import { test } from "node:test";
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { env, marker, Observer } from "./lib/harness.mjs";
import { Window } from "./lib/agents.mjs";

const e = env();
const observer = new Observer(e.observerURL);
const client = new Anthropic({ baseURL: e.observerURL, apiKey: e.apiKey, maxRetries: 0 });
const weather = {
  name: "get_weather",
  description: "Weather for a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const params = (text, extra = {}) => ({ model: e.model, max_tokens: 1024, messages: [{ role: "user", content: text }], ...extra });

/** checked runs fn in an observer window and asserts every Messages answer in it passed the grammar checker. */
async function checked(fn) {
  const win = await Window.open(observer);
  const out = await fn();
  const seen = await win.close("");
  const messages = seen.exchanges.filter((x) => x.api === "messages");
  assert.ok(messages.length >= 1, "no Messages exchange was observed");
  for (const x of messages) assert.equal(x.violation ?? "", "", `the gateway's answer broke the grammar: ${JSON.stringify(x)}`);
  return { out, seen, messages };
}

test("anthropic-node the pinned accumulator rejects broken streams", async () => {
  const f = (d) => `event: ${JSON.parse(d).type}\ndata: ${d}\n\n`;
  const start = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}`;
  const text = [`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
    `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`, `{"type":"content_block_stop","index":0}`];
  const delta = `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`;
  const stop = `{"type":"message_stop"}`;
  const run = (frames) => {
    const body = frames.map(f).join("");
    const fake = new Anthropic({ apiKey: "k", baseURL: "http://127.0.0.1:9", maxRetries: 0,
      fetch: async () => new Response(body, { headers: { "content-type": "text/event-stream" } }) });
    return fake.messages.stream(params("x")).finalMessage();
  };
  assert.equal((await run([start, ...text, delta, stop])).content[0].text, "Hi");
  await assert.rejects(run([start, start, ...text, delta, stop]), /Unexpected event order/);
  await assert.rejects(run([start, ...text, `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null}}`, stop]), /output_tokens/);
  await assert.rejects(run([start, ...text, delta]), /stream ended without producing a Message/);
  await assert.rejects(run([start, `{"type":"error","error":{"type":"api_error","message":"boom"}}`]), Anthropic.APIError);
  // 1.10.0 drops events before message_start instead of throwing; the Go
  // grammar checker (internal/anthropicsse) is the one that refuses them.
});

test("anthropic-node streamed text through finalMessage", async () => {
  const m = marker();
  const { out: msg } = await checked(() => client.messages.stream(params(`Stream please ${m}`)).finalMessage());
  assert.ok(msg.id.startsWith("msg_"));
  assert.equal(msg.stop_reason, "end_turn");
  assert.match(msg.content[0].text, new RegExp(`You said: Stream please ${m}`));
  assert.ok(msg.usage.input_tokens > 0 && msg.usage.output_tokens > 0, JSON.stringify(msg.usage));
});

test("anthropic-node non-streamed messages.create", async () => {
  const m = marker();
  const { out: msg } = await checked(() => client.messages.create(params(`JSON please ${m}`)));
  assert.equal(msg.type, "message");
  assert.equal(msg.stop_reason, "end_turn");
  assert.match(msg.content[0].text, new RegExp(m));
});

test("anthropic-node tool round trip, streamed, one dispatch per turn", async () => {
  const m = marker();
  const { out, seen } = await checked(async () => {
    const first = params(`weather in Oslo ${m}`, { tools: [weather] });
    const msg = await client.messages.stream(first).finalMessage();
    assert.equal(msg.stop_reason, "tool_use", JSON.stringify(msg));
    const uses = msg.content.filter((c) => c.type === "tool_use");
    assert.equal(uses.length, 1);
    assert.equal(uses[0].name, "get_weather");
    assert.equal(typeof uses[0].input, "object");
    const next = { ...first, messages: [...first.messages, { role: "assistant", content: msg.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: uses[0].id, content: `rain ${m}` }] }] };
    return client.messages.stream(next).finalMessage();
  });
  assert.equal(out.stop_reason, "end_turn");
  assert.match(out.content[0].text, /get_weather=rain/);
  assert.equal(seen.userQueries, 1);
  assert.equal(seen.toolResponses, 1, "one TOOL_RESPONSE dispatch, counted at the emulator");
});

test("anthropic-node a mid-stream upstream failure is an APIError, never a message", async () => {
  const m = marker();
  const { messages } = await checked(() =>
    assert.rejects(client.messages.stream(params(`#scenario=failure_after_text ${m}`)).finalMessage(), (err) => {
      assert.ok(err instanceof Anthropic.APIError, String(err));
      assert.match(String(err.message), /api_error|upstream/);
      return true;
    }),
  );
  for (const x of messages) assert.equal(x.outcome, "failed", JSON.stringify(x));
});

test("anthropic-node a fail-closed JSON answer is a 500 api_error that the SDK does not retry", async () => {
  const m = marker();
  const retrying = new Anthropic({ baseURL: e.observerURL, apiKey: e.apiKey, maxRetries: 2 });
  const { seen } = await checked(() =>
    assert.rejects(retrying.messages.create(params(`#scenario=failure_after_text ${m}`)), (err) => {
      assert.ok(err instanceof Anthropic.InternalServerError, `${err?.constructor?.name}: ${err}`);
      assert.equal(err.status, 500);
      assert.equal(err.error?.error?.type, "api_error");
      assert.equal(err.error?.error?.code, "upstream_failure");
      return true;
    }),
  );
  assert.equal(seen.userQueries, 1, "x-should-retry: false kept the SDK from retrying");
});

test("anthropic-node a wrong key is an AuthenticationError", async () => {
  const wrong = new Anthropic({ baseURL: e.observerURL, apiKey: "sk-wrong-0123456789abcdef", maxRetries: 2 });
  const { seen } = await checked(() => assert.rejects(wrong.messages.create(params("hi")), Anthropic.AuthenticationError));
  assert.equal(seen.userQueries + seen.toolResponses, 0);
});

test("anthropic-node an unknown model is refused, never substituted", async () => {
  const { seen } = await checked(() =>
    assert.rejects(client.messages.create({ ...params("hi"), model: "claude-no-such-model" }), (err) => {
      assert.ok(err instanceof Anthropic.APIError && err.status >= 400 && err.status < 500, String(err));
      return true;
    }),
  );
  assert.equal(seen.userQueries, 0);
});
