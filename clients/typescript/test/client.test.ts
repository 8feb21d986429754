// The typed client against a real `graphsvc serve`: every operation it offers, as-of reads, and
// graphsvc's error codes as GraphsvcError.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { GraphsvcClient, GraphsvcError } from "../src/index.js";
import { type Server, startServer } from "./support.js";

let server: Server;
let client: GraphsvcClient;

const DEPLOY = "00000000-0000-4000-8000-0000000000a1";
const SLOW = "00000000-0000-4000-8000-0000000000a2";

before(async () => {
  // Each write stores its vectors before it answers: the test compares reads made one after the
  // other (reconstruct, then reconstructAndStore), which the vector queue could otherwise answer
  // before and after a memory's vector arrived, in another order.
  server = await startServer({ GRAPHSVC_EMBED_WRITES: "inline" });
  client = new GraphsvcClient({ url: server.url, apiKey: server.writeKey });
});

after(async () => {
  await server?.stop();
});

async function refusal(promise: Promise<unknown>): Promise<GraphsvcError> {
  const error = await promise.then(
    () => assert.fail("expected a GraphsvcError"),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof GraphsvcError, String(error));
  return error;
}

describe("operations", () => {
  it("remembers, reads, links, recalls, reconstructs and forgets", async () => {
    const deploy = await client.remember({
      input: {
        id: DEPLOY,
        text: "The 14:00 deploy raised the checkout database pool timeout",
        kind: "event",
        tags: ["ops"],
        occurredAt: "2024-05-01T14:00:00Z",
      },
    });
    assert.equal(deploy.id, DEPLOY);
    assert.equal(deploy.namespace, server.namespace);
    assert.deepEqual(deploy.tags, ["ops"]);
    const [slow] = await client.rememberMany({
      inputs: [
        {
          id: SLOW,
          text: "Checkout slowed down: requests waited on the database pool",
          kind: "event",
          occurredAt: "2024-05-01T14:05:00Z",
        },
      ],
    });
    assert.equal(slow?.id, SLOW);

    const link = await client.link({ source: DEPLOY, target: SLOW, kind: "CAUSES", note: "pool" });
    assert.deepEqual([link.source, link.target, link.kind, link.note], [DEPLOY, SLOW, "CAUSES", "pool"]);

    assert.equal((await client.memory(SLOW))?.text, slow?.text);
    const page = await client.memories({ tag: "ops", first: 5 });
    assert.deepEqual(page.nodes.map((m) => m.id), [DEPLOY]);
    assert.equal(page.pageInfo.hasNextPage, false);

    const bundle = await client.bundle({ query: "Why did checkout slow down in Lisbon?" });
    assert.equal(bundle.skipped, false);
    assert.ok(bundle.capsules.some((c) => c.memoryId === SLOW));
    assert.ok(bundle.uncoveredWords.includes("Lisbon"));
    assert.ok(bundle.topScore > 0 && bundle.topScore <= 1);
    assert.equal(bundle.asOf, null);

    const belief = await client.reconstruct({ cue: "checkout slowed down", depth: 2 });
    assert.ok(belief.sourceIds.includes(SLOW));
    assert.ok([...belief.sourceIds, ...belief.linkedContextIds].includes(DEPLOY));
    assert.equal(belief.beliefId, null);
    const stored = await client.reconstructAndStore({ cue: "checkout slowed down", depth: 2 });
    assert.ok(stored.beliefId);
    assert.deepEqual(stored.sourceIds, belief.sourceIds);

    const history = await client.history(SLOW);
    assert.deepEqual(history?.map((h) => h.memory.id), [SLOW]);
    assert.equal(history?.[0]?.validUntil, null);
    assert.equal(await client.history("00000000-0000-4000-8000-00000000ffff"), null);

    const prompt = await client.promptBundle({ userTurn: "Why did checkout slow down?" });
    assert.ok(prompt.rendered.includes(slow?.text ?? "?"));
    const request = prompt.messages as { system: unknown; messages: Array<{ role: string }> };
    assert.equal(request.messages.at(-1)?.role, "user");
    assert.ok(prompt.contextLedger.fits);

    const receipt = await client.forget(DEPLOY);
    assert.equal(receipt.memoryId, DEPLOY);
    assert.deepEqual(receipt.removedLinks, [{ source: DEPLOY, target: SLOW, kind: "CAUSES" }]);
    assert.deepEqual(receipt.removedBeliefIds, [stored.beliefId]);
    assert.equal(await client.memory(DEPLOY), null);
    const viewer = await client.viewer();
    assert.deepEqual([viewer.namespace, viewer.role], [server.namespace, "write"]);
  });

  it("answers as of an instant", async () => {
    const text = "The payments queue was drained on Friday";
    const memory = await client.remember({ input: { text } });
    const before = new Date(Date.parse(memory.recordedAt) - 60_000).toISOString();
    const now = await client.bundle({ query: "payments queue drained", minScore: 0 });
    assert.ok(now.capsules.some((c) => c.memoryId === memory.id));
    for (const asOfMode of ["KNOWN", "VALID"] as const) {
      const then = await client.bundle({ query: "payments queue drained", asOf: before, asOfMode });
      assert.deepEqual(then.asOf, { at: then.asOf?.at, mode: asOfMode });
      assert.ok(!then.capsules.some((c) => c.memoryId === memory.id), asOfMode);
      const belief = await client.reconstruct({ cue: "payments queue", asOf: before, asOfMode });
      assert.ok(!belief.sourceIds.includes(memory.id));
    }
    const known = await client.memories({ knownAsOf: before });
    assert.ok(!known.nodes.some((m) => m.id === memory.id));
  });
});

describe("errors", () => {
  it("maps graphsvc's codes to GraphsvcError", async () => {
    const bad = await refusal(client.remember({ input: { text: "   " } }));
    assert.equal(bad.code, "BAD_INPUT");
    const missing = await refusal(client.forget("00000000-0000-4000-8000-00000000fffe"));
    assert.equal(missing.code, "NOT_FOUND");
    const reader = new GraphsvcClient({ url: server.url, apiKey: server.readKey });
    assert.ok(Array.isArray((await reader.memories()).nodes));
    const forbidden = await refusal(reader.remember({ input: { text: "a read key cannot write" } }));
    assert.equal(forbidden.code, "FORBIDDEN");
    const anonymous = new GraphsvcClient({ url: server.url });
    const unauthenticated = await refusal(anonymous.viewer());
    assert.equal(unauthenticated.code, "UNAUTHENTICATED");
    assert.equal(unauthenticated.status, 401);
    const tooMany = await refusal(client.memories({ first: 100_000 }));
    assert.ok(["BAD_INPUT", "LIMIT_EXCEEDED"].includes(tooMany.code), tooMany.message);
  });

  it("says UNAVAILABLE when the server cannot be reached", async () => {
    const closed = new GraphsvcClient({ url: "http://127.0.0.1:9/graphql", timeoutMs: 5_000 });
    const error = await refusal(closed.viewer());
    assert.equal(error.code, "UNAVAILABLE");
    assert.equal(error.status, undefined);
  });
});
