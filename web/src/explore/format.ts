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
