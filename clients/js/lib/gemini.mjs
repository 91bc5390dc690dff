// gemini.mjs: running the pinned gemini-cli headless in a private home, at a
// gateway's Gemini API (shared by gemini-cli.test.mjs). What it sends and how
// it treats each kind of failure: docs/CLIENTS.md, "Gemini CLI".
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { jsonLines, root, runAgent, tempHome } from "./agents.mjs";

/** geminiScript is gemini-cli's entry point (a Node script; no postinstall needed). */
export function geminiScript() {
  const p = join(root, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js");
  if (!existsSync(p)) throw new Error(`${p} is missing: run "npm ci --ignore-scripts" in clients/js`);
  return p;
}

/** The recipe of docs/CLIENTS.md: a short system prompt and the everyday coding tools. */
export const recipePrompt = fileURLToPath(new URL("../../../examples/gemini-cli/system.md", import.meta.url));
export const recipeTools = ["run_shell_command", "read_file", "write_file", "replace", "list_directory", "glob", "grep_search"];

/**
 * settings is the settings.json of a run: the key goes in x-goog-api-key
 * (gemini-cli 0.61.0 refuses the "gateway" auth type that
 * GOOGLE_GEMINI_BASE_URL selects by itself in headless mode, so the Gemini API
 * key type is named), nothing phones out (usage statistics, telemetry, update
 * checks), and maxAttempts bounds its retries (1: none).
 */
export function settings({ tools, maxAttempts, extra = {} } = {}) {
  return {
    security: { auth: { selectedType: "gemini-api-key" } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false, ...(maxAttempts ? { maxAttempts } : {}) },
    ...(tools ? { tools: { core: tools } } : {}),
    ...extra,
  };
}

/**
 * GeminiHome is one gemini-cli home: a work directory, settings.json, and a
 * bin directory first on PATH with the "value-command" the emulator's
 * run_shell_command calls run. It prints the marker, a call counter and, on
 * the call numbered in "once_at", the line in "once" (an emulator directive
 * that then rides in the tool result), then filler up to "size" bytes.
 */
export class GeminiHome {
  constructor(m, conf = {}) {
    this.home = tempHome("gemini");
    this.marker = m;
    this.bin = join(this.home.dir, "bin");
    this.tmp = join(this.home.dir, "tmp");
    mkdirSync(this.bin);
    mkdirSync(this.tmp);
    mkdirSync(join(this.home.dir, ".gemini"));
    this.configure(conf);
    const script = `#!/bin/sh
d="${this.bin}"
n=$(cat "$d/size")
c=$(( $(cat "$d/count" 2>/dev/null || echo 0) + 1 ))
echo "$c" > "$d/count"
once=""
if [ -f "$d/once_at" ] && [ "$(cat "$d/once_at")" = "$c" ]; then once=$(cat "$d/once"); rm -f "$d/once_at" "$d/once"; fi
printf 'value-command output %s call %s %s\\n' "${m}" "$c" "$once"
yes 'lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod' | head -c "$n"
echo
`;
    writeFileSync(join(this.bin, "value-command"), script);
    chmodSync(join(this.bin, "value-command"), 0o755);
    this.size(200);
  }

  /** configure writes settings.json (see settings). */
  configure(conf) {
    writeFileSync(join(this.home.dir, ".gemini", "settings.json"), JSON.stringify(settings(conf), null, 2));
  }

  size(n) {
    writeFileSync(join(this.bin, "size"), String(n));
  }

  /** onceAt makes the n-th call from now (1: the next) print line, once. */
  onceAt(n, line) {
    writeFileSync(join(this.bin, "once"), line);
    writeFileSync(join(this.bin, "once_at"), String(this.calls() + n));
  }

  calls() {
    try {
      return Number(readFileSync(join(this.bin, "count"), "utf8"));
    } catch {
      return 0;
    }
  }

  remove() {
    this.home.remove();
  }
}

/**
 * runGemini runs one headless turn (`gemini -p PROMPT --output-format
 * stream-json -m MODEL --yolo`, `--resume latest` for a later turn of the
 * home's session) against origin (a gateway's origin: the SDK appends
 * /v1beta/...). It resolves with {run, events, result, text, toolUses,
 * toolResults}; result is the last "result" event (status success/error).
 */
export async function runGemini({ home, origin, apiKey, model, prompt, recipe = true, resume = false, yolo = true, timeoutMs = 120_000, watch, extraEnv = {} }) {
  const args = [geminiScript(), "-p", prompt, "--output-format", "stream-json", "-m", model, ...(yolo ? ["--yolo"] : []), ...(resume ? ["--resume", "latest"] : [])];
  const run = await runAgent({
    command: process.execPath,
    args,
    cwd: home.home.work,
    timeoutMs,
    watch,
    env: {
      HOME: home.home.dir,
      PATH: `${home.bin}:${process.env.PATH}`,
      // Its error reports (gemini-client-error-*.json) go to the private home.
      TMPDIR: home.tmp,
      TERM: "dumb",
      NO_COLOR: "1",
      GOOGLE_GEMINI_BASE_URL: origin,
      GEMINI_API_KEY: apiKey,
      GEMINI_CLI_TRUST_WORKSPACE: "true",
      // No second Node process with a larger heap (it would only start slower).
      GEMINI_CLI_NO_RELAUNCH: "true",
      GIT_CEILING_DIRECTORIES: home.home.dir,
      ...(recipe ? { GEMINI_SYSTEM_MD: recipePrompt } : {}),
      ...extraEnv,
    },
  });
  const events = jsonLines(run.stdout);
  const result = events.filter((ev) => ev.type === "result").at(-1);
  const text = events.filter((ev) => ev.type === "message" && ev.role === "assistant").map((ev) => ev.content ?? "").join("");
  const toolUses = events.filter((ev) => ev.type === "tool_use");
  const toolResults = events.filter((ev) => ev.type === "tool_result");
  return { run, events, result, text, toolUses, toolResults };
}

/** originOf is a gateway's origin from the suite's /v1 base URL. */
export const originOf = (base) => base.replace(/\/v1\/?$/, "");
