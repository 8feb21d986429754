/**
 * GraphiQL for graphsvc, served from the server itself: React, GraphiQL and the explorer plugin are
 * same-origin files (see index.html), so the page works with no internet access.
 *
 * Authorization: the API key field above GraphiQL (shared with /explore through sessionStorage)
 * sends `Authorization: Bearer <key>`; a header typed in GraphiQL's Headers tab wins over it.
 */

import { authHeaders, readApiKey, writeApiKey } from "../shared/apikey";

// The UMD builds loaded before this script define these globals.
interface ReactGlobal {
  createElement(type: unknown, props?: Record<string, unknown> | null): unknown;
}
interface ReactDomGlobal {
  createRoot(container: Element): { render(element: unknown): void };
}
interface GraphiQLGlobal {
  (props: Record<string, unknown>): unknown;
}
interface ExplorerGlobal {
  explorerPlugin(options?: Record<string, unknown>): unknown;
}
declare const React: ReactGlobal;
declare const ReactDOM: ReactDomGlobal;
declare const GraphiQL: GraphiQLGlobal;
declare const GraphiQLPluginExplorer: ExplorerGlobal;

interface FetcherOptions {
  headers?: Record<string, unknown>;
}

const DEFAULT_QUERY = `# graphsvc. Ctrl-Enter runs the query.
# With API keys on the server: put yours
# in the field above, or send an
# Authorization header (Headers, below).
# The Explorer (folder icon, left) builds
# a query as you tick fields.

query Overview {
  viewer {
    namespace
    role
  }
  stats {
    memories
    links
    beliefs
  }
}

# query Bundle {
#   bundle(query: "why did checkout time out?",
#          budgetTokens: 300) {
#     topScore skipped evidenceCoverage
#     uncoveredTerms
#     capsules { text score tokens reason }
#   }
# }
`;

/** POST to this page's own URL (the GraphQL endpoint), with the key and the editor's headers. */
function makeFetcher(endpoint: string, key: string) {
  return async (params: unknown, options?: FetcherOptions): Promise<unknown> => {
    const headers: Record<string, string> = {
      "Content-Type": "application/json",
      Accept: "application/graphql-response+json, application/json",
      ...authHeaders(key),
    };
    for (const [name, value] of Object.entries(options?.headers ?? {})) {
      if (typeof value === "string") {
        headers[name] = value;
      }
    }
    const response = await fetch(endpoint, {
      method: "POST",
      headers,
      body: JSON.stringify(params),
      credentials: "same-origin",
    });
    const text = await response.text();
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return { errors: [{ message: `HTTP ${response.status}: ${text.slice(0, 500)}` }] };
    }
  };
}

function start(): void {
  const container = document.getElementById("graphiql");
  const form = document.getElementById("gs-key-form") as HTMLFormElement | null;
  const input = document.getElementById("gs-api-key") as HTMLInputElement | null;
  const clear = document.getElementById("gs-key-clear");
  const status = document.getElementById("gs-key-status");
  if (!container || !form || !input || !clear || !status) {
    return;
  }
  const endpoint = window.location.pathname;
  const explorer = GraphiQLPluginExplorer.explorerPlugin();
  const root = ReactDOM.createRoot(container);

  const render = (key: string): void => {
    // A new fetcher makes GraphiQL fetch the schema again, now with the key.
    root.render(
      React.createElement(GraphiQL, {
        fetcher: makeFetcher(endpoint, key),
        plugins: [explorer],
        defaultQuery: DEFAULT_QUERY,
        isHeadersEditorEnabled: true,
        shouldPersistHeaders: false,
        defaultEditorToolsVisibility: true,
        inputValueDeprecation: true,
      }),
    );
    status.textContent = key ? "Key in use for this tab." : "No key: requests go without one.";
  };

  input.value = readApiKey();
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    writeApiKey(input.value);
    render(readApiKey());
  });
  clear.addEventListener("click", () => {
    input.value = "";
    writeApiKey("");
    render("");
    input.focus();
  });
  render(readApiKey());
}

start();
