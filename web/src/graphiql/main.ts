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
  createElement(type: unknown, props?: Record<string, unknown> | null, ...children: unknown[]): unknown;
  useSyncExternalStore<T>(subscribe: (onChange: () => void) => () => void, read: () => T): T;
}
interface ReactDomGlobal {
  createRoot(container: Element): { render(element: unknown): void };
}
interface GraphiQLGlobal {
  (props: Record<string, unknown>): unknown;
}
interface GraphiQLPlugin {
  title: string;
  icon: unknown;
  content: unknown;
}
interface ExplorerGlobal {
  explorerPlugin(options?: Record<string, unknown>): GraphiQLPlugin;
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
# GraphiQL's Explorer (folder icon, left)
# builds a query as you tick fields.

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

/**
 * What the server made of this tab's key, learnt from its answers: "missing" (keys are required
 * and none is set), "refused" (the key is unknown), "accepted", or "unknown" before an answer.
 */
type KeyState = "unknown" | "accepted" | "missing" | "refused";

let keyState: KeyState = "unknown";
/** Bumped on each render: an answer to an older fetcher (an older key) is ignored. */
let generation = 0;
const listeners = new Set<() => void>();

function setKeyState(next: KeyState): void {
  if (next !== keyState) {
    keyState = next;
    listeners.forEach((listener) => listener());
  }
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

const REQUIRES_KEY = "This server requires a key: paste one in the key field.";
const REFUSED_KEY = "The server refused this key: check it, or paste another in the key field.";

/** The status line beside the key field. */
function keyStatus(key: string, state: KeyState): string {
  if (state === "missing") {
    return REQUIRES_KEY;
  }
  if (state === "refused") {
    return REFUSED_KEY;
  }
  return key ? "Key in use for this tab." : "No key: requests go without one.";
}

/**
 * GraphiQL's Explorer plugin, saying why there is no schema when the server wants a key (the
 * plugin alone shows "No Schema Available" and nothing else).
 */
function explorerWithKeyNotice(base: GraphiQLPlugin): GraphiQLPlugin {
  const content = (): unknown => {
    const state = React.useSyncExternalStore(subscribe, () => keyState);
    if (state === "missing" || state === "refused") {
      const reason = state === "missing" ? REQUIRES_KEY : REFUSED_KEY;
      return React.createElement(
        "div",
        { className: "gs-no-schema", role: "status" },
        `No schema yet. ${reason} The Explorer lists the schema once the server accepts a key.`,
      );
    }
    return React.createElement(base.content);
  };
  return { ...base, content };
}

/** POST to this page's own URL (the GraphQL endpoint), with the key and the editor's headers. */
function makeFetcher(endpoint: string, key: string) {
  const mine = generation;
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
    if (mine === generation) {
      if (response.status === 401) {
        setKeyState(key ? "refused" : "missing");
      } else if (response.ok) {
        setKeyState("accepted");
      }
    }
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
  const explorer = explorerWithKeyNotice(GraphiQLPluginExplorer.explorerPlugin());
  const root = ReactDOM.createRoot(container);
  let current = "";
  subscribe(() => {
    status.textContent = keyStatus(current, keyState);
  });

  const render = (key: string): void => {
    current = key;
    generation += 1;
    keyState = "unknown"; // until the server answers with this key
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
    status.textContent = keyStatus(key, keyState);
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
