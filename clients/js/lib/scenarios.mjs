// scenarios.mjs defines the client conformance scenarios once for every
// client that speaks through the openai npm SDK: the SDK against the gateway
// ("openai-node"), and the SDK against 9router in front of the gateway
// ("9router"). Each test is named "<client> <scenario>".
//
// A routed client (9router) retries 502/503/504, appends its own [DONE] and
// rewrites usage, so for it completion and single dispatch are judged on the
// gateway side: the observer's recording proxy keeps the gateway's own bytes
// for every exchange (checked against the streaming rules in Go), and the
// emulator counts what reached the upstream.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";
import { checkChunks, marker, runnable, sleep, timeTool, weatherTool } from "./harness.mjs";

/**
 * defineScenarios registers the tests.
 *
 * t.client     the client's name
 * t.routed     true when a router stands between the SDK and the gateway
 * t.sdk(opts)  a new OpenAI client (maxRetries 0 unless opts say otherwise)
 * t.model(k)   the model name for k: main, streamFail, jsonFail, contFail, badKey
 * t.wrongKey() {openai, model} that make the gateway answer 401
 * t.observer   the Observer
 * t.extra      optional: more checks per scenario (name → async fn(ctx))
 */
export function defineScenarios(t) {
  const { client, routed, observer } = t;
  const openai = t.sdk();
  const model = t.model("main");
  const name = (scenario) => `${client} ${scenario}`;
  const opts = { timeout: 90_000 };

  /** gatewaySent checks the gateway's side of a routed scenario's exchanges. */
  const gatewaySent = (o, want) => {
    if (!routed) return;
    const ex = want.lastRole ? o.exchanges.filter((e) => e.last_role === want.lastRole) : o.exchanges;
    assert.equal(ex.length, want.count ?? 1, `the gateway answered ${ex.length} requests: ${JSON.stringify(ex)}`);
    for (const e of ex) {
      assert.deepEqual(e.violations ?? [], [], "what the gateway sent breaks the streaming rules");
      assert.equal(e.status, want.status ?? 200);
      assert.equal(e.error_code ?? "", want.error ?? "", "the gateway's error code");
      if (want.error) {
        assert.equal(e.done, false, "no [DONE] from the gateway after a failure");
        assert.deepEqual(e.finish ?? [], [], "no finish_reason from the gateway after a failure");
        if (e.status !== 200) assert.equal(e.should_retry, "false");
      } else if (e.status === 200) {
        assert.equal(e.complete, true, "the gateway's answer was read to its end");
        if (e.stream) assert.equal(e.done, true, "the gateway ended its stream with [DONE]");
        if (want.finish) assert.deepEqual(e.finish, want.finish);
      }
    }
    return ex;
  };

  const collect = async (stream) => {
    const chunks = [];
    let error;
    try {
      for await (const ch of stream) chunks.push(ch);
    } catch (e) {
      error = e;
    }
    return { chunks, error };
  };

  test(name("non-streamed text"), opts, async () => {
    const m = marker();
    const c = await openai.chat.completions.create({ model, messages: [{ role: "user", content: `Hello ${m}` }] });
    assert.equal(c.object, "chat.completion");
    assert.ok(c.choices[0].message.content.includes(`You said: Hello ${m}`), c.choices[0].message.content);
    assert.equal(c.choices[0].finish_reason, "stop");
    assert.ok(c.usage.total_tokens > 0, "usage");
    const o = await observer.until({ marker: m });
    assert.equal(o.emulator.user_query, 1, "one upstream query");
    gatewaySent(o, { finish: ["stop"] });
  });

  test(name("streamed text with include_usage"), opts, async () => {
    const m = marker();
    const stream = await openai.chat.completions.create({
      model,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: `Stream ${m}` }],
    });
    const { chunks, error } = await collect(stream);
    assert.ifError(error);
    const w = checkChunks(chunks, { includeUsage: true, strictUsage: !routed });
    assert.deepEqual(w.violations, [], "the client saw the streaming rules broken");
    assert.ok(w.content.includes(`You said: Stream ${m}`), w.content);
    assert.deepEqual(w.finish, ["stop"]);
    const usage = chunks.at(-1).usage;
    assert.ok(usage?.total_tokens > 0, "the last chunk carries usage");
    // The stream helper assembles the same answer.
    const m2 = marker();
    const helper = openai.chat.completions.stream({ model, stream_options: { include_usage: true }, messages: [{ role: "user", content: `Helper ${m2}` }] });
    const final = await helper.finalChatCompletion();
    assert.ok(final.choices[0].message.content.includes(`You said: Helper ${m2}`));
    assert.equal(final.choices[0].finish_reason, "stop");
    assert.ok(final.usage?.total_tokens > 0);
    const o = await observer.until({ marker: m });
    assert.equal(o.emulator.user_query, 1);
    const [ex] = gatewaySent(o, { finish: ["stop"] }) ?? [];
    if (ex) {
      assert.equal(ex.include_usage, true, "include_usage reached the gateway");
      assert.equal(ex.usage_chunks, 1, "the gateway sent one usage chunk");
      assert.equal(ex.content, w.content, "the text is what the gateway sent");
    }
  });

  test(name("tool turn and continuation"), opts, async () => {
    const m = marker();
    const messages = [{ role: "user", content: `weather in Oslo ${m}` }];
    const chunks = [];
    const turn = await openai.chat.completions
      .stream({ model, messages, tools: [weatherTool] })
      .on("chunk", (ch) => chunks.push(ch))
      .finalChatCompletion();
    const w = checkChunks(chunks, { strictUsage: !routed });
    assert.deepEqual(w.violations, [], "the client saw the streaming rules broken");
    assert.equal(turn.choices[0].finish_reason, "tool_calls");
    const msg = turn.choices[0].message;
    assert.equal(msg.tool_calls.length, 1);
    const call = msg.tool_calls[0];
    assert.equal(call.function.name, "get_weather", "the name is not duplicated by accumulation");
    assert.equal(call.id, w.toolCalls[0].id);
    assert.equal(call.function.arguments, w.toolCalls[0].arguments, "arguments byte-identical to the streamed fragments");
    assert.deepEqual(JSON.parse(call.function.arguments), { city: "value-city" });
    assert.match(call.id, /^call_pmn_/);
    const before = await observer.until({ marker: m });
    const [ex] = gatewaySent(before, { finish: ["tool_calls"] }) ?? [];
    if (ex) {
      assert.equal(ex.tool_calls.length, 1);
      assert.equal(call.function.arguments, ex.tool_calls[0].arguments, "arguments byte-identical to what the gateway sent");
      assert.equal(call.function.name, ex.tool_calls[0].name);
      assert.equal(call.id, ex.tool_calls[0].id);
    }
    // The continuation echoes the assistant message exactly as the SDK assembled it.
    messages.push(msg, { role: "tool", tool_call_id: call.id, content: `rain ${m}` });
    const final = await openai.chat.completions.stream({ model, messages, tools: [weatherTool] }).finalChatCompletion();
    assert.equal(final.choices[0].finish_reason, "stop");
    assert.ok(final.choices[0].message.content.includes(`get_weather=rain ${m}`), final.choices[0].message.content);
    const o = await observer.until({ marker: m });
    assert.equal(o.emulator.tool_response, 1, "one TOOL_RESPONSE upstream");
    gatewaySent(o, { lastRole: "tool", finish: ["stop"] });
  });

  test(name("parallel two-tool group"), opts, async () => {
    const m = marker();
    const messages = [{ role: "user", content: `weather and time in Oslo ${m}` }];
    const tools = [weatherTool, timeTool];
    const { chunks, error } = await collect(await openai.chat.completions.create({ model, messages, tools, stream: true }));
    assert.ifError(error);
    const w = checkChunks(chunks, { strictUsage: !routed });
    assert.deepEqual(w.violations, [], "the client saw the streaming rules broken");
    assert.deepEqual(w.finish, ["tool_calls"]);
    assert.deepEqual(w.toolCalls.map((c) => [c.index, c.name]), [[0, "get_weather"], [1, "get_time"]]);
    assert.notEqual(w.toolCalls[0].id, w.toolCalls[1].id);
    for (const c of w.toolCalls) assert.deepEqual(JSON.parse(c.arguments), { city: "value-city" });
    const o1 = await observer.until({ marker: m });
    const [ex] = gatewaySent(o1, { finish: ["tool_calls"] }) ?? [];
    if (ex) assert.deepEqual(w.toolCalls, ex.tool_calls, "the calls are byte-identical to what the gateway sent");
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: w.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })),
    });
    for (const c of w.toolCalls) messages.push({ role: "tool", tool_call_id: c.id, content: `ok ${c.name} ${m}` });
    const final = await openai.chat.completions.create({ model, messages, tools });
    assert.ok(
      final.choices[0].message.content.includes(`get_weather=ok get_weather ${m}; get_time=ok get_time ${m}`),
      final.choices[0].message.content,
    );
    const o = await observer.until({ marker: m });
    assert.equal(o.emulator.tool_response, 1, "one TOOL_RESPONSE for the group");
    gatewaySent(o, { lastRole: "tool", finish: ["stop"] });
  });

  test(name("tool loop to the final answer"), opts, async () => {
    const m = marker();
    const runner = openai.chat.completions.runTools({
      model,
      messages: [{ role: "user", content: `weather and time, twice ${m} #loop=2` }],
      tools: [
        runnable(weatherTool, (args) => `sunny in ${args.city} ${m}`),
        runnable(timeTool, (args) => `noon in ${args.city} ${m}`),
      ],
    });
    const content = await runner.finalContent();
    assert.ok(content.startsWith("Tool results received: "), content);
    assert.ok(content.includes(`get_weather=sunny in value-city ${m}`), content);
    assert.equal(runner.messages.filter((x) => x.role === "tool").length, 4, "two rounds of two calls");
    const o = await observer.until({ marker: m });
    assert.equal(o.emulator.user_query, 1);
    assert.equal(o.emulator.tool_response, 2, "one TOOL_RESPONSE per round");
    gatewaySent(o, { lastRole: "tool", count: 2 });
  });

  test(name("multi-turn session continues its upstream conversation"), opts, async () => {
    // The client resends its whole history every turn, echoing each answer as
    // the SDK returned it; the gateway sends only the new user message, in the
    // conversation the emulator holds (it numbers the turns it has seen).
    const marks = [marker(), marker(), marker(), marker()];
    const texts = [`hello ${marks[0]} #loop=0`, `tell me more ${marks[1]} #loop=0`, `weather in Oslo ${marks[2]}`, `thanks ${marks[3]} #loop=0`];
    const tools = [weatherTool];
    const messages = [{ role: "system", content: "You are terse. " + "Follow the rules. ".repeat(300) }];
    for (let i = 0; i < texts.length; i++) {
      messages.push({ role: "user", content: texts[i] });
      for (;;) {
        const c =
          i % 2 === 1
            ? await openai.chat.completions.stream({ model, messages, tools }).finalChatCompletion()
            : await openai.chat.completions.create({ model, messages, tools });
        const msg = c.choices[0].message;
        messages.push(msg);
        if (c.choices[0].finish_reason !== "tool_calls") {
          if (i > 0 && i !== 2) {
            const want = `Hello again from the pmgate emulator (turn ${i + 1} of this conversation). You said: ${texts[i]}`;
            assert.equal(msg.content, want, "continued with only the new message");
          }
          break;
        }
        for (const call of msg.tool_calls) messages.push({ role: "tool", tool_call_id: call.id, content: `rain ${marks[2]}` });
      }
    }
    const o = await observer.until({ marker: marks[0] });
    assert.equal(o.emulator.user_query, 1, "the first turn's words reached the upstream once: the history was never re-sent");
    const oslo = await observer.until({ marker: marks[2] });
    assert.equal(oslo.emulator.tool_response, 1, "the tool loop inside the session was dispatched once");
  });

  test(name("upstream failure mid-stream"), opts, async () => {
    const m = marker();
    const failModel = t.model("streamFail");
    const { chunks, error } = await collect(
      await openai.chat.completions.create({ model: failModel, stream: true, messages: [{ role: "user", content: `#scenario=failure_after_text ${m}` }] }),
    );
    assert.ok(error instanceof OpenAI.APIError, `want an APIError, got ${error}`);
    assert.equal(error.error?.code, "upstream_failure", "the gateway's code reaches the SDK");
    const w = checkChunks(chunks, { strictUsage: !routed });
    assert.ok(w.content.length > 0, "text was streamed before the failure");
    assert.deepEqual(w.finish, [], "never a finished message");
    await assert.rejects(
      openai.chat.completions.stream({ model: failModel, messages: [{ role: "user", content: `#scenario=failure_after_text ${marker()}` }] }).finalChatCompletion(),
      (e) => e instanceof OpenAI.APIError && e.error?.code === "upstream_failure",
    );
    const o = await observer.until({ marker: m });
    assert.equal(o.emulator.user_query, 1);
    gatewaySent(o, { error: "upstream_failure" });
    await t.extra?.afterStreamFailure?.({ openai, model: failModel });
  });

  test(name("fail-closed error, non-streamed"), opts, async () => {
    const m = marker();
    const retrying = t.sdk({ maxRetries: routed ? 0 : 2 });
    let error;
    try {
      await retrying.chat.completions.create({ model: t.model("jsonFail"), messages: [{ role: "user", content: `#scenario=failure_after_text ${m}` }] });
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof OpenAI.APIError, `want an APIError, got ${error}`);
    const o = await observer.until({ marker: m });
    if (!routed) {
      assert.ok(error instanceof OpenAI.InternalServerError);
      assert.equal(error.status, 502);
      assert.equal(error.code, "upstream_failure");
      assert.equal(error.type, "upstream_error");
      assert.equal(o.emulator.user_query, 1, "the SDK obeyed x-should-retry: false");
      return;
    }
    await t.extra.failClosed({ error, observe: o, gatewaySent });
  });

  test(name("replayed continuation is not dispatched again"), opts, async () => {
    const m = marker();
    const messages = [{ role: "user", content: `replay ${m}` }];
    const turn = await openai.chat.completions.create({ model, messages, tools: [weatherTool] });
    const msg = turn.choices[0].message;
    messages.push(msg, { role: "tool", tool_call_id: msg.tool_calls[0].id, content: `hail ${m}` });
    const first = await openai.chat.completions.create({ model, messages, tools: [weatherTool] });
    const again = await openai.chat.completions.create({ model, messages, tools: [weatherTool] });
    assert.equal(again.choices[0].message.content, first.choices[0].message.content, "a replay returns the same answer");
    const streamed = await openai.chat.completions.stream({ model, messages, tools: [weatherTool] }).finalChatCompletion();
    assert.equal(streamed.choices[0].message.content, first.choices[0].message.content, "a streamed replay too");
    const o = await observer.until({ marker: m });
    assert.equal(o.emulator.tool_response, 1, "a continuation sent three times reached the upstream once");
    gatewaySent(o, { lastRole: "tool", count: 3, finish: ["stop"] });
  });

  test(name("failed continuation is never dispatched twice"), opts, async () => {
    const m = marker();
    const contModel = t.model("contFail");
    const retrying = t.sdk({ maxRetries: routed ? 0 : 2 });
    const messages = [{ role: "user", content: `weather ${m}` }];
    const turn = await retrying.chat.completions.create({ model: contModel, messages, tools: [weatherTool] });
    const msg = turn.choices[0].message;
    messages.push(msg, { role: "tool", tool_call_id: msg.tool_calls[0].id, content: `#scenario=failure_after_text ${m}` });
    for (let i = 0; i < 2; i++) {
      let error;
      try {
        await retrying.chat.completions.create({ model: contModel, messages, tools: [weatherTool] });
      } catch (e) {
        error = e;
      }
      assert.ok(error instanceof OpenAI.APIError, `attempt ${i}: want an APIError, got ${error}`);
      if (!routed) {
        assert.equal(error.status, 502);
        assert.equal(error.code, "continuation_outcome_uncertain");
      } else {
        await t.extra.continuationError({ error, attempt: i });
      }
    }
    const o = await observer.until({ marker: m });
    assert.equal(o.emulator.tool_response, 1, "the tool results reached the upstream exactly once");
    if (routed) {
      const ex = o.exchanges.filter((e) => e.last_role === "tool");
      assert.ok(ex.length >= 1);
      for (const e of ex) {
        assert.equal(e.status, 502);
        assert.equal(e.error_code, "continuation_outcome_uncertain");
        assert.equal(e.should_retry, "false");
      }
      await t.extra?.failedContinuation?.({ exchanges: ex });
    }
  });

  test(name("401 from the gateway"), opts, async () => {
    const m = marker();
    const wrong = t.wrongKey();
    let error;
    try {
      await wrong.openai.chat.completions.create({ model: wrong.model, messages: [{ role: "user", content: `hi ${m}` }] });
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof OpenAI.APIError, `want an APIError, got ${error}`);
    if (!routed) {
      assert.ok(error instanceof OpenAI.AuthenticationError, `want an AuthenticationError, got ${error?.constructor?.name}`);
      assert.equal(error.status, 401);
      assert.equal(error.code, "invalid_api_key");
      await assert.rejects(
        wrong.openai.chat.completions.create({ model: wrong.model, stream: true, messages: [{ role: "user", content: `hi ${m}` }] }),
        OpenAI.AuthenticationError,
      );
    }
    const o = await observer.until({ marker: m });
    assert.equal(o.emulator.user_query + o.emulator.tool_response + o.emulator.rejected, 0, "nothing reached the upstream");
    if (routed) await t.extra.unauthorized({ error, observe: o, wrong, marker: m });
  });

  test(name("client abort reaches the upstream"), opts, async () => {
    const m = marker();
    const before = (await observer.get()).upstream_cancelled;
    const ac = new AbortController();
    const t0 = performance.now();
    const { data: stream, response } = await openai.chat.completions
      .create(
        { model, stream: true, messages: [{ role: "user", content: `#scenario=slow_stream ${m} ${"and so on ".repeat(20)}` }] },
        { signal: ac.signal },
      )
      .withResponse();
    let abortedAfter = 0;
    const finish = [];
    let error;
    try {
      for await (const ch of stream) {
        if (ch.choices[0]?.finish_reason) finish.push(ch.choices[0].finish_reason);
        if (ch.choices[0]?.delta?.content && !abortedAfter) {
          abortedAfter = performance.now() - t0;
          ac.abort();
        }
      }
    } catch (e) {
      error = e;
    }
    assert.ok(abortedAfter > 0, "text arrived before the abort");
    // The SDK ends the iteration quietly when its own signal aborts the stream.
    assert.equal(error, undefined, `the abort surfaced as ${error}`);
    assert.deepEqual(finish, [], "the stream stopped before its end");
    let requestId = response.headers.get("x-request-id");
    if (routed) {
      const o = await observer.until({ marker: m }, (o) => o.exchanges.length === 1, 3000);
      const [ex] = o.exchanges;
      assert.ok(ex && ex.cancelled && !ex.complete, `the router dropped the gateway stream: ${JSON.stringify(ex)}`);
      requestId = ex.request_id;
    }
    assert.ok(requestId, "x-request-id");
    const o = await observer.until(
      { marker: m, requestId },
      (o) => o.upstream_cancelled > before && o.gateway.some((g) => g.code === "client_cancelled"),
      3000,
    );
    const [g] = o.gateway;
    assert.equal(g?.code, "client_cancelled", "the gateway saw the client go away");
    assert.ok(o.upstream_cancelled > before, "and cancelled its upstream stream");
    assert.ok(g.duration_ms < abortedAfter + 1000, `the gateway ended ${g.duration_ms} ms in, the client aborted after ${Math.round(abortedAfter)} ms`);
    await sleep(50);
    const after = await openai.chat.completions.create({ model, messages: [{ role: "user", content: `still there ${marker()}` }] });
    assert.equal(after.choices[0].finish_reason, "stop", "the gateway keeps serving");
  });
}
