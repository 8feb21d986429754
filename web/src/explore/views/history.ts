/**
 * A memory's history on its panel: the chain of memories joined to it by SUPERSEDES links,
 * oldest first, each with its effective interval [from, until) and what superseded it; the
 * panel's own memory is marked as the current one.
 */

import { h } from "../dom";
import { clip, formatDate } from "../format";
import type { Memory, ValidityInterval } from "../types";

function interval(entry: ValidityInterval): string {
  const until = entry.validUntil ? `until ${formatDate(entry.validUntil)}` : "still true";
  return `from ${formatDate(entry.validFrom)}, ${until}`;
}

/**
 * The history section of `memory`'s panel; `select(id)` opens another memory of the chain.
 * A memory no SUPERSEDES link touches has a history of one: its own interval is shown.
 */
export function historySection(memory: Memory, select: (id: string) => void): HTMLElement {
  const chain = memory.history ?? [];
  const texts = new Map(chain.map((entry) => [entry.memory.id, entry.memory.text]));
  const items = chain.map((entry, n) => {
    const current = entry.memory.id === memory.id;
    const by = entry.supersededBy.map((id) => clip(texts.get(id) ?? id, 60));
    return h(
      "li",
      {
        class: current ? "history-item current" : "history-item",
        "data-memory-id": entry.memory.id,
        "aria-current": current ? "true" : null,
      },
      h("span", { class: "history-step" }, `${n + 1}.`),
      " ",
      current
        ? h("strong", {}, clip(entry.memory.text, 110), " (this memory)")
        : h("button", { type: "button", class: "link-button", onclick: () => select(entry.memory.id) }, clip(entry.memory.text, 110)),
      h("span", { class: "history-interval" }, interval(entry)),
      by.length ? h("span", { class: "history-by" }, `superseded by: ${by.join("; ")}`) : null,
    );
  });
  const single = chain.length <= 1;
  return h(
    "section",
    { class: "history", id: "memory-history", "aria-label": "History" },
    h("h4", {}, single ? "History" : `History (${chain.length}, oldest first)`),
    single
      ? h(
          "p",
          { class: "muted" },
          "No SUPERSEDES link touches this memory",
          chain.length ? `: true ${interval(chain[0])}.` : ".",
        )
      : h("ol", { class: "history-chain", "aria-label": "Supersession chain, oldest first" }, ...items),
  );
}
