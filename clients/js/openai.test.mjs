// The openai npm SDK against the gateway, directly.
import OpenAI from "openai";
import { env, Observer } from "./lib/harness.mjs";
import { defineScenarios } from "./lib/scenarios.mjs";

const e = env();
const sdk = (opts = {}) => new OpenAI({ baseURL: e.baseURL, apiKey: e.apiKey, maxRetries: 0, ...opts });

defineScenarios({
  client: "openai-node",
  routed: false,
  observer: new Observer(e.observerURL),
  sdk,
  model: () => e.model,
  wrongKey: () => ({ openai: sdk({ apiKey: "sk-wrong-0123456789abcdef", maxRetries: 2 }), model: e.model }),
});
