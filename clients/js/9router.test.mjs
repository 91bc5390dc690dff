// 9router (the pinned npm package, its packaged Next.js server) in front of
// the gateway, driven by the openai npm SDK as a user's tool would drive it.
// 9router reaches the gateway through the observer's recording proxy, so every
// scenario also checks what the gateway itself sent and how often.
import { after } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { env, marker, Observer } from "./lib/harness.mjs";
import { startNineRouter } from "./lib/ninerouter.mjs";
import { defineScenarios } from "./lib/scenarios.mjs";

const e = env();
// One provider node per scenario that makes 9router lock its connection
// (it locks a connection's model after a 401 or a 5xx), so that one scenario
// never decides another's outcome. Client model names are "<prefix>/<model>".
const prefixes = { main: "pmgate", streamFail: "pmgate-stream", jsonFail: "pmgate-json", contFail: "pmgate-cont", badKey: "pmgate-badkey" };
const router = await startNineRouter({
  upstreams: Object.entries(prefixes).map(([kind, prefix]) => ({
    prefix,
    baseURL: e.tapURL,
    apiKey: kind === "badKey" ? "sk-not-the-gateway-key-0000" : e.apiKey,
  })),
});
after(() => router.stop());

const observer = new Observer(e.observerURL);
const sdk = (opts = {}) => new OpenAI({ baseURL: router.baseURL, apiKey: router.clientKey, maxRetries: 0, ...opts });
const model = (kind) => `${prefixes[kind]}/${e.model}`;
const gatewayMessage = (error) => String(error?.error?.message ?? error?.message);

defineScenarios({
  client: "9router",
  routed: true,
  observer,
  sdk,
  model,
  wrongKey: () => ({ openai: sdk(), model: model("badKey") }),
  extra: {
    // A mid-stream failure is relayed as the gateway's error event (then
    // 9router's own [DONE]); 9router does not count it against the node.
    async afterStreamFailure({ openai, model }) {
      const c = await openai.chat.completions.create({ model, messages: [{ role: "user", content: "after the failure" }] });
      assert.equal(c.choices[0].finish_reason, "stop", "the node is still usable after a mid-stream failure");
    },
    // The gateway's fail-closed 502 (x-should-retry: false) is retried by
    // 9router 3 times, 3 s apart, then reported as a 503 carrying the
    // gateway's body; the node is then locked and refuses without calling.
    async failClosed({ error, observe, gatewaySent }) {
      assert.ok(error instanceof OpenAI.InternalServerError, `got ${error?.constructor?.name}`);
      assert.equal(error.status, 503);
      assert.ok(gatewayMessage(error).includes("[502]") && gatewayMessage(error).includes("upstream_failure"), gatewayMessage(error));
      gatewaySent(observe, { count: 4, status: 502, error: "upstream_failure" });
      assert.equal(observe.emulator.user_query, 4, "each of 9router's retries was a new upstream query");
      const m = marker();
      await assert.rejects(
        sdk().chat.completions.create({ model: model("jsonFail"), messages: [{ role: "user", content: `locked ${m}` }] }),
        (err) => err.status === 503 && /reset after/.test(gatewayMessage(err)),
      );
      const o = await observer.get({ marker: m });
      assert.equal(o.exchanges.length, 0, "a locked node does not call the gateway");
    },
    // 9router retries the continuation too (the gateway never sends it
    // again), then shows a 503 with the start of the gateway's message; the
    // second attempt meets the locked node.
    async continuationError({ error, attempt }) {
      assert.equal(error.status, 503);
      const msg = gatewayMessage(error);
      if (attempt === 0) assert.ok(msg.includes("[502]") && msg.includes("The tool results may have reached the upstream"), msg);
      else assert.match(msg, /reset after/);
    },
    async failedContinuation({ exchanges }) {
      assert.equal(exchanges.length, 4, "9router sent the continuation 4 times (then it was locked)");
    },
    // The gateway's 401 reaches the SDK as a 503 (9router reports "all
    // accounts unavailable") whose message carries the gateway's error; the
    // node is locked for 2 minutes. 9router's own key check is a real 401.
    async unauthorized({ error, observe, wrong, marker }) {
      assert.ok(error instanceof OpenAI.InternalServerError, `got ${error?.constructor?.name}`);
      assert.equal(error.status, 503);
      const msg = gatewayMessage(error);
      assert.ok(msg.includes("[401]") && msg.includes("invalid_api_key") && msg.includes("authentication_error"), msg);
      assert.equal(observe.exchanges.length, 1, "one request reached the gateway");
      assert.equal(observe.exchanges[0].status, 401);
      assert.equal(observe.exchanges[0].error_code, "invalid_api_key");
      await assert.rejects(wrong.openai.chat.completions.create({ model: wrong.model, messages: [{ role: "user", content: `again ${marker}` }] }), (err) => err.status === 503);
      const o = await observer.get({ marker });
      assert.equal(o.exchanges.length, 1, "the locked node did not call the gateway again");
      const stranger = new OpenAI({ baseURL: router.baseURL, apiKey: "sk-not-a-9router-key", maxRetries: 0 });
      await assert.rejects(stranger.chat.completions.create({ model: model("main"), messages: [{ role: "user", content: "hi" }] }), OpenAI.AuthenticationError);
    },
  },
});
