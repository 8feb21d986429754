// The generated client (src/gql/) is what graphql-codegen makes today from schema.graphql and
// operations/: a schema change fails here until `npm run codegen` is run and its output committed
// (the check graphsvc's Python client has in tests/unit/test_client_codegen.py).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { it } from "node:test";

import { generate } from "@graphql-codegen/cli";

// @ts-expect-error: the configuration is a plain ES module without type declarations
import config from "../../codegen.config.mjs";

it("src/gql/ is current with schema.graphql", async () => {
  const outputs = (await generate(config, false)) as Array<{ filename: string; content: string }>;
  assert.ok(outputs.length >= 2);
  for (const { filename, content } of outputs) {
    const committed = readFileSync(filename, "utf-8");
    assert.equal(
      committed,
      content,
      `${filename} is stale: run \`npm run codegen\` in clients/typescript and commit the result`,
    );
  }
});
