// A small fetch transport for graphsvc's GraphQL API, and one method per generated operation.
// The operations and their types come from operations/graphsvc.graphql through graphql-codegen
// (src/gql/, generated: do not edit); this file only sends them and maps failures to
// GraphsvcError, graphsvc's error codes as a typed error.

import {
  BundleDocument,
  type BundleQuery,
  type BundleQueryVariables,
  ForgetDocument,
  type ForgetMutation,
  type ForgetMutationVariables,
  HistoryDocument,
  type HistoryQuery,
  type HistoryQueryVariables,
  LinkDocument,
  type LinkMutation,
  type LinkMutationVariables,
  MemoriesDocument,
  type MemoriesQuery,
  type MemoriesQueryVariables,
  MemoryDocument,
  type MemoryQuery,
  type MemoryQueryVariables,
  PromptBundleDocument,
  type PromptBundleQuery,
  type PromptBundleQueryVariables,
  ReconstructAndStoreDocument,
  type ReconstructAndStoreMutation,
  type ReconstructAndStoreMutationVariables,
  ReconstructDocument,
  type ReconstructQuery,
  type ReconstructQueryVariables,
  RememberDocument,
  type RememberManyMutation,
  type RememberManyMutationVariables,
  RememberManyDocument,
  type RememberMutation,
  type RememberMutationVariables,
  type TypedDocumentString,
  ViewerDocument,
  type ViewerQuery,
} from "./gql/graphql.js";

export const DEFAULT_URL = "http://127.0.0.1:8000/graphql";

/** graphsvc's error codes (`extensions.code`), plus the client's own for other failures. */
export const ERROR_CODES = [
  "BAD_INPUT",
  "NOT_FOUND",
  "LIMIT_EXCEEDED",
  "UNAVAILABLE",
  "UNAUTHENTICATED",
  "FORBIDDEN",
  /** An answer that is not a GraphQL result, or an error without a known code. */
  "UNKNOWN",
] as const;

export type GraphsvcErrorCode = (typeof ERROR_CODES)[number];

/** One error of a GraphQL response, as graphsvc sends it. */
export interface GraphQLErrorEntry {
  message: string;
  path?: ReadonlyArray<string | number>;
  extensions?: { code?: string; [key: string]: unknown };
}

/**
 * A failed request: `code` is graphsvc's code (the first error's, as the Python client does);
 * `UNAVAILABLE` also when the server cannot be reached or answers 502-504.
 */
export class GraphsvcError extends Error {
  override readonly name = "GraphsvcError";

  constructor(
    readonly code: GraphsvcErrorCode,
    message: string,
    /** The HTTP status, when there was an answer. */
    readonly status?: number,
    /** Every error of the response, when it was a GraphQL result. */
    readonly errors: readonly GraphQLErrorEntry[] = [],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

function codeOf(value: unknown): GraphsvcErrorCode {
  return (ERROR_CODES as readonly unknown[]).includes(value) && value !== "UNKNOWN"
    ? (value as GraphsvcErrorCode)
    : "UNKNOWN";
}

export interface GraphsvcClientOptions {
  /** The GraphQL endpoint (`http://host:port/graphql`). */
  url?: string;
  /** Sent as `Authorization: Bearer <key>`; the key decides the namespace. */
  apiKey?: string;
  /** Milliseconds per request (default 30 000). */
  timeoutMs?: number;
  /** A fetch to use instead of the global one (tests, proxies). */
  fetch?: typeof globalThis.fetch;
}

/** Variables with their defaults made optional (codegen types `$step: Int! = 0` as required). */
type WithStep<V> = Omit<V, "step"> & { step?: number };

/** A typed client for graphsvc's GraphQL API. Constructing it does no I/O. */
export class GraphsvcClient {
  readonly url: string;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #fetch: typeof globalThis.fetch;

  constructor(options: GraphsvcClientOptions = {}) {
    this.url = options.url ?? DEFAULT_URL;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#headers = { "Content-Type": "application/json", Accept: "application/json" };
    if (options.apiKey) this.#headers.Authorization = `Bearer ${options.apiKey}`;
  }

  /** Run any generated operation; its `data`, or a GraphsvcError. */
  async request<TResult, TVariables>(
    document: TypedDocumentString<TResult, TVariables>,
    variables: TVariables,
  ): Promise<TResult> {
    let response: Response;
    try {
      response = await this.#fetch(this.url, {
        method: "POST",
        headers: this.#headers,
        body: JSON.stringify({ query: document.toString(), variables }),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (cause) {
      throw new GraphsvcError(
        "UNAVAILABLE",
        `cannot reach graphsvc at ${this.url} (${String(cause)}): check the URL and that the ` +
          "server runs, then retry",
        undefined,
        [],
        { cause },
      );
    }
    const text = await response.text();
    let payload: { data?: TResult | null; errors?: GraphQLErrorEntry[] } | undefined;
    try {
      payload = JSON.parse(text) as typeof payload;
    } catch {
      payload = undefined;
    }
    const errors = payload?.errors ?? [];
    if (errors.length > 0) {
      const message = errors.map((e) => e.message).join("; ");
      throw new GraphsvcError(codeOf(errors[0]?.extensions?.code), message, response.status, errors);
    }
    if ([502, 503, 504].includes(response.status)) {
      throw new GraphsvcError(
        "UNAVAILABLE",
        `graphsvc at ${this.url} answered HTTP ${response.status}: retry later`,
        response.status,
      );
    }
    if (response.status !== 200 || payload?.data == null) {
      throw new GraphsvcError(
        "UNKNOWN",
        `graphsvc at ${this.url} answered HTTP ${response.status} without a GraphQL result: ` +
          JSON.stringify(text.slice(0, 200)),
        response.status,
      );
    }
    return payload.data;
  }

  /** What memory offers a prompt for `query` under a token budget (with `asOf`, as then). */
  async bundle(variables: WithStep<BundleQueryVariables>): Promise<BundleQuery["bundle"]> {
    return (await this.request(BundleDocument, { step: 0, ...variables })).bundle;
  }

  /** The belief memory supports about `cue`, read only. */
  async reconstruct(variables: ReconstructQueryVariables): Promise<ReconstructQuery["reconstruct"]> {
    return (await this.request(ReconstructDocument, variables)).reconstruct;
  }

  /** Reconstruct and store the belief (the mutation; with `runId`, an event is recorded). */
  async reconstructAndStore(
    variables: WithStep<ReconstructAndStoreMutationVariables>,
  ): Promise<ReconstructAndStoreMutation["reconstruct"]> {
    return (await this.request(ReconstructAndStoreDocument, { step: 0, ...variables })).reconstruct;
  }

  /** A prompt assembled for the user turn, with memory inside it. */
  async promptBundle(
    input: PromptBundleQueryVariables["input"],
  ): Promise<PromptBundleQuery["promptBundle"]> {
    return (await this.request(PromptBundleDocument, { input })).promptBundle;
  }

  /** Write one memory (the same id and content again is a no-op). */
  async remember(
    variables: WithStep<RememberMutationVariables>,
  ): Promise<RememberMutation["remember"]> {
    return (await this.request(RememberDocument, { step: 0, ...variables })).remember;
  }

  /** Write memories, all or nothing, in input order. */
  async rememberMany(
    variables: WithStep<RememberManyMutationVariables>,
  ): Promise<RememberManyMutation["rememberMany"]> {
    return (await this.request(RememberManyDocument, { step: 0, ...variables })).rememberMany;
  }

  /** Link two memories of the namespace. */
  async link(input: LinkMutationVariables["input"]): Promise<LinkMutation["link"]> {
    return (await this.request(LinkDocument, { input })).link;
  }

  /** Remove a memory, its links and the beliefs built on it; the receipt. */
  async forget(id: ForgetMutationVariables["id"]): Promise<ForgetMutation["forget"]> {
    return (await this.request(ForgetDocument, { id })).forget;
  }

  /** A memory by id, or null. */
  async memory(id: MemoryQueryVariables["id"]): Promise<MemoryQuery["memory"]> {
    return (await this.request(MemoryDocument, { id })).memory;
  }

  /** A page of memories, newest first (`knownAsOf`: as memory held them then). */
  async memories(variables: MemoriesQueryVariables = {}): Promise<MemoriesQuery["memories"]> {
    return (await this.request(MemoriesDocument, variables)).memories;
  }

  /** A memory's fact history over SUPERSEDES links, oldest first; null when it does not exist. */
  async history(id: HistoryQueryVariables["id"]): Promise<NonNullable<HistoryQuery["memory"]>["history"] | null> {
    return (await this.request(HistoryDocument, { id })).memory?.history ?? null;
  }

  /** The caller's namespace and role. */
  async viewer(): Promise<ViewerQuery["viewer"]> {
    return (await this.request(ViewerDocument, {})).viewer;
  }
}
