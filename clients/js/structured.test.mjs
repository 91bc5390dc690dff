// Structured output through every popular library's default path
// (docs/STRUCTURED-OUTPUT.md): the Vercel AI SDK's generateObject and
// streamObject (the openai provider, chat and responses, and the
// openai-compatible provider with json_schema and with json_object), LangChain's
// withStructuredOutput (jsonSchema and jsonMode), the OpenAI Agents SDK with
// an outputType (responses and chat completions), and the openai npm SDK's
// chat.completions.parse and responses.parse. Each must get a typed object
// valid against its zod schema, in one upstream dispatch; the emulator's
// schema-violating answer (#scenario=structured_schema_violation) must surface
// as the gateway's 502 upstream_output_invalid, never as an object.
import { test } from "node:test";
import assert from "node:assert/strict";
import { generateObject, streamObject } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ChatOpenAI } from "@langchain/openai";
import { Agent, run, OpenAIChatCompletionsModel, OpenAIResponsesModel, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";
import { zodResponseFormat, zodTextFormat } from "openai/helpers/zod";
import { z } from "zod";
import { env, marker, note, Observer } from "./lib/harness.mjs";
import { Window } from "./lib/agents.mjs";

const e = env();
const observer = new Observer(e.observerURL);
setTracingDisabled(true);

// Weather is everyday zod: bounds, an ISO date-time (format and pattern), an
// enum, an array and a nullable field; z.object is closed and all-required,
// so it meets OpenAI's strict mode.
const Weather = z.object({
  city: z.string().min(1),
  temperature: z.number().int().min(-90).max(60),
  observed: z.iso.datetime(),
  station: z.enum(["OSL", "BGO"]),
  tags: z.array(z.string()),
  note: z.string().nullable(),
});

// The value the emulator builds from the schema the gateway's instruction
// names (every required property, first enum value, format samples).
const expected = { city: "value-city", temperature: 1, observed: "2026-01-01T00:00:00Z", station: "OSL", tags: [], note: "value-note" };

// Reply is what json_object mode gets from the emulator.
const Reply = z.object({ answer: z.string() });
const expectedReply = { answer: "Hello from the pmgate emulator." };

const violation = "#scenario=structured_schema_violation";

const openaiNode = new OpenAI({ baseURL: e.tapURL, apiKey: e.apiKey, maxRetries: 0 });
const aiOpenAI = createOpenAI({ baseURL: e.tapURL, apiKey: e.apiKey });
const compatible = (supportsStructuredOutputs, fetch) =>
  createOpenAICompatible({ name: "pmgate", baseURL: e.tapURL, apiKey: e.apiKey, supportsStructuredOutputs, ...(fetch ? { fetch } : {}) });
const langchain = () => new ChatOpenAI({ model: e.model, apiKey: e.apiKey, maxRetries: 0, configuration: { baseURL: e.tapURL } });

/** streamed runs streamObject to its end and returns the object, or throws the stream's error. */
async function streamed(args) {
  let streamError;
  const r = streamObject({ ...args, maxRetries: 0, onError: ({ error }) => (streamError = error) });
  const partials = [];
  for await (const p of r.partialObjectStream) partials.push(p);
  if (streamError) throw streamError;
  const object = await r.object;
  // The gateway releases the answer only once it is checked: one content delta.
  assert.ok(partials.length >= 1);
  return object;
}

/** gatewayError finds the gateway's error code in whatever a library threw (or its cause). */
function gatewayError(err) {
  const seen = new Set();
  for (let x = err; x && !seen.has(x); x = x.cause ?? x.lastError ?? x.error) {
    seen.add(x);
    const status = x.status ?? x.statusCode;
    const code = x.code ?? x.error?.code ?? (typeof x.responseBody === "string" ? JSON.parse(x.responseBody || "{}").error?.code : undefined);
    if (status === 502 || code === "upstream_output_invalid") return { status, code, name: x.constructor?.name, message: String(x.message).slice(0, 300) };
  }
  return { status: undefined, code: undefined, name: err?.constructor?.name, message: String(err?.message ?? err).slice(0, 300) };
}

// Each case runs the library's default structured-output call for a prompt
// and returns the typed object.
const cases = [
  {
    name: "ai-sdk generateObject, openai provider (chat)",
    run: async (prompt) => (await generateObject({ model: aiOpenAI.chat(e.model), schema: Weather, prompt, maxRetries: 0 })).object,
  },
  {
    name: "ai-sdk streamObject, openai provider (chat)",
    run: (prompt) => streamed({ model: aiOpenAI.chat(e.model), schema: Weather, prompt }),
  },
  {
    name: "ai-sdk generateObject, openai provider (responses)",
    run: async (prompt) => (await generateObject({ model: aiOpenAI.responses(e.model), schema: Weather, prompt, maxRetries: 0 })).object,
  },
  {
    name: "ai-sdk streamObject, openai provider (responses)",
    run: (prompt) => streamed({ model: aiOpenAI.responses(e.model), schema: Weather, prompt }),
  },
  {
    name: "ai-sdk generateObject, openai-compatible json_schema",
    run: async (prompt) => (await generateObject({ model: compatible(true)(e.model), schema: Weather, prompt, maxRetries: 0 })).object,
  },
  {
    name: "ai-sdk streamObject, openai-compatible json_schema",
    run: (prompt) => streamed({ model: compatible(true)(e.model), schema: Weather, prompt }),
  },
  {
    name: "langchain withStructuredOutput jsonSchema",
    run: (prompt) => langchain().withStructuredOutput(Weather, { method: "jsonSchema", name: "weather" }).invoke(prompt),
  },
  {
    name: "langchain withStructuredOutput jsonMode",
    reply: true,
    run: (prompt) => langchain().withStructuredOutput(Reply, { method: "jsonMode", name: "reply" }).invoke(prompt),
  },
  {
    name: "agents sdk outputType (responses)",
    run: async (prompt) => {
      const agent = new Agent({ name: "weather", instructions: "Report the weather.", outputType: Weather,
        model: new OpenAIResponsesModel(openaiNode, e.model) });
      return (await run(agent, prompt, { maxTurns: 2 })).finalOutput;
    },
  },
  {
    name: "agents sdk outputType (chat completions)",
    run: async (prompt) => {
      const agent = new Agent({ name: "weather", instructions: "Report the weather.", outputType: Weather,
        model: new OpenAIChatCompletionsModel(openaiNode, e.model) });
      return (await run(agent, prompt, { maxTurns: 2 })).finalOutput;
    },
  },
  {
    name: "openai chat.completions.parse",
    run: async (prompt) => {
      const c = await openaiNode.chat.completions.parse({ model: e.model, messages: [{ role: "user", content: prompt }],
        response_format: zodResponseFormat(Weather, "weather") });
      return c.choices[0].message.parsed;
    },
  },
  {
    name: "openai responses.parse",
    run: async (prompt) => {
      const r = await openaiNode.responses.parse({ model: e.model, input: prompt, text: { format: zodTextFormat(Weather, "weather") } });
      return r.output_parsed;
    },
  },
];

for (const c of cases) {
  test(`${c.name}: a typed, valid object`, { timeout: 60_000 }, async () => {
    const m = marker();
    const win = await Window.open(observer);
    let object, error;
    try {
      object = await c.run(`What is the weather in Oslo? ${m}`);
    } catch (err) {
      error = err;
    }
    const seen = await win.close(m);
    const diag = `error: ${error?.stack ?? error}\ncause: ${error?.cause?.message ?? ""}\nrefusals: ${JSON.stringify(seen.refusals)}`;
    await note(c.name, error ? `failed: ${String(error.message ?? error).slice(0, 200)}` : `object ${JSON.stringify(object)}; ${seen.userQueries} USER_QUERY`);
    assert.equal(error, undefined, diag);
    assert.deepEqual(object, c.reply ? expectedReply : expected, diag);
    (c.reply ? Reply : Weather).parse(object); // typed and valid against the caller's schema
    assert.deepEqual(seen.refusals, [], diag);
    assert.equal(seen.userQueries, 1, "one upstream dispatch, counted at the emulator");
    assert.equal(seen.rejected, 0, "the emulator rejected nothing");
  });

  test(`${c.name}: a schema-violating answer is the gateway's error`, { timeout: 60_000 }, async () => {
    const m = marker();
    const win = await Window.open(observer);
    let object, error;
    try {
      object = await c.run(`What is the weather in Oslo? ${m} ${violation}`);
    } catch (err) {
      error = err;
    }
    const seen = await win.close(m);
    const g = gatewayError(error);
    await note(`${c.name} (violation)`, error ? `${g.name}: status ${g.status}, code ${g.code}` : `no error: ${JSON.stringify(object)}`);
    assert.ok(error, `the library must not return an object: ${JSON.stringify(object)}`);
    assert.equal(g.status, 502, `${g.name}: ${g.message}`);
    assert.ok(g.code === "upstream_output_invalid" || /upstream_output_invalid|not valid against the requested response format/.test(g.message), `${g.name}: ${g.message}`);
    assert.equal(seen.userQueries, 1, "refused once, never retried into a second upstream query");
    assert.ok(seen.refusals.length >= 1 && seen.refusals.every((r) => r.includes("upstream_output_invalid")), JSON.stringify(seen.refusals));
  });
}

// The AI SDK's openai-compatible provider without supportsStructuredOutputs:
// true sends response_format json_object and never shows the model the
// schema (not in the request at all), so no gateway can satisfy it. With a
// schema the emulator cannot guess (Weather), the gateway answers 200 with the
// JSON object the model wrote (json_object is all that was asked) and the SDK
// refuses it against its schema: NoObjectGeneratedError, not a typed object.
// docs/STRUCTURED-OUTPUT.md says to set supportsStructuredOutputs: true.
for (const mode of ["generateObject", "streamObject"]) {
  test(`ai-sdk ${mode}, openai-compatible without supportsStructuredOutputs: the schema never reaches the model`, { timeout: 60_000 }, async () => {
    const m = marker();
    const sent = [];
    const capture = async (url, init) => {
      sent.push(JSON.parse(init.body));
      return fetch(url, init);
    };
    const model = compatible(false, capture)(e.model);
    const prompt = `What is the weather in Oslo? ${m}`;
    const win = await Window.open(observer);
    let object, error;
    try {
      object = mode === "generateObject"
        ? (await generateObject({ model, schema: Weather, prompt, maxRetries: 0 })).object
        : await streamed({ model, schema: Weather, prompt });
    } catch (err) {
      error = err;
    }
    const seen = await win.close(m);
    await note(`ai-sdk ${mode}, openai-compatible json_object`, error ? `${error.name}: ${String(error.message).slice(0, 160)}` : `object ${JSON.stringify(object)}`);
    assert.equal(sent.length, 1);
    assert.deepEqual(sent[0].response_format, { type: "json_object" }, "json_object, without a schema");
    for (const k of Object.keys(Weather.shape)) {
      assert.ok(!JSON.stringify(sent[0]).includes(`"${k}"`), `the schema's ${k} is nowhere in the request`);
    }
    assert.ok(error, `no typed object can come of it: ${JSON.stringify(object)}`);
    assert.match(String(error.name), /NoObjectGenerated/, String(error.stack ?? error));
    assert.deepEqual(seen.refusals, [], "the gateway answered the json_object request it was sent");
    assert.equal(seen.userQueries, 1, "one upstream dispatch");
  });
}
