/** What the views get from the page: the current state and a way to change it. */

import type { State } from "./state";

export interface Navigate {
  /** Replace the current history entry instead of adding one (a selection, not a new question). */
  replace?: boolean;
}

export interface App {
  /** The state the URL names now. */
  readonly state: State;
  /** Change the state: the URL follows, then the current view updates. */
  go(changes: Partial<State>, options?: Navigate): void;
  /** The link (query string) of a state derived from the current one. */
  href(changes: Partial<State>): string;
}

export interface ViewController {
  /** Show `state` (fetch only what changed). */
  update(state: State): void;
  /** Fetch again (the API key changed). */
  refresh(): void;
  /** Release what the view holds (the graph). */
  destroy(): void;
}

export type ViewFactory = (root: HTMLElement, app: App) => ViewController;
