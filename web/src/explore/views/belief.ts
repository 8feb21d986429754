/**
 * Reconstruct: the belief memory supports about a cue, its direct sources, and the graph around
 * them. Selecting a memory (on the graph or in the list beside it) shows it with its links, and
 * can walk one hop further.
 */

import { gql } from "../api";
import type { App, ViewController } from "../app";
import { exportButton, field, h, replace } from "../dom";
import { clip, formatDate, formatScore, memoryDate, percent } from "../format";
import { BeliefGraph } from "../graph";
import type { GraphEdge, GraphNode } from "../graph";
import { memoryActions } from "../actions";
import { MEMORY, RECONSTRUCT } from "../queries";
import { int } from "../state";
import type { State } from "../state";
import type { Belief, Link, Memory, MemoryRef } from "../types";
import { Loader, errorNotice, facts, meter } from "./common";
import { historySection } from "./history";

function edgesOf(links: Link[]): GraphEdge[] {
  return links.map((link) => ({ source: link.source, target: link.target, kind: link.kind, note: link.note }));
}

/** The other end of a link, seen from `id`. */
function otherEnd(link: Link, id: string): { ref: MemoryRef | null; otherId: string; outgoing: boolean } {
  const outgoing = link.source === id;
  return {
    ref: (outgoing ? link.targetMemory : link.sourceMemory) ?? null,
    otherId: outgoing ? link.target : link.source,
    outgoing,
  };
}

/** Each link once (a link between two memories of the graph is listed by both). */
function uniqueLinks(links: Link[]): Link[] {
  const seen = new Map<string, Link>();
  for (const link of links) {
    seen.set(`${link.source} ${link.target} ${link.kind}`, link);
  }
  return [...seen.values()].sort((a, b) => `${a.source}${a.target}${a.kind}`.localeCompare(`${b.source}${b.target}${b.kind}`));
}

/** ", until <when>" for a memory that stops being true, as the source list shows it. */
function closed(memory: Memory): string {
  return memory.invalidatedAt ? `, true until ${formatDate(memory.invalidatedAt)}` : "";
}

export function beliefView(root: HTMLElement, app: App): ViewController {
  const cue = h("input", { type: "search", id: "belief-q", name: "q", required: true, autocomplete: "off", placeholder: "e.g. why did payments fail?" });
  const k = h("input", { type: "number", name: "k", min: 1, step: 1, inputmode: "numeric", placeholder: "5" });
  const depth = h("input", { type: "number", name: "depth", min: 0, step: 1, inputmode: "numeric", placeholder: "2" });
  const summary = h("section", { id: "belief-summary", class: "results", "aria-live": "polite", "aria-label": "Belief" });
  const graphBox = h("div", {
    id: "graph",
    class: "graph",
    role: "img",
    "aria-label": "The memories and links of the belief; the list below the graph selects the same memories by keyboard.",
  });
  const nodeList = h("ul", { id: "graph-nodes", class: "node-list", "aria-label": "Memories in the graph" });
  const panelHeading = h("h3", { id: "memory-heading", tabindex: -1 }, "Memory");
  const panelBody = h("div", { id: "memory-body" }, h("p", { class: "muted" }, "Select a memory on the graph or in the list."));
  const panel = h("aside", { id: "memory-panel", class: "panel", "aria-labelledby": "memory-heading", "aria-live": "polite" }, panelHeading, panelBody);
  const legend = h(
    "ul",
    { class: "legend", "aria-label": "Legend" },
    h("li", {}, h("span", { class: "swatch swatch-causes" }), "CAUSES (cause → effect)"),
    h("li", {}, h("span", { class: "swatch swatch-precedes" }), "PRECEDES"),
    h("li", {}, h("span", { class: "swatch swatch-relates" }), "RELATES_TO"),
    h("li", {}, h("span", { class: "swatch swatch-supersedes" }), "SUPERSEDES (newer → older)"),
    h("li", {}, h("span", { class: "swatch swatch-source" }), "direct source"),
  );
  const graphSection = h(
    "section",
    { class: "graph-layout", "aria-label": "Graph" },
    h("div", { class: "graph-column" }, graphBox, legend, h("h3", {}, "Memories in the graph"), nodeList),
    panel,
  );
  graphSection.hidden = true;
  const details = h("section", { id: "belief-details", "aria-label": "Summary and sources" });
  details.hidden = true;

  const form = h(
    "form",
    {
      class: "controls",
      onsubmit: (event: Event) => {
        event.preventDefault();
        app.go({ q: cue.value.trim(), k: k.value, depth: depth.value, node: "" });
      },
    },
    h("div", { class: "field wide" }, h("label", { for: "belief-q" }, "Cue"), cue),
    field("Hits (k)", k),
    field("Walk depth", depth, "hops from the hits"),
    h("div", { class: "field submit" }, h("button", { type: "submit" }, "Reconstruct")),
  );
  replace(
    root,
    h("h2", {}, "Reconstruct a belief"),
    h("p", { class: "lead" }, "The best hits for a cue plus the causal and linked context around them, summarised by rules."),
    form,
    summary,
    graphSection,
    details,
  );

  const loader = new Loader(summary);
  const panelLoader = new Loader(panelBody);
  const sources = new Set<string>();
  let shownGraph = "";
  let shownNode = "";
  let focusPanel = false;
  let current: Memory | null = null;

  const select = (id: string, focus: boolean): void => {
    focusPanel = focus;
    app.go({ node: id }, { replace: true });
  };

  const graph = new BeliefGraph(graphBox, (id) => select(id, true));

  const renderNodeList = (): void => {
    replace(
      nodeList,
      ...graph.list().map((node) =>
        h(
          "li",
          {},
          h(
            "button",
            {
              type: "button",
              class: `node-button role-${node.role}`,
              "data-memory-id": node.id,
              "aria-pressed": String(node.id === app.state.node),
              onclick: () => select(node.id, true),
            },
            h("span", { class: "badge" }, node.kind),
            " ",
            clip(node.text, 90),
          ),
        ),
      ),
    );
  };

  const addToGraph = (nodes: GraphNode[], edges: GraphEdge[]): number => {
    const added = graph.add(nodes, edges);
    renderNodeList();
    return added;
  };

  const walk = (memory: Memory): void => {
    const nodes: GraphNode[] = [];
    for (const link of memory.links) {
      const { ref } = otherEnd(link, memory.id);
      if (ref) {
        nodes.push({ id: ref.id, text: ref.text, kind: ref.kind, role: "walked" });
      }
    }
    const added = addToGraph(nodes, edgesOf(memory.links));
    graph.select(memory.id);
    renderPanel(memory, added === 0 ? "Every linked memory was already in the graph." : `Added ${added} linked ${added === 1 ? "memory" : "memories"}.`);
  };

  const renderPanel = (memory: Memory, message = ""): void => {
    current = memory;
    const links = h("ul", { class: "links", "aria-label": "Links" });
    for (const link of memory.links) {
      const { ref, otherId, outgoing } = otherEnd(link, memory.id);
      links.append(
        h(
          "li",
          {},
          h("span", { class: `link-kind kind-${link.kind.toLowerCase()}` }, outgoing ? `${link.kind} →` : `← ${link.kind}`),
          " ",
          ref ? clip(ref.text, 110) : otherId,
          link.note ? h("span", { class: "muted" }, ` (${link.note})`) : null,
          " ",
          h(
            "button",
            {
              type: "button",
              class: "small",
              onclick: () => {
                if (ref && !graph.has(ref.id)) {
                  addToGraph([{ id: ref.id, text: ref.text, kind: ref.kind, role: "walked" }], edgesOf(memory.links));
                }
                select(otherId, true);
              },
            },
            graph.has(otherId) ? "Select" : "Add and select",
          ),
        ),
      );
    }
    const missing = memory.links.filter((link) => !graph.has(otherEnd(link, memory.id).otherId)).length;
    replace(
      panelBody,
      h("p", { class: "memory-text" }, memory.text),
      facts([
        ["Kind", memory.kind],
        ["Happened", memory.occurredAt ? formatDate(memory.occurredAt) : "not given"],
        ["Recorded", formatDate(memory.recordedAt)],
        ...(memory.invalidatedAt ? ([["True until", formatDate(memory.invalidatedAt)]] as Array<[string, string]>) : []),
        ...(memory.validFrom ? ([["Valid from", formatDate(memory.validFrom)]] as Array<[string, string]>) : []),
        ...(memory.validUntil ? ([["Valid until", formatDate(memory.validUntil)]] as Array<[string, string]>) : []),
        ["Tags", memory.tags.join(", ") || "none"],
        ["Source", memory.source ?? "unknown"],
        ["Confidence", formatScore(memory.confidence)],
        ["Role", sources.has(memory.id) ? "direct source of the belief" : graph.has(memory.id) ? "linked context" : "not in the graph"],
        ["Id", h("code", {}, memory.id)],
      ]),
      historySection(memory, (id) => select(id, true)),
      h("h4", {}, `Links (${memory.links.length})`),
      memory.links.length ? links : h("p", { class: "muted" }, "No links."),
      h(
        "button",
        { type: "button", id: "walk-button", onclick: () => walk(memory), disabled: missing === 0 },
        missing === 0 ? "Every linked memory is in the graph" : `Walk one hop further (${missing} more)`,
      ),
      message ? h("p", { class: "muted", role: "status" }, message) : null,
      memoryActions(memory, {
        forgotten: () => {
          panelHeading.textContent = `Forgotten: ${clip(memory.text, 60)}`;
          panelBody.querySelector("#walk-button")?.remove();
        },
        linked: (link) => {
          gql<{ memory: Memory | null }>(MEMORY, { id: memory.id }).then(
            (data) => {
              if (data.memory && current?.id === memory.id) {
                walk(data.memory);
                renderPanel(data.memory, `Linked: ${link.kind} ${link.source === memory.id ? "to" : "from"} ${link.source === memory.id ? link.target : link.source}.`);
              }
            },
            () => undefined,
          );
        },
      }),
    );
    panelHeading.textContent = `Memory: ${clip(memory.text, 60)}`;
  };

  const showNode = (id: string): void => {
    graph.select(id);
    for (const button of nodeList.querySelectorAll<HTMLButtonElement>("button[data-memory-id]")) {
      button.setAttribute("aria-pressed", String(button.dataset.memoryId === id));
    }
    const focus = focusPanel;
    focusPanel = false;
    if (focus) {
      panelHeading.focus();
    }
    panelLoader.run(
      "Loading the memory",
      () => gql<{ memory: Memory | null }>(MEMORY, { id }),
      (data) => {
        const memory = data.memory;
        if (!memory) {
          replace(panelBody, errorNotice(new Error(`No memory ${id} in this namespace.`)));
          return;
        }
        if (!graph.has(memory.id)) {
          addToGraph([{ id: memory.id, text: memory.text, kind: memory.kind, role: "walked" }], edgesOf(memory.links));
          graph.select(memory.id);
        }
        renderPanel(memory);
      },
    );
  };

  const showBelief = (belief: Belief): void => {
    sources.clear();
    for (const id of belief.sourceIds) {
      sources.add(id);
    }
    const byId = new Map(belief.memories.map((memory) => [memory.id, memory]));
    const nodes: GraphNode[] = belief.memories.map((memory) => ({
      id: memory.id,
      text: memory.text,
      kind: memory.kind,
      role: sources.has(memory.id) ? "source" : "context",
    }));
    graphSection.hidden = false;
    graph.reset(nodes, edgesOf(belief.memories.flatMap((memory) => memory.links)));
    renderNodeList();
    const sourceList = h("ol", { class: "sources" });
    for (const id of belief.sourceIds) {
      const memory = byId.get(id);
      sourceList.append(
        h(
          "li",
          {},
          h("button", { type: "button", class: "link-button", "data-memory-id": id, onclick: () => select(id, true) }, memory ? memory.text : id),
          memory ? h("span", { class: "muted" }, ` ${memory.kind}, ${memoryDate(memory)}${closed(memory)}`) : null,
        ),
      );
    }
    summary.append(
      h(
        "div",
        { class: "belief", id: "belief-result" },
        meter("Confidence", belief.confidence, `${formatScore(belief.confidence)} (${percent(belief.confidence)})`, "confidence-meter"),
        h("p", { class: "muted" }, `${belief.sourceIds.length} direct sources (ringed on the graph), ${belief.linkedContextIds.length} linked memories from the walk.`),
      ),
    );
    details.hidden = false;
    replace(
      details,
      h("h3", {}, "Summary"),
      h("pre", { class: "summary-text" }, belief.summary),
      h("h3", {}, "Direct sources"),
      belief.sourceIds.length ? sourceList : h("p", { class: "muted" }, "Memory has nothing on this cue."),
      h(
        "div",
        { class: "actions-row" },
        exportButton("export-graph", "Export the graph as JSON", "belief-graph.json", () => ({
          cue: belief.cue,
          summary: belief.summary,
          confidence: belief.confidence,
          sourceIds: belief.sourceIds,
          linkedContextIds: belief.linkedContextIds,
          validity: belief.validity ?? [],
          memories: belief.memories.map(({ links, ...memory }) => memory),
          links: uniqueLinks(belief.memories.flatMap((memory) => memory.links)),
        })),
      ),
    );
  };

  const showNeighbourhood = (id: string): void => {
    // No cue: the graph starts from one memory and its direct links.
    loader.run(
      "Loading the memory",
      () => gql<{ memory: Memory | null }>(MEMORY, { id }),
      (data) => {
        const memory = data.memory;
        if (!memory) {
          summary.append(errorNotice(new Error(`No memory ${id} in this namespace.`)));
          return;
        }
        sources.clear();
        details.hidden = true;
        summary.append(h("p", { class: "muted" }, "The links around one memory. Enter a cue to reconstruct a belief."));
        graphSection.hidden = false;
        const nodes: GraphNode[] = [{ id: memory.id, text: memory.text, kind: memory.kind, role: "context" }];
        for (const link of memory.links) {
          const { ref } = otherEnd(link, memory.id);
          if (ref) {
            nodes.push({ id: ref.id, text: ref.text, kind: ref.kind, role: "walked" });
          }
        }
        graph.reset(nodes, edgesOf(memory.links));
        renderNodeList();
        graph.select(memory.id);
        renderPanel(memory);
        shownNode = memory.id;
      },
    );
  };

  const update = (state: State): void => {
    cue.value = state.q;
    k.value = state.k;
    depth.value = state.depth;
    const key = JSON.stringify([state.q, state.k, state.depth, state.q ? "" : state.node]);
    if (key !== shownGraph) {
      shownGraph = key;
      shownNode = "";
      current = null;
      panelLoader.cancel();
      replace(panelBody, h("p", { class: "muted" }, "Select a memory on the graph or in the list."));
      panelHeading.textContent = "Memory";
      if (state.q) {
        loader.run(
          "Reconstructing",
          () => gql<{ reconstruct: Belief }>(RECONSTRUCT, { cue: state.q, k: int(state.k), depth: int(state.depth) }),
          (data) => {
            showBelief(data.reconstruct);
            if (app.state.node) {
              shownNode = app.state.node;
              showNode(app.state.node);
            }
          },
        );
      } else if (state.node) {
        showNeighbourhood(state.node);
      } else {
        loader.cancel();
        graphSection.hidden = true;
  const details = h("section", { id: "belief-details", "aria-label": "Summary and sources" });
  details.hidden = true;
        graph.destroy();
        replace(summary, h("p", { class: "muted" }, "Enter a cue: what do you want to know why about?"));
      }
      return;
    }
    if (state.node && state.node !== shownNode && !summary.querySelector(".loading")) {
      shownNode = state.node;
      if (current?.id === state.node) {
        graph.select(state.node);
      } else {
        showNode(state.node);
      }
    }
  };

  return {
    update,
    refresh: () => {
      shownGraph = "";
      update(app.state);
    },
    destroy: () => {
      loader.cancel();
      panelLoader.cancel();
      graph.destroy();
    },
  };
}
