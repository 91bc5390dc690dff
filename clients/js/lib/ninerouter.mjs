// ninerouter.mjs runs the pinned 9router's packaged Next.js server (the only
// place its request executor lives) on loopback, with a temporary DATA_DIR and
// HOME, its background jobs off, and configures it through its own control API
// the way its dashboard does: password login, one OpenAI-compatible provider
// node per upstream (base URL ending in /v1), a connection holding the
// upstream key, and a client API key.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { ensureSqlWasm } from "../setup.mjs";
import { witnessProxyEnv } from "./harness.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const appDir = join(root, "node_modules", "9router", "app");

/** freePort asks the kernel for a free loopback port. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * startNineRouter starts 9router and configures one provider node per entry of
 * upstreams ({prefix, baseURL, apiKey}). It returns {baseURL, clientKey, stop,
 * output}; client model names are "<prefix>/<model>".
 */
export async function startNineRouter({ upstreams }) {
  ensureSqlWasm(root);
  const dir = mkdtempSync(join(tmpdir(), "pmgate-9router-"));
  const port = await freePort();
  const password = randomBytes(12).toString("hex");
  const env = {
    PATH: process.env.PATH,
    NODE_ENV: "production",
    HOSTNAME: "127.0.0.1",
    PORT: String(port),
    DATA_DIR: join(dir, "data"),
    HOME: join(dir, "home"),
    XDG_CONFIG_HOME: join(dir, "home", ".config"),
    INITIAL_PASSWORD: password,
    // Background jobs off: OAuth token refresh and the model catalog download.
    DISABLE_BACKGROUND_TOKEN_REFRESH: "1",
    MODEL_CATALOG_SYNC: "off",
    NEXT_TELEMETRY_DISABLED: "1",
    // Loopback only: no proxy may be picked up from the caller's environment,
    // except the suite's refusing witness (which records what 9router tries).
    NO_PROXY: "127.0.0.1,localhost,::1",
    ...witnessProxyEnv(),
  };
  let output = "";
  const child = spawn(process.execPath, [join(appDir, "custom-server.js")], {
    cwd: appDir,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.on("data", (b) => (output += b));
  child.stderr.on("data", (b) => (output += b));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    // SIGKILL on purpose: 9router's SIGINT/SIGTERM/exit handlers rewrite
    // /etc/hosts (its DNS-override cleanup); a test must never touch it.
    process.off("exit", killOnExit);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const origin = `http://127.0.0.1:${port}`;
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`9router exited with ${child.exitCode}`);
      try {
        const r = await fetch(`${origin}/api/health`);
        if (r.ok) break;
      } catch {
        /* not listening yet */
      }
      if (Date.now() > deadline) throw new Error("9router did not become healthy in 30s");
      await sleep(100);
    }
    let cookie = "";
    const api = async (method, path, body) => {
      const r = await fetch(origin + path, {
        method,
        headers: { "content-type": "application/json", ...(cookie ? { cookie } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await r.text();
      if (!r.ok) throw new Error(`9router ${method} ${path}: ${r.status} ${text}`);
      const setCookie = r.headers.get("set-cookie");
      if (setCookie) cookie = setCookie.split(";")[0];
      return JSON.parse(text);
    };
    await api("POST", "/api/auth/login", { password });
    if (!cookie.startsWith("auth_token=")) throw new Error("9router login set no auth_token cookie");
    for (const u of upstreams) {
      const { node } = await api("POST", "/api/provider-nodes", {
        type: "openai-compatible",
        apiType: "chat",
        name: u.prefix,
        prefix: u.prefix,
        baseUrl: u.baseURL,
      });
      await api("POST", "/api/providers", { provider: node.id, name: u.prefix, apiKey: u.apiKey });
    }
    const { key } = await api("POST", "/api/keys", { name: "pmgate-conformance" });
    return { baseURL: `${origin}/v1`, origin, clientKey: key, stop, output: () => output };
  } catch (e) {
    await stop();
    e.message += `\n--- 9router output ---\n${output}`;
    throw e;
  }
}
