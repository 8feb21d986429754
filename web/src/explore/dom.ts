/**
 * A tiny element builder. Every text goes in as a text node (never as HTML), so memory text from
 * the server cannot inject markup.
 */

export type Child = Node | string | number | null | undefined | false;

type Handler = (event: Event) => void;

export interface Attrs {
  [name: string]: string | number | boolean | Handler | null | undefined;
}

/** Create `<tag>` with attributes (`on<event>` functions become listeners) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) {
      continue;
    }
    if (typeof value === "function") {
      element.addEventListener(name.replace(/^on/, ""), value);
    } else if (value === true) {
      element.setAttribute(name, "");
    } else {
      element.setAttribute(name, String(value));
    }
  }
  append(element, ...children);
  return element;
}

/** Append children, skipping the empty ones. */
export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace every child of `parent`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

let counter = 0;

/** A fresh element id (for label/for and aria-* links). */
export function uid(prefix: string): string {
  counter += 1;
  return `${prefix}-${counter}`;
}

/** A labelled form control in a `<div class="field">`. */
export function field(label: string, control: HTMLElement, hint?: string): HTMLDivElement {
  const id = control.id || uid("f");
  control.id = id;
  const hintEl = hint ? h("span", { class: "hint", id: `${id}-hint` }, hint) : null;
  if (hintEl) {
    control.setAttribute("aria-describedby", hintEl.id);
  }
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hintEl);
}

/** `<select>` with the given options, `value` selected. */
export function select(
  name: string,
  options: Array<[string, string]>,
  value: string,
): HTMLSelectElement {
  const element = h("select", { name });
  for (const [optionValue, text] of options) {
    const option = h("option", { value: optionValue }, text);
    option.selected = optionValue === value;
    element.appendChild(option);
  }
  return element;
}

/** A message box: `role="alert"` for errors, `role="status"` otherwise. */
export function notice(kind: "error" | "info", ...children: Child[]): HTMLDivElement {
  return h("div", { class: `notice notice-${kind}`, role: kind === "error" ? "alert" : "status" }, ...children);
}

/**
 * A button that saves `data()` as a JSON file named `name` (in the browser: nothing leaves it).
 * The data is what the view shows, as the API answered it.
 */
export function exportButton(id: string, label: string, name: string, data: () => unknown): HTMLButtonElement {
  return h(
    "button",
    {
      type: "button",
      id,
      class: "export",
      onclick: () => {
        const blob = new Blob([`${JSON.stringify(data(), null, 2)}\n`], { type: "application/json" });
        const url = URL.createObjectURL(blob);
        const link = h("a", { href: url, download: name, hidden: true });
        document.body.append(link);
        link.click();
        link.remove();
        setTimeout(() => URL.revokeObjectURL(url), 0);
      },
    },
    label,
  );
}
