/** Pieces the views share: loading and error states, a stale-response guard. */

import { ApiError } from "../api";
import { h, notice, replace } from "../dom";

/** Show a request's progress in `region` and its outcome; ignore it once a newer one started. */
export class Loader {
  private generation = 0;

  constructor(private readonly region: HTMLElement) {}

  /** Run `load`, then `show` its result unless a newer load started meanwhile. */
  run<T>(label: string, load: () => Promise<T>, show: (value: T) => void): void {
    this.generation += 1;
    const mine = this.generation;
    this.region.setAttribute("aria-busy", "true");
    replace(this.region, h("p", { class: "loading" }, `${label}…`));
    load().then(
      (value) => {
        if (mine === this.generation) {
          this.region.setAttribute("aria-busy", "false");
          replace(this.region);
          show(value);
        }
      },
      (error: unknown) => {
        if (mine === this.generation) {
          this.region.setAttribute("aria-busy", "false");
          replace(this.region, errorNotice(error));
        }
      },
    );
  }

  /** Forget pending loads (their results are dropped). */
  cancel(): void {
    this.generation += 1;
  }
}

export function errorNotice(error: unknown): HTMLElement {
  if (error instanceof ApiError) {
    return notice("error", h("strong", {}, `${error.code}: `), error.message);
  }
  return notice("error", `Unexpected error: ${String(error)}`);
}

/**
 * A `<meter>` in [0, 1] with its label and its value in words. `graded`: low values show as poor
 * (coverage, confidence); otherwise the bar is neutral (a budget's use).
 */
export function meter(label: string, value: number, text: string, id: string, graded = true): HTMLElement {
  const bounds = graded ? { low: 0.34, high: 0.67, optimum: 1 } : {};
  return h(
    "div",
    { class: "meter-row" },
    h("label", { for: id }, label),
    h("meter", { id, min: 0, max: 1, ...bounds, value: Math.max(0, Math.min(1, value)) }),
    h("span", { class: "meter-value" }, text),
  );
}

/** A `<dl>` of label/value pairs. */
export function facts(pairs: Array<[string, Node | string]>): HTMLDListElement {
  const list = h("dl", { class: "facts" });
  for (const [term, value] of pairs) {
    list.append(h("div", {}, h("dt", {}, term), h("dd", {}, value)));
  }
  return list;
}
