/**
 * What a key with the 'write' role can do from the explorer: add a memory, correct one (a new
 * memory that SUPERSEDES it, with its validity), forget one, link two. A read key sees the
 * controls disabled with the reason; the server refuses the writes anyway.
 */

import { gql } from "./api";
import { field, h, notice, replace, select } from "./dom";
import { formatDate } from "./format";
import { FORGET, LINK_MEMORIES, REMEMBER } from "./queries";
import type { ForgetReceipt, Link, Memory, TimelineMemory } from "./types";
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
  return h("p", { class: "read-only-note muted" }, "Writing, correcting, forgetting and linking need a key with the 'write' role; this key can only read.");
}

/** A time typed in a form as the API's DateTime: `2024-06-01` is midnight UTC; empty: none. */
function instant(value: string): string | null {
  const text = value.trim();
  if (!text) {
    return null;
  }
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    return `${text}T00:00:00Z`;
  }
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(text) ? `${text}Z` : text;
}

/** The fields of a memory to write, and the MemoryInput they make. */
class MemoryFields {
  readonly text = h("textarea", { name: "text", rows: 3, required: true, maxlength: 20000 });
  readonly kind = h("input", { type: "text", name: "kind", autocomplete: "off", placeholder: "observation" });
  readonly occurredAt = h("input", { type: "text", name: "occurredAt", autocomplete: "off", placeholder: "YYYY-MM-DD (UTC)" });
  readonly validFrom = h("input", { type: "text", name: "validFrom", autocomplete: "off", placeholder: "YYYY-MM-DD (UTC)" });
  readonly validUntil = h("input", { type: "text", name: "validUntil", autocomplete: "off", placeholder: "YYYY-MM-DD (UTC)" });
  readonly tags = h("input", { type: "text", name: "tags", autocomplete: "off", placeholder: "comma separated" });

  constructor(readonly prefix: string) {
    for (const control of this.controls()) {
      control.id = `${prefix}-${control.getAttribute("name") ?? ""}`;
      control.setAttribute("data-needs-write", "");
    }
  }

  controls(): Array<HTMLInputElement | HTMLTextAreaElement> {
    return [this.text, this.kind, this.occurredAt, this.validFrom, this.validUntil, this.tags];
  }

  fields(): HTMLElement[] {
    return [
      h("div", { class: "field wide" }, h("label", { for: this.text.id }, "Text"), this.text),
      field("Kind of memory", this.kind),
      field("Happened", this.occurredAt, "when it happened, for an event"),
      field("True from", this.validFrom, "when it became true (validFrom)"),
      field("True until", this.validUntil, "when it stopped (exclusive); empty: still true"),
      field("Tags of memory", this.tags, "comma separated"),
    ];
  }

  input(): Record<string, unknown> {
    const tags = this.tags.value.split(",").map((t) => t.trim()).filter(Boolean);
    return {
      text: this.text.value,
      kind: this.kind.value.trim() || "observation",
      occurredAt: instant(this.occurredAt.value),
      validFrom: instant(this.validFrom.value),
      validUntil: instant(this.validUntil.value),
      tags,
    };
  }

  clear(): void {
    for (const control of this.controls()) {
      control.value = "";
    }
  }
}

export interface MemoryFormHooks {
  /** The memory was written (the notice is already shown). */
  written(memory: TimelineMemory): void;
}

/** "Add a memory": the fields of a MemoryInput, written with `remember`. */
export function memoryForm(hooks: MemoryFormHooks): HTMLElement {
  const fields = new MemoryFields("add");
  const status = h("div", { class: "action-status", id: "add-status", "aria-live": "polite" });
  const submit = h("button", { type: "submit", id: "add-submit", "data-needs-write": "" }, "Remember");
  const form = h(
    "form",
    {
      class: "controls memory-form",
      id: "add-form",
      onsubmit: (event: Event) => {
        event.preventDefault();
        submit.disabled = true;
        gql<{ remember: TimelineMemory }>(REMEMBER, { input: fields.input() }).then(
          ({ remember: memory }) => {
            submit.disabled = false;
            fields.clear();
            replace(status, notice("info", `Remembered ${memory.id}.`));
            hooks.written(memory);
          },
          (error: unknown) => {
            submit.disabled = false;
            replace(status, errorNotice(error));
          },
        );
      },
    },
    ...fields.fields(),
    h("div", { class: "field submit" }, submit),
  );
  const section = h("section", { class: "memory-actions", "aria-label": "Add a memory" }, readOnlyNote(), form, status);
  applyRole(section);
  return section;
}

/**
 * "Correct this memory": write the corrected fact as a new memory that SUPERSEDES this one, true
 * from when it became true. Two writes (remember, then link); when the link fails the new memory
 * is named, and correcting again links it (the same content is the same memory).
 */
function correctionForm(memory: Memory, hooks: MemoryActionHooks, status: HTMLElement): HTMLElement {
  const fields = new MemoryFields("correct");
  fields.text.value = memory.text;
  fields.kind.value = memory.kind;
  const submit = h("button", { type: "submit", id: "correct-submit", "data-needs-write": "" }, "Write the correction");
  return h(
    "form",
    {
      class: "controls memory-form",
      id: "correct-form",
      onsubmit: (event: Event) => {
        event.preventDefault();
        submit.disabled = true;
        gql<{ remember: TimelineMemory }>(REMEMBER, { input: fields.input() })
          .then(async ({ remember: newer }) => {
            const input = { source: newer.id, target: memory.id, kind: "SUPERSEDES" };
            try {
              const { link } = await gql<{ link: Link }>(LINK_MEMORIES, { input });
              replace(status, notice("info", `Corrected: ${newer.id} SUPERSEDES ${memory.id}.`));
              hooks.linked(link);
            } catch (error: unknown) {
              replace(status, notice("error", `The correction ${newer.id} was written but not linked: `), errorNotice(error));
            }
          })
          .catch((error: unknown) => replace(status, errorNotice(error)))
          .finally(() => {
            submit.disabled = false;
          });
      },
    },
    h("p", { class: "muted" }, "The corrected fact is written as a new memory that supersedes this one; this one is then marked superseded from when the new one is true."),
    ...fields.fields(),
    h("div", { class: "field submit" }, submit),
  );
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
    h("details", { class: "correct", id: "correct" }, h("summary", {}, "Correct this memory"), correctionForm(memory, hooks, status)),
    linkForm,
    status,
  );
  applyRole(section);
  return section;
}
