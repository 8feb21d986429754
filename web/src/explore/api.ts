/**
 * The explorer's only way to the server: GraphQL POSTs to the public API, with the tab's API key.
 */

import { authHeaders, readApiKey } from "../shared/apikey";

/** A request that did not give data: the server's message and code, or why it never arrived. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

interface GraphQLErrorBody {
  message?: unknown;
  extensions?: { code?: unknown };
}

interface GraphQLBody<T> {
  data?: T | null;
  errors?: GraphQLErrorBody[];
}

/** The GraphQL endpoint, relative to this page (`/explore` -> `/graphql`, also under a prefix). */
export const ENDPOINT = new URL("graphql", window.location.href).pathname;

function describe(code: string, message: string): string {
  if (code === "UNAUTHENTICATED") {
    return `${message} Enter an API key at the top of the page.`;
  }
  if (code === "FORBIDDEN") {
    return `${message} This needs a key with the 'write' role.`;
  }
  return message;
}

/**
 * Run one operation and return its data.
 *
 * Throws ApiError with the first GraphQL error (its `extensions.code`), the HTTP status when the
 * body is not GraphQL, or code NETWORK when the server cannot be reached.
 */
export async function gql<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  let response: Response;
  try {
    response = await fetch(ENDPOINT, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/graphql-response+json, application/json",
        ...authHeaders(readApiKey()),
      },
      body: JSON.stringify({ query, variables }),
      credentials: "same-origin",
    });
  } catch (error) {
    throw new ApiError(
      `The server did not answer (${String(error)}): check that graphsvc serve is running.`,
      "NETWORK",
      0,
    );
  }
  let body: GraphQLBody<T>;
  try {
    body = (await response.json()) as GraphQLBody<T>;
  } catch {
    throw new ApiError(
      `The server answered HTTP ${response.status} without a GraphQL body.`,
      "HTTP",
      response.status,
    );
  }
  const first = body.errors?.[0];
  if (first) {
    const code = typeof first.extensions?.code === "string" ? first.extensions.code : "ERROR";
    const message = typeof first.message === "string" ? first.message : "unknown error";
    throw new ApiError(describe(code, message), code, response.status);
  }
  if (body.data === undefined || body.data === null) {
    throw new ApiError(`The server answered HTTP ${response.status} with no data.`, "HTTP", response.status);
  }
  return body.data;
}
