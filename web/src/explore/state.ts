/**
 * Everything a view shows is named in the URL (`/explore?view=belief&q=...&depth=2`), so a link
 * shares the view and loading it renders the same result without interaction.
 */

export const VIEWS = ["bundle", "belief", "timeline", "run", "overview"] as const;
export type View = (typeof VIEWS)[number];

export interface State {
  view: View;
  /** The question (bundle) or cue (belief). */
  q: string;
  budget: string;
  stage: string;
  minScore: string;
  maxCapsules: string;
  k: string;
  depth: string;
  /** The selected memory (belief view). */
  node: string;
  kind: string;
  tag: string;
  since: string;
  until: string;
  run: string;
  /** Read as of this instant (bundle, timeline); empty: now. */
  asOf: string;
  /** KNOWN, or empty for VALID (the API's default). */
  asOfMode: string;
}

/** The parameters in URL order; empty ones are left out. */
const KEYS: Array<keyof State> = [
  "view",
  "q",
  "budget",
  "stage",
  "minScore",
  "maxCapsules",
  "k",
  "depth",
  "node",
  "kind",
  "tag",
  "since",
  "until",
  "run",
  "asOf",
  "asOfMode",
];

export function emptyState(view: View = "bundle"): State {
  return {
    view,
    q: "",
    budget: "",
    stage: "",
    minScore: "",
    maxCapsules: "",
    k: "",
    depth: "",
    node: "",
    kind: "",
    tag: "",
    since: "",
    until: "",
    run: "",
    asOf: "",
    asOfMode: "",
  };
}

function isView(value: string | null): value is View {
  return value !== null && (VIEWS as readonly string[]).includes(value);
}

/** The state a query string names (unknown parameters are ignored). */
export function parseState(search: string): State {
  const params = new URLSearchParams(search);
  const view = params.get("view");
  const state = emptyState(isView(view) ? view : params.get("run") ? "run" : "bundle");
  for (const key of KEYS) {
    if (key !== "view") {
      state[key] = (params.get(key) ?? "").trim();
    }
  }
  return state;
}

/** The query string of a state (`?view=...&q=...`), stable order, empty values left out. */
export function toSearch(state: State): string {
  const params = new URLSearchParams();
  for (const key of KEYS) {
    const value = state[key];
    if (value) {
      params.set(key, value);
    }
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** A copy of `state` with `changes`. */
export function withChanges(state: State, changes: Partial<State>): State {
  return { ...state, ...changes };
}

/** A number from a URL value, or undefined when empty or not a number. */
export function num(value: string): number | undefined {
  if (!value) {
    return undefined;
  }
  const parsed = Number(value);
  return Number.isFinite(parsed) ? parsed : undefined;
}

/** An integer from a URL value, or undefined. */
export function int(value: string): number | undefined {
  const parsed = num(value);
  return parsed === undefined ? undefined : Math.trunc(parsed);
}

/** A DateTime for the API from a day (`2024-03-12` is midnight UTC) or a full time. */
export function dateTime(value: string): string | undefined {
  if (!value) {
    return undefined;
  }
  return /^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value;
}
