/**
 * What a key with the 'write' role can do from the explorer: forget a memory, link two. A read
 * key sees the controls disabled with the reason; the server refuses the writes anyway.
 */

import { gql } from "./api";
import { field, h, notice, replace, select } from "./dom";
import { formatDate } from "./format";
import { FORGET, LINK_MEMORIES } from "./queries";
import type { ForgetReceipt, Link, Memory } from "./types";
import { errorNotice } from "./views/common";

/** The schema's LinkKind values. */
export const LINK_KINDS = ["CAUSES", "PRECEDES", "RELATES_TO", "SUPERSEDES"] as const;

let role = "";

/** The current key's role ('read', 'write'; '' before the viewer answered). */
export function setRole(value: string): void {
  role = value;
  applyRole();
}

export function canWrite(): boolean {
  return role === "write";
}

/** Enable the write controls under `root` for a write key, disable them (and say why) otherwise. */
export function applyRole(root: ParentNode = document): void {
  for (const control of root.querySelectorAll<HTMLButtonElement | HTMLInputElement | HTMLSelectElement>("[data-needs-write]")) {
    control.disabled = !canWrite();
  }
  for (const note of root.querySelectorAll<HTMLElement>(".read-only-note")) {
    note.hidden = canWrite();
  }
}

function readOnlyNote(): HTMLElement {
  return h("p", { class: "read-only-note muted" }, "Forgetting and linking need a key with the 'write' role; this key can only read.");
}

function receiptView(receipt: ForgetReceipt): HTMLElement {
  const links = receipt.removedLinks.map((link) => h("li", {}, `${link.source} ${link.kind} → ${link.target}`));
  return notice(
    "info",
    h("strong", {}, "Forgotten. "),
    `Memory ${receipt.memoryId} was removed from namespace ${receipt.namespace} at ${formatDate(receipt.forgottenAt)}, with `,
    `${receipt.removedLinks.length} link(s) and ${receipt.removedBeliefIds.length} belief(s).`,
    links.length ? h("ul", { class: "receipt-links", "aria-label": "Removed links" }, ...links) : null,
    receipt.removedBeliefIds.length
      ? h("p", {}, `Removed beliefs: ${receipt.removedBeliefIds.join(", ")}`)
      : null,
  );
}

export interface MemoryActionHooks {
  /** The memory was forgotten (the receipt is already shown). */
  forgotten(receipt: ForgetReceipt): void;
  /** A link was written from or to the memory. */
  linked(link: Link): void;
}

/** The forget and link controls of a memory panel. */
export function memoryActions(memory: Memory, hooks: MemoryActionHooks): HTMLElement {
  const status = h("div", { class: "action-status", "aria-live": "polite" });

  // Forget, after a confirmation that says what goes with it.
  const confirmBox = h("div", { class: "confirm", hidden: true, role: "group", "aria-label": "Confirm forgetting" });
  const forget: HTMLButtonElement = h(
    "button",
    {
      type: "button",
      id: "forget-button",
      class: "danger",
      "data-needs-write": "",
      onclick: () => {
        confirmBox.hidden = false;
        forget.disabled = true;
        confirmYes.focus();
      },
    },
    "Forget this memory…",
  );
  const confirmYes: HTMLButtonElement = h(
    "button",
    {
      type: "button",
      id: "forget-confirm",
      class: "danger",
      onclick: () => {
        confirmYes.disabled = true;
        confirmYes.textContent = "Forgetting…";
        gql<{ forget: ForgetReceipt }>(FORGET, { id: memory.id }).then(
          ({ forget: receipt }) => {
            confirmBox.hidden = true;
            replace(status, receiptView(receipt));
            linkForm.remove();
            forget.remove();
            hooks.forgotten(receipt);
          },
          (error: unknown) => {
            confirmBox.hidden = true;
            forget.disabled = false;
            confirmYes.disabled = false;
            confirmYes.textContent = "Forget";
            replace(status, errorNotice(error));
          },
        );
      },
    },
    "Forget",
  );
  const confirmNo = h(
    "button",
    {
      type: "button",
      onclick: () => {
        confirmBox.hidden = true;
        forget.disabled = false;
        forget.focus();
      },
    },
    "Cancel",
  );
  replace(
    confirmBox,
    h(
      "p",
      {},
      `Forget this memory for good? Its ${memory.links.length} link(s) and the beliefs built on it go too. `,
      "This cannot be undone.",
    ),
    confirmYes,
    " ",
    confirmNo,
  );

  // Link this memory with another (this one as source or as target).
  const direction = select("direction", [["from", "from this memory"], ["to", "to this memory"]], "from");
  const kind = select("kind", LINK_KINDS.map((k) => [k, k]), "RELATES_TO");
  const other = h("input", { type: "text", name: "other", autocomplete: "off", spellcheck: "false", placeholder: "memory id (UUID)", required: true });
  const note = h("input", { type: "text", name: "note", autocomplete: "off", maxlength: 2000 });
  for (const control of [direction, kind, other, note]) {
    control.setAttribute("data-needs-write", "");
  }
  const submit = h("button", { type: "submit", id: "link-submit", "data-needs-write": "" }, "Link");
  const linkForm = h(
    "form",
    {
      class: "controls link-form",
      id: "link-form",
      onsubmit: (event: Event) => {
        event.preventDefault();
        const otherId = other.value.trim();
        const outgoing = direction.value === "from";
        const input = {
          source: outgoing ? memory.id : otherId,
          target: outgoing ? otherId : memory.id,
          kind: kind.value,
          note: note.value.trim() || null,
        };
        submit.disabled = true;
        gql<{ link: Link }>(LINK_MEMORIES, { input }).then(
          ({ link }) => {
            submit.disabled = false;
            other.value = "";
            note.value = "";
            replace(status, notice("info", `Linked: ${link.source} ${link.kind} → ${link.target}.`));
            hooks.linked(link);
          },
          (error: unknown) => {
            submit.disabled = false;
            replace(status, errorNotice(error));
          },
        );
      },
    },
    field("Link", direction),
    field("Kind", kind),
    field("Other memory", other, "its id: copy it from another memory's panel or the timeline"),
    field("Note", note, "optional"),
    h("div", { class: "field submit" }, submit),
  );

  const section = h(
    "section",
    { class: "memory-actions", "aria-label": "Change this memory" },
    h("h4", {}, "Act on it"),
    readOnlyNote(),
    h("div", { class: "actions-row" }, forget),
    confirmBox,
    linkForm,
    status,
  );
  applyRole(section);
  return section;
}
