// opencode.mjs: running the pinned opencode binary headless in a private home
// (shared by opencode.test.mjs and opencode-sessions.test.mjs).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { witnessProxyEnv } from "./harness.mjs";
import { nativeBinary } from "./agents.mjs";

export const opencodeBinary = () => nativeBinary("opencode-linux-x64", "bin", "opencode");

/** opencodeEnv is the environment of every opencode process of one home. */
export function opencodeEnv(home) {
  const xdg = (d) => join(home.dir, d);
  return {
    HOME: home.dir,
    XDG_CONFIG_HOME: xdg("config"),
    XDG_DATA_HOME: xdg("data"),
    XDG_CACHE_HOME: xdg("cache"),
    XDG_STATE_HOME: xdg("state"),
    OPENCODE_DISABLE_AUTOUPDATE: "1",
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
    OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    OPENCODE_DISABLE_SHARE: "1",
  };
}

/**
 * startServer runs `opencode serve --pure --port 0` in a home (its config
 * already written) and resolves with its URL and a stop function: `opencode
 * run --attach URL` then skips opencode's start-up. extraEnv reaches the
 * server's tools (PATH first on the PATH).
 */
export async function startServer(home, { path = "", extraEnv = {} } = {}) {
  const PATH = path ? `${path}:${process.env.PATH}` : process.env.PATH;
  const child = spawn(opencodeBinary(), ["serve", "--pure", "--port", "0"], {
    cwd: home.work, env: { PATH, ...opencodeEnv(home), ...extraEnv, ...witnessProxyEnv() }, stdio: ["ignore", "pipe", "pipe"], detached: true,
  });
  const stop = () => { try { process.kill(-child.pid, "SIGKILL"); } catch { /* gone */ } };
  process.once("exit", stop);
  let out = "";
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`opencode serve printed no URL: ${out}`)), 60_000);
    const look = (b) => {
      out += b;
      const m = out.match(/http:\/\/127\.0\.0\.1:\d+/);
      if (m) { clearTimeout(timer); resolve(m[0]); }
    };
    child.stdout.on("data", look);
    child.stderr.on("data", look);
    child.once("close", () => reject(new Error(`opencode serve ended: ${out}`)));
  });
  return { url, stop };
}
