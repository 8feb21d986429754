/** A run: its context events in order and the drift of graphsvc's token estimates. */

import { gql } from "../api";
import type { App, ViewController } from "../app";
import { h, replace } from "../dom";
import { driftChart } from "../chart";
import { formatDate } from "../format";
import { RUN } from "../queries";
import type { State } from "../state";
import type { ContextEvent, DriftReport } from "../types";
import { Loader, facts } from "./common";

type Cell = number | string | null;

/** A table; the columns named in `numeric` are right-aligned (an empty value shows as a dash). */
function table(caption: string, headers: string[], numeric: string[], rows: Cell[][], id: string): HTMLElement {
  const align = headers.map((name) => (numeric.includes(name) ? "num" : null));
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { id },
      h("caption", {}, caption),
      h("thead", {}, h("tr", {}, ...headers.map((name, i) => h("th", { scope: "col", class: align[i] }, name)))),
      h(
        "tbody",
        {},
        ...rows.map((row) => h("tr", {}, ...row.map((value, i) => h("td", { class: align[i] }, value === null ? "–" : String(value))))),
      ),
    ),
  );
}

function renderRun(runId: string, events: ContextEvent[], drift: DriftReport): HTMLElement {
  if (!events.length) {
    return h("p", { class: "muted" }, `No context event is recorded for run ${runId}.`);
  }
  const ratio = drift.ratio === null ? "no step reported yet" : `${drift.ratio.toFixed(3)} (reported / estimated)`;
  return h(
    "div",
    { class: "run", id: "run-result" },
    h("h3", {}, "Token drift"),
    facts([
      ["Estimated (reported steps)", `${drift.estimatedTokens} tokens`],
      ["Reported", `${drift.reportedTokens} tokens`],
      ["Ratio", ratio],
      ["Unreported steps", drift.unreportedSteps.length ? drift.unreportedSteps.join(", ") : "none"],
    ]),
    drift.steps.length
      ? h(
          "figure",
          { class: "chart" },
          driftChart(drift.steps, "drift-title"),
          h(
            "figcaption",
            {},
            h("span", { class: "swatch swatch-est" }),
            "estimated by graphsvc ",
            h("span", { class: "swatch swatch-reported" }),
            "reported by the provider (n/r: not reported)",
          ),
        )
      : h("p", { class: "muted" }, "No assembled step: call promptBundle with this runId to measure drift."),
    table(
      "Per step",
      ["Step", "Estimated", "Reported", "Ratio"],
      ["Step", "Estimated", "Reported", "Ratio"],
      drift.steps.map((s) => [s.step, s.estTokens, s.reportedTokens, s.ratio === null ? null : s.ratio.toFixed(3)]),
      "drift-steps",
    ),
    h("h3", {}, `Context events (${events.length})`),
    table(
      "In the order recorded",
      ["Seq", "Step", "Kind", "Detail", "Estimated", "Reported", "Recorded"],
      ["Seq", "Step", "Estimated", "Reported"],
      events.map((e) => [e.seq, e.step, e.kind, e.detail, e.estTokens, e.reportedTokens, formatDate(e.recordedAt)]),
      "run-events",
    ),
  );
}

export function runView(root: HTMLElement, app: App): ViewController {
  const run = h("input", { type: "text", id: "run-id", name: "run", required: true, autocomplete: "off", placeholder: "the runId your agent sends" });
  const results = h("section", { id: "run-results", class: "results", "aria-live": "polite", "aria-label": "Run" });
  const loader = new Loader(results);
  const form = h(
    "form",
    {
      class: "controls",
      onsubmit: (event: Event) => {
        event.preventDefault();
        app.go({ run: run.value.trim() });
      },
    },
    h("div", { class: "field wide" }, h("label", { for: "run-id" }, "Run id"), run),
    h("div", { class: "field submit" }, h("button", { type: "submit" }, "Show run")),
  );
  replace(
    root,
    h("h2", {}, "A run's context"),
    h("p", { class: "lead" }, "What graphsvc recorded for an agent run, and how far its token estimates are from the provider's counts."),
    form,
    results,
  );

  let shown: string | null = null;
  const update = (state: State): void => {
    run.value = state.run;
    if (state.run === shown) {
      return;
    }
    shown = state.run;
    if (!state.run) {
      loader.cancel();
      replace(results, h("p", { class: "muted" }, "Enter a run id (the runId passed to promptBundle, bundle or remember)."));
      return;
    }
    const runId = state.run;
    loader.run(
      "Loading the run",
      () => gql<{ contextEvents: ContextEvent[]; drift: DriftReport }>(RUN, { runId }),
      (data) => results.append(renderRun(runId, data.contextEvents, data.drift)),
    );
  };
  return {
    update,
    refresh: () => {
      shown = null;
      update(app.state);
    },
    destroy: () => loader.cancel(),
  };
}
