/**
 * graphsvc explorer: a reference frontend on the public GraphQL API only. Five views (ask,
 * reconstruct, timeline, run, overview), all state in the URL, the API key in sessionStorage.
 */

import "./style.css";

import { setRole } from "./actions";
import { ApiError, gql } from "./api";
import type { App, Navigate, ViewController, ViewFactory } from "./app";
import { h, replace } from "./dom";
import { VIEWER } from "./queries";
import { parseState, toSearch, withChanges } from "./state";
import type { State, View } from "./state";
import { readApiKey, writeApiKey } from "../shared/apikey";
import type { Stats, Viewer } from "./types";
import { beliefView } from "./views/belief";
import { bundleView } from "./views/bundle";
import { overviewView } from "./views/overview";
import { runView } from "./views/run";
import { timelineView } from "./views/timeline";

const VIEWS: Record<View, { label: string; title: string; factory: ViewFactory }> = {
  bundle: { label: "Ask", title: "Ask a question", factory: bundleView },
  belief: { label: "Reconstruct", title: "Reconstruct a belief", factory: beliefView },
  timeline: { label: "Timeline", title: "Timeline", factory: timelineView },
  run: { label: "Run & drift", title: "A run's context", factory: runView },
  overview: { label: "Overview", title: "Overview", factory: overviewView },
};

function required<T extends HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (!element) {
    throw new Error(`the page has no #${id}`);
  }
  return element as T;
}

class Explorer implements App {
  state: State;
  private view: View | null = null;
  private controller: ViewController | null = null;
  private readonly main = required<HTMLElement>("main");
  private readonly nav = required<HTMLElement>("views");
  private readonly viewer = required<HTMLElement>("viewer");

  constructor() {
    this.state = parseState(window.location.search);
  }

  start(): void {
    const form = required<HTMLFormElement>("key-form");
    const input = required<HTMLInputElement>("api-key");
    const forget = required<HTMLButtonElement>("key-forget");
    input.value = readApiKey();
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      writeApiKey(input.value);
      this.keyChanged();
    });
    forget.addEventListener("click", () => {
      input.value = "";
      writeApiKey("");
      this.keyChanged();
      input.focus();
    });
    window.addEventListener("popstate", () => {
      this.state = parseState(window.location.search);
      this.render();
    });
    this.render();
    this.loadViewer();
  }

  href(changes: Partial<State>): string {
    return `${window.location.pathname}${toSearch(withChanges(this.state, changes))}`;
  }

  go(changes: Partial<State>, options: Navigate = {}): void {
    this.state = withChanges(this.state, changes);
    const url = `${window.location.pathname}${toSearch(this.state)}`;
    if (options.replace) {
      window.history.replaceState(null, "", url);
    } else {
      window.history.pushState(null, "", url);
    }
    this.render();
  }

  private keyChanged(): void {
    this.loadViewer();
    this.controller?.refresh();
  }

  private render(): void {
    const state = this.state;
    if (state.view !== this.view || !this.controller) {
      this.controller?.destroy();
      this.view = state.view;
      replace(this.main);
      this.controller = VIEWS[state.view].factory(this.main, this);
    }
    this.renderNav();
    document.title = `${VIEWS[state.view].title}${state.q ? `: ${state.q}` : ""} · graphsvc explorer`;
    this.controller.update(state);
  }

  private renderNav(): void {
    const items = (Object.keys(VIEWS) as View[]).map((view) => {
      const link = h("a", { href: this.href({ view }) }, VIEWS[view].label);
      if (view === this.state.view) {
        link.setAttribute("aria-current", "page");
      }
      link.addEventListener("click", (event) => {
        if (event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) {
          return;
        }
        event.preventDefault();
        this.go({ view });
      });
      return h("li", {}, link);
    });
    replace(this.nav, h("ul", {}, ...items));
  }

  private loadViewer(): void {
    replace(this.viewer, "Checking the key…");
    gql<{ viewer: Viewer; stats: Stats }>(VIEWER).then(
      ({ viewer, stats }) => {
        setRole(viewer.role);
        replace(
          this.viewer,
          h("strong", {}, viewer.namespace),
          ` · ${viewer.role} key ${viewer.keyId} · ${stats.memories} memories, ${stats.links} links`,
        );
      },
      (error: unknown) => {
        setRole("");
        const message =
          error instanceof ApiError && error.code === "UNAUTHENTICATED"
            ? "No valid API key: enter one to see this server's memories."
            : `Cannot reach the API: ${String(error instanceof Error ? error.message : error)}`;
        replace(this.viewer, h("span", { class: "warn" }, message));
      },
    );
  }
}

new Explorer().start();
