/** Overview: a namespace at a glance (counts by kind, tag, source and day; causal components). */

import { gql } from "../api";
import type { App, ViewController } from "../app";
import { h, replace } from "../dom";
import { OVERVIEW } from "../queries";
import type { State } from "../state";
import type { Facet, Overview } from "../types";
import { Loader, facts } from "./common";

const TOP = 10;
const DAYS = 31;

function clip(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

function bar(percent: number): HTMLElement {
  const element = h("span", { class: "bar" });
  element.style.width = `${percent}%`; // through the CSSOM: the page's CSP allows no inline style
  return element;
}

/** A facet as a table of bars; `link` makes a value a link (to the filtered timeline). */
function facetTable(title: string, id: string, facet: Facet, link: ((value: string) => string) | null): HTMLElement {
  const most = Math.max(1, ...facet.top.map((entry) => entry.count));
  const rows = facet.top.map((entry) =>
    h(
      "tr",
      {},
      h("th", { scope: "row" }, link ? h("a", { href: link(entry.value) }, entry.value) : entry.value),
      h("td", { class: "count" }, String(entry.count)),
      h("td", { class: "bar-cell", "aria-hidden": "true" }, bar((100 * entry.count) / most)),
    ),
  );
  const shown = facet.top.length < facet.distinct ? ` (top ${facet.top.length} of ${facet.distinct})` : ` (${facet.distinct})`;
  return h(
    "section",
    { class: "facet", id },
    h("h3", {}, `${title}${shown}`),
    rows.length
      ? h("table", { class: "facet-table" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Value"), h("th", { scope: "col" }, "Count"), h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Share")))), h("tbody", {}, ...rows))
      : h("p", { class: "muted" }, "None."),
  );
}

function nextDay(day: string): string {
  const next = new Date(`${day}T00:00:00Z`);
  next.setUTCDate(next.getUTCDate() + 1);
  return next.toISOString().slice(0, 10);
}

export function overviewView(root: HTMLElement, app: App): ViewController {
  const results = h("section", { id: "overview-results", class: "results", "aria-live": "polite", "aria-label": "Overview" });
  const loader = new Loader(results);
  replace(
    root,
    h("h2", {}, "Overview of the namespace"),
    h("p", { class: "lead" }, "Counts are kept as memories are written; causal components are searched from the newest memories, within bounds the page states."),
    results,
  );
  let shown = false;
  const timeline = (changes: Partial<State>): string =>
    app.href({ view: "timeline", q: "", kind: "", tag: "", since: "", until: "", ...changes });

  const render = (data: Overview): void => {
    const days = [...data.days.top].reverse(); // oldest first, as a time axis reads
    const components = data.components.map((component) =>
      h(
        "li",
        { class: "component", "data-seed-id": component.seedId },
        h("a", { href: app.href({ view: "belief", q: "", node: component.seedId }) }, clip(component.seedText, 100)),
        h(
          "span",
          { class: "muted" },
          ` ${component.size} memories, ${component.links} causal link(s)${component.complete ? "" : ", seen in part"}`,
        ),
      ),
    );
    results.append(
      facts([
        ["Namespace", data.namespace],
        ["Memories", String(data.memories)],
      ]),
      h(
        "div",
        { class: "facets" },
        facetTable("Kinds", "facet-kinds", data.kinds, (kind) => timeline({ kind })),
        facetTable("Tags", "facet-tags", data.tags, (tag) => timeline({ tag })),
        facetTable("Sources", "facet-sources", data.sources, null),
        facetTable(`Latest days`, "facet-days", { distinct: data.days.distinct, top: days }, (day) => timeline({ since: day, until: nextDay(day) })),
      ),
      h(
        "section",
        { class: "components", id: "overview-components" },
        h("h3", {}, "Largest causal components (CAUSES, PRECEDES)"),
        components.length ? h("ol", {}, ...components) : h("p", { class: "muted" }, "No memory among the newest has a CAUSES or PRECEDES link."),
        data.componentsNote ? h("p", { class: "muted", id: "components-note" }, `Bounded search: ${data.componentsNote}.`) : null,
      ),
    );
  };

  const update = (): void => {
    if (shown) {
      return;
    }
    shown = true;
    loader.run(
      "Loading the overview",
      () => gql<{ overview: Overview }>(OVERVIEW, { top: TOP, days: DAYS }),
      (data) => render(data.overview),
    );
  };

  return {
    update,
    refresh: () => {
      shown = false;
      update();
    },
    destroy: () => loader.cancel(),
  };
}
