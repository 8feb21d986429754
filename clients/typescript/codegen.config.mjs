// graphql-codegen's configuration: the client preset types every operation of operations/ from
// the repository's schema.graphql into src/gql/. Documents are plain strings (documentMode
// 'string'), so the client needs no GraphQL library at run time. `npm run codegen` writes the
// files; test/generated.test.ts fails while they differ from what this configuration makes.
import { fileURLToPath } from "node:url";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

/** @type {import('@graphql-codegen/cli').CodegenConfig} */
const config = {
  schema: here("../../schema.graphql"),
  documents: [here("operations/*.graphql")],
  ignoreNoDocuments: false,
  // ESM: the generated files import each other with ".js" extensions.
  emitLegacyCommonJSImports: false,
  silent: true,
  generates: {
    [here("src/gql/")]: {
      preset: "client",
      presetConfig: { fragmentMasking: false },
      config: {
        documentMode: "string",
        useTypeImports: true,
        enumsAsTypes: true,
        strictScalars: true,
        scalars: {
          Date: "string",
          DateTime: "string",
          UUID: "string",
          JSON: "unknown",
        },
      },
    },
  },
};

export default config;
