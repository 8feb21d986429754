/**
 * Timeline: memories, newest recorded first, filtered by kind, tag and time range; or, with words,
 * the memories a bundle ranks for them (the lexical index: no request scans every memory), with the
 * same filters applied to those. As of an instant: KNOWN lists what was recorded by then (the
 * `memories` query's `knownAsOf`); VALID, what was true then, needs words (a bundle answers it;
 * the list is ordered by recording, so it cannot page through what was true).
 */

import { gql } from "../api";
import type { App, ViewController } from "../app";
import { exportButton, field, h, replace } from "../dom";
import { canWrite, memoryForm } from "../actions";
import { formatDate, memoryDate } from "../format";
import { MEMORIES, SEARCH, memoriesById } from "../queries";
import { dateTime } from "../state";
import type { State } from "../state";
import type { MemoryPage, TimelineMemory } from "../types";
import { AsOfControls, asOfInstant, asOfMode, asOfUsed, asOfVariables } from "./asof";
import { Loader, errorNotice } from "./common";

const PAGE_SIZE = 15;
/** The most capsules a search asks for (the API's most; the ranking itself may hold fewer). */
const SEARCH_SIZE = 200;

interface Ranked {
  memoryId: string;
  score: number;
}

/** Every memory a bundle ranks for `words` (packed or left out), best first: ids only. */
async function rankedIds(words: string, state: State): Promise<string[]> {
  const data = await gql<{ bundle: { capsules: Ranked[]; excluded: Ranked[] } }>(SEARCH, {
    query: words,
    maxCapsules: SEARCH_SIZE,
    ...asOfVariables(state),
  });
  const all = [...data.bundle.capsules, ...data.bundle.excluded];
  all.sort((a, b) => b.score - a.score || a.memoryId.localeCompare(b.memoryId));
  return [...new Set(all.map((item) => item.memoryId))];
}

/** The memories with these ids (at most the alias limit, 15), in that order, with tags and times. */
async function lookup(ids: string[]): Promise<TimelineMemory[]> {
  if (!ids.length) {
    return [];
  }
  const page = await gql<Record<string, TimelineMemory | null>>(memoriesById(ids.length), Object.fromEntries(ids.map((id, i) => [`id${i}`, id])));
  return ids.map((_, i) => page[`m${i}`]).filter((m): m is TimelineMemory => m !== null && m !== undefined);
}

/** Whether a memory passes the kind, tag and [since, until) filters (on when it happened). */
function passes(memory: TimelineMemory, state: State): boolean {
  const when = Date.parse(memory.occurredAt ?? memory.recordedAt);
  const since = dateTime(state.since);
  const until = dateTime(state.until);
  return (
    (!state.kind || memory.kind === state.kind) &&
    (!state.tag || memory.tags.includes(state.tag)) &&
    (!since || when >= Date.parse(since)) &&
    (!until || when < Date.parse(until))
  );
}

function item(memory: TimelineMemory, app: App): HTMLLIElement {
  const dated = memory.occurredAt ?? memory.validFrom;
  return h(
    "li",
    { class: "timeline-item", "data-memory-id": memory.id },
    h(
      "div",
      { class: "when" },
      h("time", dated ? { datetime: dated } : {}, memoryDate(memory)),
      memory.invalidatedAt ? h("span", { class: "validity closed" }, `until ${formatDate(memory.invalidatedAt)}`) : null,
      h("span", { class: "muted" }, `recorded ${formatDate(memory.recordedAt)}`),
    ),
    h(
      "div",
      { class: "what" },
      h("span", { class: "badge" }, memory.kind),
      " ",
      memory.text,
      memory.tags.length ? h("ul", { class: "tags", "aria-label": "Tags" }, ...memory.tags.map((t) => h("li", {}, t))) : null,
      h("a", { class: "action", href: app.href({ view: "belief", q: "", node: memory.id }) }, "Explore its links"),
      h("code", { class: "memory-id", title: "id: to link it from another memory" }, memory.id),
    ),
  );
}

export function timelineView(root: HTMLElement, app: App): ViewController {
  const words = h("input", { type: "search", name: "q", autocomplete: "off", placeholder: "words to find" });
  const kind = h("input", { type: "text", name: "kind", autocomplete: "off", placeholder: "event, decision, ..." });
  const tag = h("input", { type: "text", name: "tag", autocomplete: "off" });
  const since = h("input", { type: "date", name: "since" });
  const until = h("input", { type: "date", name: "until" });
  const asOf = new AsOfControls();
  const results = h("section", { id: "timeline-results", class: "results", "aria-live": "polite", "aria-label": "Timeline" });
  const loader = new Loader(results);
  const form = h(
    "form",
    {
      class: "controls",
      onsubmit: (event: Event) => {
        event.preventDefault();
        app.go({ q: words.value.trim(), kind: kind.value.trim(), tag: tag.value.trim(), since: since.value, until: until.value, ...asOf.read() });
      },
    },
    field("Search", words, "ranked by relevance"),
    field("Kind", kind),
    field("Tag", tag),
    field("Since", since, "happened on or after (UTC)"),
    field("Until", until, "happened before (UTC)"),
    ...asOf.fields,
    h("div", { class: "field submit" }, h("button", { type: "submit" }, "Show")),
  );
  const adding = memoryForm({
    written: (memory) => {
      app.go({ view: "belief", q: "", node: memory.id });
    },
  });
  replace(
    root,
    h("h2", {}, "Timeline of memories"),
    h("p", { class: "lead" }, "Newest recorded first; since and until filter on when a memory happened (when it was recorded, for undated ones)."),
    form,
    h(
      "div",
      { class: "actions-row" },
      exportButton("export-timeline", "Export the list as JSON", "timeline.json", () => ({ memories: listed })),
    ),
    h("details", { class: "add-memory", id: "add-memory", open: canWrite() ? undefined : undefined }, h("summary", {}, "Add a memory"), adding),
    results,
  );

  let shown: string | null = null;
  /** The memories listed now, in order: what "Export" saves. */
  let listed: TimelineMemory[] = [];

  const load = async (state: State, after: string | null): Promise<MemoryPage> => {
    const data = await gql<{ memories: MemoryPage }>(MEMORIES, {
      first: PAGE_SIZE,
      after: after ?? undefined,
      kind: state.kind || undefined,
      tag: state.tag || undefined,
      since: dateTime(state.since),
      until: dateTime(state.until),
      knownAsOf: asOfInstant(state.asOf),
    });
    return data.memories;
  };

  const showPage = (state: State, page: MemoryPage, list: HTMLOListElement): void => {
    for (const memory of page.nodes) {
      list.append(item(memory, app));
    }
    listed.push(...page.nodes);
    results.querySelector(".more")?.remove();
    if (page.pageInfo.hasNextPage && page.pageInfo.endCursor) {
      const cursor = page.pageInfo.endCursor;
      const more: HTMLButtonElement = h(
        "button",
        {
          type: "button",
          class: "more",
          onclick: () => {
            more.disabled = true;
            more.textContent = "Loading…";
            load(state, cursor).then(
              (next) => showPage(state, next, list),
              (error: unknown) => more.replaceWith(errorNotice(error)),
            );
          },
        },
        "Load more",
      );
      results.append(more);
    }
  };

  const update = (state: State): void => {
    words.value = state.q;
    kind.value = state.kind;
    tag.value = state.tag;
    since.value = state.since.slice(0, 10);
    until.value = state.until.slice(0, 10);
    asOf.show(state);
    const key = JSON.stringify([state.q, state.kind, state.tag, state.since, state.until, state.asOf, state.asOfMode]);
    if (key === shown) {
      return;
    }
    shown = key;
    if (state.q) {
      loader.run(
        "Searching",
        () => rankedIds(state.q, state),
        (ids) => {
          if (state.asOf) {
            results.append(asOfUsed({ at: asOfInstant(state.asOf) ?? state.asOf, mode: asOfMode(state) }));
          }
          const summary = h("p", { class: "muted", id: "search-summary" });
          const list = h("ol", { class: "timeline", id: "timeline-list" });
          results.append(summary, list);
          listed = [];
          let next = 0;
          let kept = 0;
          // A page at a time from the ranking (a lookup of 15 ids), the filters applied to each.
          const more = (): void => {
            const chunk = ids.slice(next, next + PAGE_SIZE);
            next += chunk.length;
            results.querySelector(".more")?.remove();
            lookup(chunk).then(
              (found) => {
                const passing = found.filter((memory) => passes(memory, state));
                kept += passing.length;
                listed.push(...passing);
                list.append(...passing.map((memory) => item(memory, app)));
                const filtered = next - kept > 0 ? `, ${next - kept} left out by the filters` : "";
                summary.textContent = `${kept} of the first ${next} of ${ids.length} memories ranked for “${state.q}”, best first${filtered}.`;
                if (next < ids.length) {
                  const button: HTMLButtonElement = h(
                    "button",
                    { type: "button", class: "more", id: "search-more", onclick: () => { button.disabled = true; more(); } },
                    `Load more (${ids.length - next} ranked)`,
                  );
                  results.append(button);
                } else if (!kept) {
                  list.replaceWith(h("p", { class: "muted" }, "No memory matches these words and filters."));
                }
              },
              (error: unknown) => results.append(errorNotice(error)),
            );
          };
          more();
        },
      );
      return;
    }
    if (state.asOf && asOfMode(state) === "VALID") {
      loader.cancel();
      replace(
        results,
        h(
          "p",
          { class: "notice notice-info", role: "status", id: "as-of-valid-needs-words" },
          "What was true then is answered for words: type words to search, or choose KNOWN to list what was recorded by then.",
        ),
      );
      return;
    }
    loader.run(
      "Loading memories",
      () => load(state, null),
      (page) => {
        if (state.asOf) {
          results.append(asOfUsed({ at: asOfInstant(state.asOf) ?? state.asOf, mode: "KNOWN" }));
        }
        if (!page.nodes.length) {
          results.append(h("p", { class: "muted" }, "No memory matches these filters."));
          return;
        }
        const list = h("ol", { class: "timeline", id: "timeline-list" });
        listed = [];
        results.append(list);
        showPage(state, page, list);
      },
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
