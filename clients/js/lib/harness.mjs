// harness.mjs: the environment the Go test hands to the Node suites, the
// observer client, and the streaming rules as the client sees them.
import { randomBytes } from "node:crypto";

/** env reads the suite's configuration (set by cmd/gateway TestClients). */
export function env() {
  const need = (k) => {
    const v = process.env[k];
    if (!v) throw new Error(`${k} is not set: run these suites through \`make test-clients\` (go test -run TestClients ./cmd/gateway)`);
    return v;
  };
  return {
    strategy: need("PMGATE_STRATEGY"),
    baseURL: need("PMGATE_BASE_URL"),
    apiKey: need("PMGATE_API_KEY"),
    model: need("PMGATE_MODEL"),
    observerURL: need("PMGATE_OBSERVER_URL"),
    tapURL: need("PMGATE_TAP_URL"),
    // The second gateway, with the service's query limit raised (agents with
    // many tools); through its observer's recording proxy.
    wideObserverURL: need("PMGATE_WIDE_OBSERVER_URL"),
    wideTapURL: need("PMGATE_WIDE_TAP_URL"),
    wideQueryChars: Number(need("PMGATE_WIDE_QUERY_CHARS")),
  };
}

/**
 * witnessProxyEnv is the proxy environment for a child process: every proxy
 * variable points at the suite's refusing witness (set by TestClients), and
 * loopback stays direct. Empty when no witness is running.
 */
export function witnessProxyEnv() {
  const url = process.env.PMGATE_WITNESS_URL;
  if (!url) return {};
  const noProxy = "127.0.0.1,localhost,::1";
  return {
    HTTPS_PROXY: url, HTTP_PROXY: url, ALL_PROXY: url, https_proxy: url, http_proxy: url, all_proxy: url,
    NO_PROXY: noProxy, no_proxy: noProxy,
  };
}

/** note sends a measurement of a scenario to the suite's report (a no-op without a witness). */
export async function note(scenario, text) {
  const url = process.env.PMGATE_WITNESS_URL;
  if (!url) return;
  await fetch(`${url}/_note`, { method: "POST", body: JSON.stringify({ scenario, text }) });
}

/** marker returns a fresh token that ties a scenario's requests together. */
export const marker = () => `mk-${randomBytes(6).toString("hex")}`;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Observer asks the Go test what the emulator received and what the gateway sent. */
export class Observer {
  constructor(url) {
    this.url = url;
  }

  /**
   * get returns {exchanges, exchange_seq, emulator, emulator_totals, queries,
   * gateway, upstream_cancelled, conversations, conversation_seq} for a
   * marker; exSince keeps the exchanges from that sequence number on,
   * convSince the gateway's conversation decisions from that number on.
   */
  async get({ marker = "", requestId = "", exSince = 0, convSince = 0 } = {}) {
    const q = new URLSearchParams({ marker, request_id: requestId, ex_since: String(exSince), conv_since: String(convSince) });
    const r = await fetch(`${this.url}/_observe?${q}`);
    if (!r.ok) throw new Error(`observer: ${r.status}`);
    return r.json();
  }

  /**
   * until polls get() until pred(snapshot) holds (or the timeout passes) and
   * returns the last snapshot; exchanges still being proxied are waited for.
   */
  async until(query, pred = () => true, timeoutMs = 3000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const o = await this.get(query);
      if ((o.exchanges.every((e) => e.finished) && pred(o)) || Date.now() > deadline) return o;
      await sleep(20);
    }
  }
}

/**
 * checkChunks applies the streaming rules of docs/API.md to the chunks a client
 * yielded. strictUsage also checks the usage chunk (a client that talks to
 * the gateway directly); a router may rewrite usage.
 */
export function checkChunks(chunks, { includeUsage = false, strictUsage = true } = {}) {
  const r = { content: "", toolCalls: [], finish: [], usageChunks: 0, violations: [] };
  const bad = (m) => r.violations.push(m);
  const ids = new Set();
  const created = new Set();
  let roles = 0;
  let choiceChunks = 0;
  let lastFinish = -1;
  let lastUsage = -1;
  const byIndex = new Map();
  chunks.forEach((ch, i) => {
    ids.add(ch.id);
    created.add(ch.created);
    if ("error" in ch) bad(`an error key on chunk ${i}`);
    if (!Array.isArray(ch.choices)) return bad(`chunk ${i} has no choices`);
    if (ch.choices.length === 0) {
      r.usageChunks++;
      lastUsage = i;
      if (!ch.usage) bad(`chunk ${i} has neither choices nor usage`);
      return;
    }
    if (strictUsage && ch.usage != null) bad(`usage on choice chunk ${i}`);
    choiceChunks++;
    const c = ch.choices[0];
    const d = c.delta ?? {};
    if (d.role !== undefined) {
      roles++;
      if (choiceChunks !== 1) bad(`a role delta on choice chunk ${choiceChunks}`);
    }
    if (typeof d.content === "string") r.content += d.content;
    for (const tc of d.tool_calls ?? []) {
      if (typeof tc.index !== "number") {
        bad(`a tool call delta without index on chunk ${i}`);
        continue;
      }
      let call = byIndex.get(tc.index);
      if (!call) {
        if (!tc.id || !tc.type || !tc.function?.name) bad(`the first delta of tool call ${tc.index} lacks id, type or name`);
        call = { index: tc.index, id: tc.id ?? "", name: tc.function?.name ?? "", arguments: "" };
        byIndex.set(tc.index, call);
        r.toolCalls.push(call);
      } else if (tc.id !== undefined || tc.type !== undefined || tc.function?.name !== undefined) {
        bad(`id, type or name repeated on a later delta of tool call ${tc.index}`);
      }
      if (typeof tc.function?.arguments === "string") call.arguments += tc.function.arguments;
    }
    if (c.finish_reason != null) {
      r.finish.push(c.finish_reason);
      lastFinish = choiceChunks;
    }
  });
  if (ids.size !== 1 || created.size !== 1) bad(`${ids.size} chunk ids and ${created.size} created values`);
  if (choiceChunks > 0 && roles !== 1) bad(`${roles} role deltas`);
  if (r.finish.length > 1 || (r.finish.length === 1 && lastFinish !== choiceChunks)) bad(`finish reasons ${r.finish} not only on the last choice chunk`);
  if (strictUsage) {
    if (includeUsage && (r.usageChunks !== 1 || lastUsage !== chunks.length - 1)) bad(`${r.usageChunks} usage chunks, the last at ${lastUsage} of ${chunks.length}`);
    if (!includeUsage && r.usageChunks !== 0) bad("a usage chunk without include_usage");
  }
  return r;
}

const cityParameters = {
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
};

/** The two tools every scenario offers (the emulator fills arguments from the schema). */
export const weatherTool = { type: "function", function: { name: "get_weather", description: "Weather for a city", parameters: cityParameters } };
export const timeTool = { type: "function", function: { name: "get_time", description: "Time in a city", parameters: cityParameters } };

/** runnable turns a tool into the openai SDK's runTools form. */
export function runnable(tool, impl) {
  return { type: "function", function: { ...tool.function, parse: JSON.parse, function: impl } };
}
