// MCP proven by a second client: the TypeScript MCP SDK lists graphsvc's tools and calls them over
// stdio (the entry `graphsvc mcp --print-config` prints) and over /mcp with a key; the Python SDK
// (test/python_mcp.py) makes the same calls, and the answers must be the same. The tool list is
// compared between the SDKs, not written here: every read-only tool the server offers is called.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";

import { PYTHON, type Server, cleanEnv, python, startServer, tempDir } from "./support.js";

const PYTHON_SDK = fileURLToPath(new URL("../../test/python_mcp.py", import.meta.url));
// Both SDKs must read the same store: each write stores its vectors before it answers, or the
// second SDK would read vectors the queue brought after the first one's reads.
const SETTINGS = { GRAPHSVC_EMBED_WRITES: "inline" };

const FIRST = "00000000-0000-4000-8000-0000000000b1";
const SECOND = "00000000-0000-4000-8000-0000000000b2";
const WRITES = [
  {
    tool: "remember",
    arguments: {
      id: FIRST,
      text: "The 14:00 deploy raised the checkout database pool timeout",
      kind: "event",
      tags: ["ops"],
      occurredAt: "2024-05-01T14:00:00Z",
    },
  },
  {
    tool: "remember",
    arguments: {
      id: SECOND,
      text: "Checkout slowed down: requests waited on the database pool",
      kind: "event",
      occurredAt: "2024-05-01T14:05:00Z",
    },
  },
];
// Arguments for the read-only tools (and bundle, which reads unless given a run id).
const READS: Record<string, Record<string, unknown>> = {
  recall: { query: "Why did checkout slow down in Lisbon?" },
  bundle: { query: "Why did checkout slow down?", budgetTokens: 200 },
  explain: { cue: "checkout slowed down", depth: 2 },
  get_memory: { ids: [FIRST, SECOND, "00000000-0000-4000-8000-0000000000bf"] },
  memories: { first: 10 },
};

interface Tool {
  name: string;
  title?: string;
  description?: string;
  inputSchema?: unknown;
  outputSchema?: unknown;
  annotations?: { readOnlyHint?: boolean; [key: string]: unknown };
}
interface Answers {
  tools: Tool[];
  results: Array<{ isError: boolean; structuredContent: unknown; content: unknown[] }>;
}
type Call = { tool: string; arguments: Record<string, unknown> };

/** What is compared of a tool: what a host shows and validates. */
function shown(tool: Tool): Tool {
  const { name, title, description, inputSchema, outputSchema, annotations } = tool;
  return JSON.parse(JSON.stringify({ name, title, description, inputSchema, outputSchema, annotations }));
}

/** The calls: the writes, then every read-only tool the server lists (and bundle). */
function plan(tools: Tool[]): Call[] {
  const reads = tools.filter((t) => t.annotations?.readOnlyHint === true || t.name === "bundle");
  for (const required of ["recall", "bundle", "explain", "get_memory", "remember"]) {
    assert.ok(tools.some((t) => t.name === required), `the server lists no ${required} tool`);
  }
  return [
    ...WRITES,
    ...reads.map((tool) => {
      const args = READS[tool.name];
      assert.ok(args, `read-only tool ${tool.name} has no arguments in READS: add some`);
      return { tool: tool.name, arguments: args };
    }),
  ];
}

async function typescriptAnswers(transport: Transport): Promise<Answers> {
  const client = new Client({ name: "graphsvc-ts-test", version: "0.1.0" });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    const results = [];
    for (const call of plan(tools as Tool[])) {
      const result = await client.callTool({ name: call.tool, arguments: call.arguments });
      results.push({
        isError: Boolean(result.isError),
        structuredContent: result.structuredContent ?? null,
        content: result.content as unknown[],
      });
    }
    return { tools: tools as Tool[], results };
  } finally {
    await client.close();
  }
}

function compare(ts: Answers, py: Answers): void {
  assert.deepEqual(ts.tools.map(shown), py.tools.map(shown));
  const calls = plan(ts.tools);
  assert.equal(ts.results.length, calls.length);
  assert.equal(py.results.length, calls.length);
  calls.forEach((call, n) => {
    const [mine, theirs] = [ts.results[n], py.results[n]];
    assert.equal(mine?.isError, false, `${call.tool}: ${JSON.stringify(mine?.content)}`);
    assert.deepEqual(mine, theirs, call.tool);
  });
  const recall = ts.results[calls.findIndex((c) => c.tool === "recall")]?.structuredContent;
  assert.ok((recall as { uncoveredWords: string[] }).uncoveredWords.includes("Lisbon"));
  const read = ts.results[calls.findIndex((c) => c.tool === "get_memory")]?.structuredContent;
  assert.ok(JSON.stringify(read).includes(SECOND));
}

describe("MCP over stdio, as --print-config says", () => {
  it("answers the TypeScript SDK as it answers the Python SDK", async () => {
    const home = tempDir("graphsvc-mcp-");
    const dataDir = join(home, "data");
    const printed = spawnSync(
      PYTHON,
      ["-m", "graphsvc.cli", "mcp", "--print-config", "--data-dir", dataDir, "--create"],
      { env: cleanEnv(SETTINGS), encoding: "utf-8" },
    );
    assert.equal(printed.status, 0, printed.stderr);
    const entry = JSON.parse(printed.stdout).mcpServers.graphsvc as {
      command: string;
      args: string[];
      env?: Record<string, string>;
    };
    const env = { ...getDefaultEnvironment(), ...(entry.env ?? {}) };
    const ts = await typescriptAnswers(
      new StdioClientTransport({ command: entry.command, args: entry.args, env, stderr: "ignore" }),
    );
    const calls = plan(ts.tools);
    const py = python<Answers>([PYTHON_SDK], {
      transport: { command: entry.command, args: entry.args, env },
      calls,
    });
    rmSync(home, { recursive: true, force: true });
    compare(ts, py);
  });
});

describe("MCP over /mcp with a key", () => {
  let server: Server;
  before(async () => {
    server = await startServer(SETTINGS);
  });
  after(async () => {
    await server?.stop();
  });

  it("answers the TypeScript SDK as it answers the Python SDK", async () => {
    const url = `${server.base}/mcp`;
    const headers = { Authorization: `Bearer ${server.writeKey}` };
    const ts = await typescriptAnswers(
      new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }),
    );
    const py = python<Answers>([PYTHON_SDK], {
      transport: { url, key: server.writeKey },
      calls: plan(ts.tools),
    });
    compare(ts, py);
  });

  it("refuses a missing key with graphsvc's code", async () => {
    const client = new Client({ name: "graphsvc-ts-test", version: "0.1.0" });
    const transport = new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`));
    await assert.rejects(client.connect(transport), /UNAUTHENTICATED/);
  });
});
