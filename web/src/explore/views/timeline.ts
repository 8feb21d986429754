/** Timeline: memories, newest recorded first, filtered by kind, tag and time range. */

import { gql } from "../api";
import type { App, ViewController } from "../app";
import { field, h, replace } from "../dom";
import { formatDate } from "../format";
import { MEMORIES } from "../queries";
import { dateTime } from "../state";
import type { State } from "../state";
import type { MemoryPage, TimelineMemory } from "../types";
import { Loader, errorNotice } from "./common";

const PAGE_SIZE = 15;

function item(memory: TimelineMemory, app: App): HTMLLIElement {
  return h(
    "li",
    { class: "timeline-item", "data-memory-id": memory.id },
    h(
      "div",
      { class: "when" },
      h("time", memory.occurredAt ? { datetime: memory.occurredAt } : {}, formatDate(memory.occurredAt)),
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
    ),
  );
}

export function timelineView(root: HTMLElement, app: App): ViewController {
  const kind = h("input", { type: "text", name: "kind", autocomplete: "off", placeholder: "event, decision, ..." });
  const tag = h("input", { type: "text", name: "tag", autocomplete: "off" });
  const since = h("input", { type: "date", name: "since" });
  const until = h("input", { type: "date", name: "until" });
  const results = h("section", { id: "timeline-results", class: "results", "aria-live": "polite", "aria-label": "Timeline" });
  const loader = new Loader(results);
  const form = h(
    "form",
    {
      class: "controls",
      onsubmit: (event: Event) => {
        event.preventDefault();
        app.go({ kind: kind.value.trim(), tag: tag.value.trim(), since: since.value, until: until.value });
      },
    },
    field("Kind", kind),
    field("Tag", tag),
    field("Since", since, "happened on or after (UTC)"),
    field("Until", until, "happened before (UTC)"),
    h("div", { class: "field submit" }, h("button", { type: "submit" }, "Show")),
  );
  replace(
    root,
    h("h2", {}, "Timeline of memories"),
    h("p", { class: "lead" }, "Newest recorded first; since and until filter on when a memory happened (when it was recorded, for undated ones)."),
    form,
    results,
  );

  let shown: string | null = null;

  const load = async (state: State, after: string | null): Promise<MemoryPage> => {
    const data = await gql<{ memories: MemoryPage }>(MEMORIES, {
      first: PAGE_SIZE,
      after: after ?? undefined,
      kind: state.kind || undefined,
      tag: state.tag || undefined,
      since: dateTime(state.since),
      until: dateTime(state.until),
    });
    return data.memories;
  };

  const showPage = (state: State, page: MemoryPage, list: HTMLOListElement): void => {
    for (const memory of page.nodes) {
      list.append(item(memory, app));
    }
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
    kind.value = state.kind;
    tag.value = state.tag;
    since.value = state.since.slice(0, 10);
    until.value = state.until.slice(0, 10);
    const key = JSON.stringify([state.kind, state.tag, state.since, state.until]);
    if (key === shown) {
      return;
    }
    shown = key;
    loader.run(
      "Loading memories",
      () => load(state, null),
      (page) => {
        if (!page.nodes.length) {
          results.append(h("p", { class: "muted" }, "No memory matches these filters."));
          return;
        }
        const list = h("ol", { class: "timeline", id: "timeline-list" });
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
