// agents.mjs runs a real coding agent (a native binary from node_modules) as a
// headless child process and judges a scenario where it matters: at the
// emulator (what reached the upstream, how often) and at the gateway (every
// answer it gave, through the observer's recording proxy).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { sleep, witnessProxyEnv } from "./harness.mjs";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * nativeBinary returns the path of an agent's native executable inside
 * node_modules. The npm wrappers install it with a postinstall script, which
 * npm ci --ignore-scripts skips; the binary itself needs no Node.
 */
export function nativeBinary(...parts) {
  const p = join(root, "node_modules", ...parts);
  if (!existsSync(p)) throw new Error(`${p} is missing: run "npm ci --ignore-scripts" in clients/js (on linux-x64)`);
  return p;
}

/** tempHome makes a private home with a work directory; remove() deletes it. */
export function tempHome(prefix) {
  const dir = mkdtempSync(join(tmpdir(), `pmgate-${prefix}-`));
  const work = join(dir, "work");
  mkdirSync(work);
  return { dir, work, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * runAgent runs command in its own process group with a minimal environment
 * (PATH, the given variables, the refusing proxy). Every 300 ms watch() may
 * return a reason to stop early (the gateway refused a request: the agent
 * would only retry); the group is then killed. It resolves with {code,
 * signal, stdout, stderr, reason, ms}.
 */
export function runAgent({ command, args, env, cwd, timeoutMs, watch = async () => "" }) {
  const t0 = performance.now();
  const child = spawn(command, args, {
    cwd,
    env: { PATH: process.env.PATH, ...env, ...witnessProxyEnv() },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (b) => (stdout += b));
  child.stderr.on("data", (b) => (stderr += b));
  let reason = "";
  const kill = (why) => {
    if (!reason) reason = why;
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  };
  const onExit = () => kill("the suite ended");
  process.once("exit", onExit);
  const timer = setTimeout(() => kill(`timed out after ${timeoutMs} ms`), timeoutMs);
  let running = true;
  const watching = (async () => {
    while (running) {
      await sleep(300);
      if (!running) break;
      const why = await watch().catch((e) => `watch: ${e.message}`);
      if (why && running) kill(why);
    }
  })();
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", async (code, signal) => {
      running = false;
      clearTimeout(timer);
      process.off("exit", onExit);
      await watching;
      // The agent may leave children (a shell of its Bash tool): never let them outlive it.
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        /* none left */
      }
      resolve({ code, signal, stdout, stderr, reason, ms: Math.round(performance.now() - t0) });
    });
  });
}

/** jsonLines parses the JSON objects of a line-delimited output, skipping anything else. */
export function jsonLines(text) {
  const out = [];
  for (const line of text.split("\n")) {
    const l = line.trim();
    if (!l.startsWith("{")) continue;
    try {
      out.push(JSON.parse(l));
    } catch {
      /* not JSON */
    }
  }
  return out;
}

/** describeExchange is one gateway answer as the report shows a refusal. */
export function describeExchange(e) {
  const parts = [`HTTP ${e.status}`];
  if (e.error_code) parts.push(`code=${e.error_code}`);
  if (e.error_param) parts.push(`param=${e.error_param}`);
  if (e.error_message) parts.push(`message=${JSON.stringify(e.error_message.slice(0, 300))}`);
  return parts.join(" ");
}

/** refused lists the exchanges in which the gateway did not answer a success. */
export const refused = (exchanges) => exchanges.filter((e) => e.finished && (e.status !== 200 || e.error_code));

/**
 * Window is one scenario's view of a gateway: the exchanges proxied since it
 * opened, and the emulator's counts since then (counted at the emulator, so a
 * request without the scenario's marker, such as a tool continuation, counts).
 */
export class Window {
  static async open(observer) {
    const o = await observer.get();
    const w = new Window();
    w.observer = observer;
    w.exSince = o.exchange_seq;
    w.convSince = o.conversation_seq;
    w.totals = o.emulator_totals;
    return w;
  }

  /** refusals is the gateway's non-2xx answers so far, described. */
  async refusals() {
    const o = await this.observer.get({ exSince: this.exSince });
    return refused(o.exchanges).map(describeExchange);
  }

  /** stopOnRefusal is a runAgent watch: the reason to stop once the gateway refused a request. */
  stopOnRefusal = async () => {
    const r = await this.refusals();
    return r.length ? `the gateway refused: ${r.join(" | ")}` : "";
  };

  /**
   * close waits for the proxied exchanges to finish and returns {exchanges,
   * refusals, userQueries, toolResponses, rejected, continued, conversations,
   * queries}; queries are the upstream requests carrying marker (their sizes),
   * conversations the gateway's continued/fresh decisions in the window.
   */
  async close(marker) {
    const o = await this.observer.until({ exSince: this.exSince, convSince: this.convSince }, () => true, 5000);
    const m = marker ? await this.observer.get({ marker }) : { queries: [] };
    const now = o.emulator_totals;
    return {
      exchanges: o.exchanges,
      refusals: refused(o.exchanges).map(describeExchange),
      userQueries: now.user_query - this.totals.user_query,
      toolResponses: now.tool_response - this.totals.tool_response,
      rejected: now.rejected - this.totals.rejected,
      continued: now.continued_user_query - this.totals.continued_user_query,
      conversations: o.conversations,
      queries: m.queries,
    };
  }
}

/** querySizes is a short description of the upstream USER_QUERY sizes. */
export function querySizes(queries) {
  const q = queries.filter((x) => x.chat_type === "USER_QUERY");
  if (q.length === 0) return "no USER_QUERY";
  return q.map((x) => `${x.query_chars} chars, ${x.tools} tools`).join("; ");
}

/** describeConversations is the gateway's continuity decisions, short: "continued (2+1)", "fresh no_anchor". */
export function describeConversations(conversations) {
  if (conversations.length === 0) return "no conversation decision";
  return conversations
    .map((c) => (c.msg === "conversation: continued" ? `continued (${c.history_messages}+${c.new_messages} messages)` : `fresh ${c.reason}${c.row ? ` ${c.row}` : ""}`))
    .join("; ");
}
