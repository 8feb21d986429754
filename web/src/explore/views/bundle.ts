/** Ask: the bundle memory offers a question, with what it leaves out and why. */

import { gql } from "../api";
import type { App, ViewController } from "../app";
import { exportButton, field, h, replace, select } from "../dom";
import { clip, formatDay, formatScore, memoryDate, percent, REASONS, VALIDITY } from "../format";
import { BUNDLE } from "../queries";
import { int, num } from "../state";
import type { State } from "../state";
import type { Bundle, Capsule, OrderReason } from "../types";
import { AsOfControls, asOfUsed, asOfVariables } from "./asof";
import { Loader, facts, meter } from "./common";

/** Whether a capsule's memory is true at the bundle's instant, and until when it was. */
function validityBadge(capsule: Capsule): HTMLElement | null {
  const state = capsule.validity ?? "CURRENT";
  if (state === "CURRENT") {
    return h("span", { class: "validity current", "data-validity": state }, "current");
  }
  const bound = state === "NOT_YET" ? capsule.validFrom : capsule.validUntil;
  const when = bound ? ` ${state === "NOT_YET" ? "from" : "until"} ${formatDay(bound)}` : "";
  return h(
    "span",
    { class: "validity closed", "data-validity": state, title: "not true at the bundle's instant" },
    `${VALIDITY[state] ?? state}${when}`,
  );
}

function capsuleCard(capsule: Capsule, app: App): HTMLLIElement {
  const dated = capsule.occurredAt ?? capsule.validFrom;
  return h(
    "li",
    { class: "capsule card", "data-memory-id": capsule.memoryId, "data-validity": capsule.validity ?? "CURRENT" },
    h(
      "div",
      { class: "capsule-head" },
      h("span", { class: "score", title: "composite score in [0, 1]" }, `score ${formatScore(capsule.score)}`),
      h("span", { class: "badge" }, capsule.kind),
      h("span", {}, `${capsule.tokens} tokens`),
      h("time", dated ? { datetime: dated } : {}, memoryDate(capsule)),
      validityBadge(capsule),
      h("span", { class: "reason", title: REASONS[capsule.reason ?? ""] ?? "" }, capsule.reason ?? ""),
    ),
    h("p", { class: "capsule-text" }, capsule.text),
    capsule.matchedWords.length
      ? h("p", { class: "matched" }, "matched: ", capsule.matchedWords.join(", "))
      : null,
    h(
      "a",
      { class: "action", href: app.href({ view: "belief", node: capsule.memoryId }) },
      "Explore its links",
    ),
  );
}

function exclusions(excluded: Capsule[]): HTMLElement {
  if (!excluded.length) {
    return h("p", { class: "muted" }, "Nothing ranked was left out.");
  }
  const body = h("tbody");
  for (const capsule of excluded) {
    body.append(
      h(
        "tr",
        { "data-memory-id": capsule.memoryId },
        h("td", {}, clip(capsule.text, 140)),
        h("td", { class: "num" }, formatScore(capsule.score)),
        h("td", { class: "num" }, String(capsule.tokens)),
        h("td", {}, h("code", {}, capsule.reason ?? ""), " ", h("span", { class: "muted" }, REASONS[capsule.reason ?? ""] ?? "")),
      ),
    );
  }
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "excluded" },
      h("caption", {}, "Ranked memories left out, with the reason"),
      h(
        "thead",
        {},
        h("tr", {}, h("th", { scope: "col" }, "Memory"), h("th", { scope: "col" }, "Score"), h("th", { scope: "col" }, "Tokens"), h("th", { scope: "col" }, "Reason")),
      ),
      body,
    ),
  );
}

/** Why the capsules are in the order shown, as the bundle says (never a guess). */
const ORDER_REASONS: Record<OrderReason, string> = {
  QUESTION_ASKS_ORDER: "the question asks about order",
  EVIDENCE_SPANS_DAYS: "the evidence spans several days",
};

function orderText(bundle: Bundle): string {
  if (!bundle.chronological) {
    return "by score";
  }
  return bundle.orderReason ? `oldest first, dated (${ORDER_REASONS[bundle.orderReason]})` : "oldest first, dated";
}

export function renderBundle(bundle: Bundle, app: App): HTMLElement {
  const verdict = bundle.skipped
    ? h(
        "div",
        { class: "verdict abstain", id: "verdict" },
        h("strong", {}, "Memory abstains"),
        ` top score ${formatScore(bundle.topScore)} is below minScore ${formatScore(bundle.minScore)}: no capsules are offered.`,
      )
    : h(
        "div",
        { class: "verdict answer", id: "verdict" },
        h("strong", {}, "Memory answers"),
        ` top score ${formatScore(bundle.topScore)} ≥ minScore ${formatScore(bundle.minScore)}.`,
      );
  const uncovered = bundle.uncoveredWords.length
    ? h("ul", { class: "terms", "aria-label": "Uncovered words" }, ...bundle.uncoveredWords.map((w) => h("li", {}, w)))
    : h("p", { class: "muted" }, "Every discriminating word of the question is covered.");
  return h(
    "div",
    { class: "bundle", id: "bundle-result" },
    verdict,
    asOfUsed(bundle.asOf),
    h(
      "div",
      { class: "summary-grid" },
      h(
        "div",
        { id: "coverage" },
        meter("Evidence coverage", bundle.evidenceCoverage, percent(bundle.evidenceCoverage), "coverage-meter"),
        meter(
          "Budget used",
          bundle.budgetTokens ? bundle.usedTokens / bundle.budgetTokens : 0,
          `${bundle.usedTokens} of ${bundle.budgetTokens} tokens`,
          "budget-meter",
          false,
        ),
      ),
      facts([
        ["Stage", bundle.stage],
        ["Capsules", `${bundle.capsules.length} packed, ${bundle.excluded.length} left out`],
        ["Order", orderText(bundle)],
      ]),
    ),
    h("h3", {}, "Not covered by memory"),
    uncovered,
    h("h3", {}, `Capsules (${bundle.capsules.length})`),
    bundle.capsules.length
      ? h("ol", { class: "capsules" }, ...bundle.capsules.map((c) => capsuleCard(c, app)))
      : h("p", { class: "muted" }, "No capsule was packed."),
    h("h3", {}, `Left out (${bundle.excluded.length})`),
    exclusions(bundle.excluded),
    h("details", { class: "rendered" }, h("summary", {}, "The rendered text for a prompt"), h("pre", {}, bundle.rendered || "(empty)")),
    h("div", { class: "actions-row" }, exportButton("export-bundle", "Export the bundle as JSON", "bundle.json", () => bundle)),
  );
}

export function bundleView(root: HTMLElement, app: App): ViewController {
  const q = h("input", { type: "search", name: "q", required: true, autocomplete: "off", placeholder: "e.g. why did checkout time out?" });
  const budget = h("input", { type: "number", name: "budget", min: 1, step: 1, inputmode: "numeric", placeholder: "1000" });
  const stage = select("stage", [["", "default"], ["recent", "recent"], ["exact", "exact"]], "");
  const minScore = h("input", { type: "number", name: "minScore", min: 0, max: 1, step: 0.01, inputmode: "decimal", placeholder: "stage's" });
  const maxCapsules = h("input", { type: "number", name: "maxCapsules", min: 1, step: 1, inputmode: "numeric", placeholder: "20" });
  const asOf = new AsOfControls();
  const results = h("section", { id: "bundle-results", class: "results", "aria-live": "polite", "aria-label": "Bundle" });
  const loader = new Loader(results);
  const form = h(
    "form",
    {
      class: "controls",
      onsubmit: (event: Event) => {
        event.preventDefault();
        app.go({
          q: q.value.trim(),
          budget: budget.value,
          stage: stage.value,
          minScore: minScore.value,
          maxCapsules: maxCapsules.value,
          ...asOf.read(),
          node: "",
        });
      },
    },
    h("div", { class: "field wide" }, h("label", { for: "ask-q" }, "Question"), Object.assign(q, { id: "ask-q" })),
    field("Budget (tokens)", budget),
    field("Stage", stage),
    field("minScore", minScore, "abstain below this top score; empty: the stage's own threshold, 0: never abstain"),
    field("Most capsules", maxCapsules),
    ...asOf.fields,
    h("div", { class: "field submit" }, h("button", { type: "submit" }, "Ask")),
  );
  replace(
    root,
    h("h2", {}, "Ask a question"),
    h("p", { class: "lead" }, "What memory would put into a prompt under a token budget, and what it does not cover."),
    form,
    results,
  );

  let shown = "";
  const update = (state: State): void => {
    q.value = state.q;
    budget.value = state.budget;
    stage.value = state.stage;
    minScore.value = state.minScore;
    maxCapsules.value = state.maxCapsules;
    asOf.show(state);
    const key = JSON.stringify([state.q, state.budget, state.stage, state.minScore, state.maxCapsules, state.asOf, state.asOfMode]);
    if (key === shown) {
      return;
    }
    shown = key;
    if (!state.q) {
      loader.cancel();
      replace(results, h("p", { class: "muted" }, "Ask something memory might know."));
      return;
    }
    loader.run(
      "Asking",
      () =>
        gql<{ bundle: Bundle }>(BUNDLE, {
          query: state.q,
          budgetTokens: int(state.budget),
          stage: state.stage || undefined,
          minScore: num(state.minScore),
          maxCapsules: int(state.maxCapsules),
          ...asOfVariables(state),
        }),
      (data) => results.append(renderBundle(data.bundle, app)),
    );
  };
  return {
    update,
    refresh: () => {
      shown = "";
      update(app.state);
    },
    destroy: () => loader.cancel(),
  };
}
