/**
 * "As of": read memory as it stood at an instant. KNOWN shows what was recorded by then (the
 * audit view); VALID what was true then, as memory knows it now (the API's default). Both are in
 * the URL (`asOf=2024-03-11T09:30&asOfMode=KNOWN`); times without a zone are UTC, as everywhere
 * in the explorer.
 */

import { gql } from "../api";
import { field, h, select } from "../dom";
import { formatDate } from "../format";
import { AS_OF_DAYS } from "../queries";
import type { State } from "../state";
import type { AsOf } from "../types";

/** The most days the slider steps through (the API's limit): the latest days a view changes. */
const SLIDER_DAYS = 366;

export const AS_OF_MODES: Array<[string, string]> = [
  ["", "VALID: what was true then"],
  ["KNOWN", "KNOWN: what was recorded by then"],
];

/** The API's DateTime for a URL value: `2024-03-11`, `2024-03-11T09:30` and `...Z` are UTC. */
export function asOfInstant(value: string): string | undefined {
  if (!value) {
    return undefined;
  }
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    return `${value}T00:00:00Z`;
  }
  const local = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(:\d{2}(\.\d+)?)?Z?$/.exec(value);
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

/** An instant as the input shows it: ISO 8601 in UTC to the second (`2024-03-11T00:00:00Z`). */
function isoShown(value: string): string {
  const at = asOfInstant(value);
  const date = at ? new Date(at) : null;
  return date && !Number.isNaN(date.getTime()) ? `${date.toISOString().slice(0, 19)}Z` : "";
}

/**
 * The "as of" input (ISO 8601, UTC), the mode selector and a slider over the days the chosen
 * view changes: for VALID the days a fact became or stopped being true (a supersession is the
 * day the newer fact starts), for KNOWN the days memories were recorded. A step is the end of
 * its day; the far right is now. The input and the slider always agree: typing an instant puts
 * the slider on the last change at or before it.
 */
export class AsOfControls {
  readonly at = h("input", {
    type: "text",
    name: "asOf",
    inputmode: "numeric",
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "YYYY-MM-DD or 2024-03-11T09:30:00Z",
    pattern: "\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2})?Z?)?",
  });
  readonly mode = select("asOfMode", AS_OF_MODES, "");
  readonly fields: HTMLElement[];
  /** The URL's value and what the input shows for it (finer instants are kept unless edited). */
  private shown: [string, string] = ["", ""];

  readonly slider = h("input", { type: "range", name: "asOfDay", min: 0, max: 0, step: 1, value: 0, disabled: true });
  /** The days the slider steps through, oldest first (YYYY-MM-DD, UTC), for `daysMode`. */
  private days: string[] = [];
  private daysMode = "";

  constructor() {
    this.fields = [
      field("As of (UTC)", this.at, "ISO 8601; empty: now"),
      field("Move through time", this.slider, "the days this view changes, oldest on the left; far right: now"),
      field("View of the past", this.mode),
    ];
    this.slider.setAttribute("aria-valuetext", "now");
    this.slider.addEventListener("input", () => this.slide());
    this.slider.addEventListener("change", () => {
      this.slide();
      this.at.form?.requestSubmit();
    });
    this.at.addEventListener("input", () => this.place());
    this.mode.addEventListener("change", () => void this.loadDays());
    void this.loadDays();
  }

  private currentMode(): "KNOWN" | "VALID" {
    return this.mode.value === "KNOWN" ? "KNOWN" : "VALID";
  }

  /** The days the chosen view changes; without them (no key yet) the input alone is used. */
  private async loadDays(): Promise<void> {
    const mode = this.currentMode();
    if (mode === this.daysMode) {
      return;
    }
    this.daysMode = mode;
    try {
      const data = await gql<{ asOfDays: string[] }>(AS_OF_DAYS, { mode, days: SLIDER_DAYS });
      if (this.daysMode !== mode) {
        return; // the mode changed meanwhile
      }
      this.days = data.asOfDays;
    } catch {
      this.days = [];
    }
    this.slider.max = String(this.days.length);
    this.slider.disabled = this.days.length === 0;
    this.slider.dataset.mode = mode;
    this.slider.dataset.days = this.days.join(" ");
    this.place();
  }

  /** The slider's day, as the end of that day in the input (far right: now, the input empty). */
  private slide(): void {
    const index = Number(this.slider.value);
    const day = this.days[index];
    this.at.value = day === undefined ? "" : `${day}T23:59:59Z`;
    this.slider.setAttribute("aria-valuetext", day ?? "now");
  }

  /** The slider on the last day at or before the input's (far right when the input is empty). */
  private place(): void {
    const shown = isoShown(this.at.value);
    const day = shown.slice(0, 10);
    let at = this.days.length;
    if (day) {
      at = -1;
      for (let i = 0; i < this.days.length && this.days[i] <= day; i += 1) {
        at = i;
      }
      at = Math.max(at, 0);
    }
    this.slider.value = String(at);
    this.slider.setAttribute("aria-valuetext", this.days[at] ?? "now");
  }

  /** The URL changes the form asks for. */
  read(): Pick<State, "asOf" | "asOfMode"> {
    const [fromUrl, asShown] = this.shown;
    const typed = this.at.value.trim();
    const at = asShown && typed === asShown ? fromUrl : typed;
    return { asOf: at, asOfMode: at ? this.mode.value : "" };
  }

  /** Show a state's values. */
  show(state: State): void {
    this.at.value = isoShown(state.asOf);
    this.shown = [state.asOf, this.at.value];
    this.mode.value = state.asOfMode === "KNOWN" ? "KNOWN" : "";
    void this.loadDays();
    this.place();
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
