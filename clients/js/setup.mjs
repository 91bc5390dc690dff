// setup.mjs completes the install of the pinned 9router package, which is
// installed with scripts disabled (npm ci --ignore-scripts): 9router 0.5.69
// bundles sql.js without dist/sql-wasm.wasm, so the file is copied from the
// same sql.js version installed from npm. Safe to run more than once.
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** ensureSqlWasm copies sql-wasm.wasm into 9router's bundled sql.js when it is missing. */
export function ensureSqlWasm(root = here) {
  const bundled = join(root, "node_modules", "9router", "app", "node_modules", "sql.js");
  const fromNpm = join(root, "node_modules", "sql.js");
  for (const dir of [bundled, fromNpm]) {
    if (!existsSync(join(dir, "package.json"))) {
      throw new Error(`setup: ${dir} is missing; run "npm ci --ignore-scripts" in ${root}`);
    }
  }
  const version = (dir) => JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).version;
  if (version(bundled) !== version(fromNpm)) {
    throw new Error(`setup: 9router bundles sql.js ${version(bundled)} but package.json pins sql.js ${version(fromNpm)}`);
  }
  const target = join(bundled, "dist", "sql-wasm.wasm");
  if (!existsSync(target)) {
    copyFileSync(join(fromNpm, "dist", "sql-wasm.wasm"), target);
  }
  return target;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(`setup: ${ensureSqlWasm()}`);
}
