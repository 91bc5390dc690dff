// reporter.mjs is a node:test reporter that writes one JSON line per finished
// test ({event, name, nesting, error}); cmd/gateway's TestClients turns each
// line into a Go subtest named after the scenario.
import { inspect } from "node:util";

function describe(err) {
  if (!err) return undefined;
  // node:test wraps the thrown error; the cause is what the test threw.
  const cause = err.cause ?? err;
  return typeof cause === "string" ? cause : inspect(cause, { depth: 6, breakLength: 120 });
}

export default async function* reporter(source) {
  for await (const { type, data } of source) {
    if (type !== "test:pass" && type !== "test:fail") continue;
    if (data.details?.type === "suite") continue;
    let event = type === "test:pass" ? "pass" : "fail";
    if (data.skip !== undefined) event = "skip";
    if (data.todo !== undefined) event = "todo";
    const line = { event, name: data.name, nesting: data.nesting, file: data.file };
    if (event === "fail") line.error = describe(data.details?.error);
    yield `${JSON.stringify(line)}\n`;
  }
}
