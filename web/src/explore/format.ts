/** Formatting shared by the views. */

/** `2024-03-12 09:03 UTC`, or `undated`. */
export function formatDate(iso: string | null | undefined): string {
  if (!iso) {
    return "undated";
  }
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) {
    return iso;
  }
  const text = date.toISOString();
  return `${text.slice(0, 10)} ${text.slice(11, 16)} UTC`;
}

/** `2024-03-12`, or `undated`. */
export function formatDay(iso: string | null | undefined): string {
  return iso ? formatDate(iso).slice(0, 10) : "undated";
}

/** When a memory is dated (occurredAt, else validFrom), for a card: never "undated" when either is set. */
export function memoryDate(memory: { occurredAt?: string | null; validFrom?: string | null }): string {
  return formatDate(memory.occurredAt ?? memory.validFrom);
}

/** Whether a memory is true at the read's instant, in words (as the rendered text marks it). */
export const VALIDITY: Record<string, string> = {
  CURRENT: "true",
  SUPERSEDED: "superseded",
  EXPIRED: "expired",
  NOT_YET: "not yet true",
};

/** A score in [0, 1] with three places. */
export function formatScore(score: number): string {
  return score.toFixed(3);
}

/** A share as a whole percentage. */
export function percent(share: number): string {
  return `${Math.round(share * 100)}%`;
}

/** The first `limit` characters of a text, with an ellipsis when cut. */
export function clip(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1).trimEnd()}…`;
}

/** Why a capsule was left out, in words. */
export const REASONS: Record<string, string> = {
  match: "packed into the bundle",
  abstained: "memory abstained: the top score is below minScore",
  duplicate: "a near-duplicate of a packed capsule",
  budget: "did not fit the token budget",
  max_capsules: "past the most capsules allowed",
  below_floor: "score below the relative floor (a share of the top score)",
};
