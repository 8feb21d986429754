/**
 * The belief graph, drawn with Cytoscape.js: memories as nodes (coloured by kind, sources ringed),
 * links as edges (CAUSES thick with arrows, so causal chains stand out).
 */

import cytoscape from "cytoscape";
import type { Core, ElementDefinition, NodeSingular, StylesheetJson } from "cytoscape";

import { clip } from "./format";
import type { LinkKind } from "./types";

export type NodeRole = "source" | "context" | "walked";

export interface GraphNode {
  id: string;
  text: string;
  kind: string;
  role: NodeRole;
}

export interface GraphEdge {
  source: string;
  target: string;
  kind: LinkKind;
  note: string | null;
}

declare global {
  interface Window {
    /** The explorer's graph, for a look from the browser console. */
    graphsvcExplore?: { cy: Core | null };
  }
}

const KIND_COLOURS: Record<string, string> = {
  event: "#2563eb",
  decision: "#7c3aed",
  observation: "#0d9488",
  fact: "#4d7c0f",
  preference: "#b45309",
};

const STYLE: StylesheetJson = [
  {
    selector: "node",
    style: {
      "background-color": "data(colour)",
      label: "data(label)",
      "font-size": 13,
      color: "#1f2937",
      "text-wrap": "wrap",
      "text-max-width": "150px",
      "text-valign": "bottom",
      "text-margin-y": 5,
      width: 22,
      height: 22,
      "border-width": 2,
      "border-color": "#ffffff",
    },
  },
  {
    selector: "node[role = 'source']",
    style: { width: 30, height: 30, "border-width": 4, "border-color": "#111827" },
  },
  {
    selector: "node[role = 'walked']",
    style: { "border-style": "dashed", "border-color": "#6b7280" },
  },
  {
    selector: "node:selected",
    style: {
      "overlay-color": "#f59e0b",
      "overlay-opacity": 0.35,
      "overlay-padding": 6,
      "font-weight": "bold",
    },
  },
  {
    selector: "edge",
    style: {
      width: 1.5,
      "line-color": "#9ca3af",
      "target-arrow-color": "#9ca3af",
      "curve-style": "bezier",
    },
  },
  {
    selector: "edge[kind = 'CAUSES']",
    style: {
      width: 3,
      "line-color": "#c2410c",
      "target-arrow-color": "#c2410c",
      "target-arrow-shape": "triangle",
    },
  },
  {
    selector: "edge[kind = 'PRECEDES']",
    style: { "target-arrow-shape": "triangle" },
  },
  {
    selector: "edge[kind = 'RELATES_TO']",
    style: { "line-style": "dashed" },
  },
  {
    selector: "edge[kind = 'SUPERSEDES']",
    style: {
      "line-style": "dotted",
      "line-color": "#7c3aed",
      "target-arrow-color": "#7c3aed",
      "target-arrow-shape": "vee",
    },
  },
];

function edgeId(edge: GraphEdge): string {
  return `${edge.source}|${edge.kind}|${edge.target}`;
}

/** Where a node goes: its layer (time flows along layers) and its place within the layer. */
interface Slot {
  layer: number;
  order: number;
}

/**
 * A layered layout for causal chains: every directed link (CAUSES and PRECEDES forward,
 * SUPERSEDES backward, so older is always first) puts its target at least one layer after its
 * source (longest path, bounded so cycles end); a memory linked only by RELATES_TO sits in its
 * neighbour's layer. Within a layer, nodes follow the mean place of their predecessors.
 */
export function layers(ids: string[], edges: GraphEdge[]): Map<string, Slot> {
  const forward = edges
    .filter((edge) => edge.kind !== "RELATES_TO")
    .map((edge) => (edge.kind === "SUPERSEDES" ? [edge.target, edge.source] : [edge.source, edge.target]));
  const layer = new Map<string, number>(ids.map((id) => [id, 0]));
  const directed = new Set(forward.flat());
  for (let round = 0; round < ids.length; round += 1) {
    let changed = false;
    for (const [from, to] of forward) {
      const next = (layer.get(from) ?? 0) + 1;
      if (next > (layer.get(to) ?? 0) && next < ids.length) {
        layer.set(to, next);
        changed = true;
      }
    }
    if (!changed) {
      break;
    }
  }
  for (const edge of edges) {
    if (edge.kind === "RELATES_TO") {
      if (!directed.has(edge.target) && directed.has(edge.source)) {
        layer.set(edge.target, layer.get(edge.source) ?? 0);
      } else if (!directed.has(edge.source) && directed.has(edge.target)) {
        layer.set(edge.source, layer.get(edge.target) ?? 0);
      }
    }
  }
  const slots = new Map<string, Slot>();
  const depth = Math.max(0, ...layer.values());
  for (let current = 0; current <= depth; current += 1) {
    const members = ids.filter((id) => layer.get(id) === current);
    const weight = (id: string): number => {
      const before = forward.filter(([, to]) => to === id).map(([from]) => slots.get(from)?.order);
      const known = before.filter((order): order is number => order !== undefined);
      return known.length ? known.reduce((a, b) => a + b, 0) / known.length : Number.POSITIVE_INFINITY;
    };
    const ranked = members
      .map((id, index) => ({ id, index, weight: weight(id) }))
      .sort((a, b) => a.weight - b.weight || a.index - b.index);
    ranked.forEach((entry, order) => slots.set(entry.id, { layer: current, order }));
  }
  return slots;
}

export class BeliefGraph {
  private cy: Core | null = null;
  private readonly nodes = new Map<string, GraphNode>();
  private readonly edges = new Map<string, GraphEdge>();

  constructor(
    private readonly container: HTMLElement,
    private readonly onSelect: (id: string) => void,
  ) {}

  /** The memories in the graph, in insertion order. */
  list(): GraphNode[] {
    return [...this.nodes.values()];
  }

  has(id: string): boolean {
    return this.nodes.has(id);
  }

  /** Draw these nodes and edges (edges whose ends are not both present are dropped). */
  reset(nodes: GraphNode[], edges: GraphEdge[]): void {
    this.nodes.clear();
    this.edges.clear();
    this.add(nodes, edges);
  }

  /** Add nodes and edges not yet drawn and lay the graph out again; returns how many nodes. */
  add(nodes: GraphNode[], edges: GraphEdge[]): number {
    let added = 0;
    for (const node of nodes) {
      if (!this.nodes.has(node.id)) {
        this.nodes.set(node.id, node);
        added += 1;
      }
    }
    for (const edge of edges) {
      if (this.nodes.has(edge.source) && this.nodes.has(edge.target)) {
        this.edges.set(edgeId(edge), edge);
      }
    }
    this.draw();
    return added;
  }

  /** Mark a node selected (no event back to onSelect). */
  select(id: string): void {
    const cy = this.cy;
    if (!cy) {
      return;
    }
    cy.nodes().unselect();
    const node = cy.getElementById(id);
    if (node.nonempty()) {
      node.select();
    }
  }

  destroy(): void {
    this.cy?.destroy();
    this.cy = null;
    if (window.graphsvcExplore) {
      window.graphsvcExplore.cy = null;
    }
  }

  private elements(): ElementDefinition[] {
    const elements: ElementDefinition[] = [];
    for (const node of this.nodes.values()) {
      elements.push({
        group: "nodes",
        data: {
          id: node.id,
          label: clip(node.text, 48),
          kind: node.kind,
          role: node.role,
          colour: KIND_COLOURS[node.kind] ?? "#6b7280",
        },
      });
    }
    for (const edge of this.edges.values()) {
      elements.push({
        group: "edges",
        data: { id: edgeId(edge), source: edge.source, target: edge.target, kind: edge.kind },
      });
    }
    return elements;
  }

  private draw(): void {
    const selected = this.cy?.nodes(":selected").map((node) => node.id()) ?? [];
    this.cy?.destroy();
    const cy = cytoscape({
      container: this.container,
      elements: this.elements(),
      style: STYLE,
      minZoom: 0.2,
      maxZoom: 3,
      boxSelectionEnabled: false,
      selectionType: "single",
    });
    // Chains read left to right on a wide screen, top to bottom on a narrow one.
    const wide = this.container.clientWidth >= 560;
    const slots = layers([...this.nodes.keys()], [...this.edges.values()]);
    const counts = new Map<number, number>();
    for (const slot of slots.values()) {
      counts.set(slot.layer, (counts.get(slot.layer) ?? 0) + 1);
    }
    const positions: Record<string, { x: number; y: number }> = {};
    for (const [id, slot] of slots) {
      const across = slot.order - ((counts.get(slot.layer) ?? 1) - 1) / 2;
      positions[id] = wide ? { x: slot.layer * 180, y: across * 100 } : { x: across * 175, y: slot.layer * 110 };
    }
    cy.layout({ name: "preset", padding: 24, animate: false, positions }).run();
    cy.fit(undefined, 28);
    for (const id of selected) {
      cy.getElementById(id).select();
    }
    cy.on("tap", "node", (event) => {
      this.onSelect((event.target as NodeSingular).id());
    });
    this.cy = cy;
    this.container.dataset.nodes = String(this.nodes.size);
    this.container.dataset.edges = String(this.edges.size);
    window.graphsvcExplore = { cy };
  }
}
