// The official SDKs' own retries (docs/USAGE.md, "Retries never spend
// twice"): each client times out after 1 s on a question the emulator
// answers after PMGATE_RETRY_DELAY_MS (#delay_ms), and retries by itself
// (maxRetries left at the SDK's default, 2) without an idempotency key, each
// retry marked X-Stainless-Retry-Count. Every question must be answered; the
// Go test (cmd/gateway retry_e2e_test.go) counts the emulator's dispatches:
// one per question.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import Anthropic from "@anthropic-ai/sdk";

const origin = process.env.PMGATE_ORIGIN;
const apiKey = process.env.PMGATE_API_KEY;
const model = process.env.PMGATE_MODEL;
const delay = process.env.PMGATE_RETRY_DELAY_MS ?? "2500";
const tag = process.env.PMGATE_RETRY_TAG ?? "";
const question = (name) => `retry ${name} ${tag} #delay_ms=${delay}`;

const openai = new OpenAI({ baseURL: `${origin}/v1`, apiKey, timeout: 1000 });
const anthropic = new Anthropic({ baseURL: origin, apiKey, timeout: 1000 });

test("retry openai-node JSON", async () => {
  const r = await openai.chat.completions.create({ model, messages: [{ role: "user", content: question("openai-json") }] });
  assert.equal(r.choices[0].finish_reason, "stop");
  assert.ok(r.choices[0].message.content.length > 0);
});

test("retry openai-node stream", async () => {
  const s = await openai.chat.completions.create({ model, stream: true, messages: [{ role: "user", content: question("openai-stream") }] });
  let text = "", finish = null;
  for await (const c of s) {
    text += c.choices[0]?.delta?.content ?? "";
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(finish, "stop");
  assert.ok(text.length > 0);
});

test("retry anthropic-node JSON", async () => {
  const m = await anthropic.messages.create({ model, max_tokens: 256, messages: [{ role: "user", content: question("anthropic-json") }] });
  assert.equal(m.stop_reason, "end_turn");
  assert.ok(m.content[0].text.length > 0);
});

test("retry anthropic-node stream", async () => {
  const m = await anthropic.messages.stream({ model, max_tokens: 256, messages: [{ role: "user", content: question("anthropic-stream") }] }).finalMessage();
  assert.equal(m.stop_reason, "end_turn");
  assert.ok(m.content[0].text.length > 0);
});
