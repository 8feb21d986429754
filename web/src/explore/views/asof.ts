/**
 * "As of": read memory as it stood at an instant. KNOWN shows what was recorded by then (the
 * audit view); VALID what was true then, as memory knows it now (the API's default). Both are in
 * the URL (`asOf=2024-03-11T09:30&asOfMode=KNOWN`); times without a zone are UTC, as everywhere
 * in the explorer.
 */

import { field, h, select } from "../dom";
import { formatDate } from "../format";
import type { State } from "../state";
import type { AsOf } from "../types";

export const AS_OF_MODES: Array<[string, string]> = [
  ["", "VALID: what was true then"],
  ["KNOWN", "KNOWN: what was recorded by then"],
];

/** The API's DateTime for a URL value: `2024-03-11` and `2024-03-11T09:30` are UTC. */
export function asOfInstant(value: string): string | undefined {
  if (!value) {
    return undefined;
  }
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    return `${value}T00:00:00Z`;
  }
  const local = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(:\d{2}(\.\d+)?)?$/.exec(value);
  if (local) {
    return `${local[1]}${local[2] ?? ":00"}Z`;
  }
  return value;
}

/** The mode a state asks for: KNOWN, or VALID (the default, also for unknown values). */
export function asOfMode(state: State): "KNOWN" | "VALID" {
  return state.asOfMode === "KNOWN" ? "KNOWN" : "VALID";
}

/** `asOf` and `asOfMode` for a bundle, or nothing when the state reads now. */
export function asOfVariables(state: State): { asOf?: string; asOfMode?: string } {
  const at = asOfInstant(state.asOf);
  return at ? { asOf: at, asOfMode: asOfMode(state) } : {};
}

/** The "as of" input (to the second, UTC) and the mode selector of a form. */
export class AsOfControls {
  readonly at = h("input", { type: "datetime-local", name: "asOf", step: 1 });
  readonly mode = select("asOfMode", AS_OF_MODES, "");
  readonly fields: HTMLElement[];
  /** The URL's value and what the input shows for it (finer instants are kept unless edited). */
  private shown: [string, string] = ["", ""];

  constructor() {
    this.fields = [field("As of (UTC)", this.at, "empty: now"), field("View of the past", this.mode)];
  }

  /** The URL changes the form asks for. */
  read(): Pick<State, "asOf" | "asOfMode"> {
    const [fromUrl, asShown] = this.shown;
    const at = asShown && this.at.value === asShown ? fromUrl : this.at.value;
    return { asOf: at, asOfMode: at ? this.mode.value : "" };
  }

  /** Show a state's values. */
  show(state: State): void {
    const at = asOfInstant(state.asOf);
    const date = at ? new Date(at) : null;
    const value = date && !Number.isNaN(date.getTime()) ? date.toISOString().slice(0, 19) : "";
    this.at.value = value;
    this.shown = [state.asOf, this.at.value];
    this.mode.value = state.asOfMode === "KNOWN" ? "KNOWN" : "";
  }
}

/** Which view of memory an answer used, from the echoed `asOf` (null: now). */
export function asOfUsed(asOf: AsOf | null | undefined): HTMLElement {
  if (!asOf) {
    return h("p", { class: "as-of-used", id: "as-of-used" }, "As of now: everything memory holds.");
  }
  const what =
    asOf.mode === "KNOWN" ? "what memory had recorded by then" : "what was true then, as memory knows it now";
  return h(
    "p",
    { class: "as-of-used past", id: "as-of-used", "data-mode": asOf.mode },
    h("strong", {}, `As of ${formatDate(asOf.at)}, ${asOf.mode}`),
    `: ${what}.`,
  );
}
