/**
 * "As of": read memory as it stood at an instant. KNOWN shows what was recorded by then (the
 * audit view); VALID what was true then, as memory knows it now (the API's default). Both are in
 * the URL (`asOf=2024-03-11T09:30&asOfMode=KNOWN`); times without a zone are UTC, as everywhere
 * in the explorer.
 */

import { gql } from "../api";
import { field, h, select } from "../dom";
import { formatDate } from "../format";
import { OVERVIEW } from "../queries";
import type { State } from "../state";
import type { AsOf, Overview } from "../types";

/** The most days the slider steps through (the overview's limit): the latest days memory holds. */
const SLIDER_DAYS = 366;

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

  /** A slider over the days memory holds, oldest on the left; its far right is "now". */
  readonly slider = h("input", { type: "range", name: "asOfDay", min: 0, max: 0, step: 1, value: 0, disabled: true });
  /** The days the slider steps through, oldest first (YYYY-MM-DD, UTC). */
  private days: string[] = [];

  constructor() {
    this.fields = [
      field("As of (UTC)", this.at, "empty: now"),
      field("Move through time", this.slider, "the days memory holds, oldest on the left; far right: now"),
      field("View of the past", this.mode),
    ];
    this.slider.setAttribute("aria-valuetext", "now");
    this.slider.addEventListener("input", () => this.slide());
    this.slider.addEventListener("change", () => {
      this.slide();
      this.at.form?.requestSubmit();
    });
    void this.loadDays();
  }

  /** The days of the namespace's overview; without it (no key yet) the input alone is used. */
  private async loadDays(): Promise<void> {
    try {
      const data = await gql<{ overview: Overview }>(OVERVIEW, { top: 1, days: SLIDER_DAYS });
      this.days = data.overview.days.top.map((day) => day.value).sort();
    } catch {
      return;
    }
    this.slider.max = String(this.days.length);
    this.slider.disabled = this.days.length === 0;
    this.place();
  }

  /** The slider's day, as the end of that day in the input (far right: now, the input empty). */
  private slide(): void {
    const index = Number(this.slider.value);
    const day = this.days[index];
    this.at.value = day === undefined ? "" : `${day}T23:59:59`;
    this.slider.setAttribute("aria-valuetext", day ?? "now");
  }

  /** The slider on the first day at or after the input's (far right when the input is empty). */
  private place(): void {
    const day = this.at.value.slice(0, 10);
    const index = day ? this.days.findIndex((each) => each >= day) : -1;
    const at = index === -1 ? this.days.length : index;
    this.slider.value = String(at);
    this.slider.setAttribute("aria-valuetext", this.days[at] ?? "now");
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
