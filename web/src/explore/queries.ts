/** The operations the explorer sends: only the public GraphQL API, nothing else. */

const CAPSULE =
  "memoryId text kind score tokens occurredAt matchedTerms matchedWords reason validFrom validUntil supersededBy validity";

export const BUNDLE = `query ExplorerBundle($query: String!, $budgetTokens: Int, $stage: String, $minScore: Float, $maxCapsules: Int, $asOf: DateTime, $asOfMode: AsOfMode) {
  bundle(query: $query, budgetTokens: $budgetTokens, stage: $stage, minScore: $minScore, maxCapsules: $maxCapsules, asOf: $asOf, asOfMode: $asOfMode) {
    query stage budgetTokens minScore usedTokens skipped topScore evidenceCoverage uncoveredTerms uncoveredWords chronological orderReason rendered
    asOf { at mode }
    capsules { ${CAPSULE} }
    excluded { ${CAPSULE} }
  }
}`;

const LINK = "source target kind weight note";

export const RECONSTRUCT = `query ExplorerBelief($cue: String!, $k: Int, $depth: Int) {
  reconstruct(cue: $cue, k: $k, depth: $depth) {
    cue summary confidence sourceIds linkedContextIds
    memories { id text kind occurredAt recordedAt tags source confidence validFrom validUntil invalidatedAt links { ${LINK} } }
    validity { memoryId validFrom validUntil supersededBy validity }
  }
}`;

const REF = "id text kind occurredAt validFrom";

export const MEMORY = `query ExplorerMemory($id: UUID!) {
  memory(id: $id) {
    id text kind occurredAt recordedAt invalidatedAt tags source confidence tokens validFrom validUntil
    links { ${LINK} sourceMemory { ${REF} } targetMemory { ${REF} } }
    history { memory { ${REF} recordedAt } validFrom validUntil supersededBy }
  }
}`;

export const MEMORIES = `query ExplorerTimeline($first: Int, $after: String, $kind: String, $tag: String, $since: DateTime, $until: DateTime, $knownAsOf: DateTime) {
  memories(first: $first, after: $after, kind: $kind, tag: $tag, since: $since, until: $until, knownAsOf: $knownAsOf) {
    nodes { id text kind occurredAt recordedAt tags source validFrom validUntil invalidatedAt }
    pageInfo { hasNextPage endCursor }
  }
}`;

export const RUN = `query ExplorerRun($runId: String!) {
  contextEvents(runId: $runId) { runId seq step kind detail estTokens reportedTokens recordedAt }
  drift(runId: $runId) {
    runId reportedSteps unreportedSteps estimatedTokens reportedTokens ratio
    steps { step seq estTokens reportedTokens ratio }
  }
}`;

export const VIEWER = `query ExplorerViewer {
  viewer { namespace role keyId }
  stats { memories links beliefs }
}`;

export const FORGET = `mutation ExplorerForget($id: UUID!) {
  forget(id: $id) { memoryId namespace removedLinks { source target kind } removedBeliefIds forgottenAt }
}`;

export const LINK_MEMORIES = `mutation ExplorerLink($input: LinkInput!) {
  link(input: $input) { ${LINK} }
}`;

/**
 * Text search: every memory a bundle ranks for the words (the lexical index, never a scan), the
 * packed and the left out, with abstention off so that a weak match is still listed.
 */
export const SEARCH = `query ExplorerSearch($query: String!, $maxCapsules: Int, $asOf: DateTime, $asOfMode: AsOfMode) {
  bundle(query: $query, budgetTokens: 100000, minScore: 0, maxCapsules: $maxCapsules, asOf: $asOf, asOfMode: $asOfMode) {
    capsules { memoryId score }
    excluded { memoryId score reason }
  }
}`;

/** The days a view of the past changes (VALID: validity starts and ends; KNOWN: recordings). */
export const AS_OF_DAYS = `query ExplorerAsOfDays($mode: AsOfMode!, $days: Int!) {
  asOfDays(mode: $mode, days: $days)
}`;

export const REMEMBER = `mutation ExplorerRemember($input: MemoryInput!) {
  remember(input: $input) { id text kind occurredAt recordedAt tags source validFrom validUntil invalidatedAt }
}`;

/** Tags and times of up to 15 memories (the alias limit), as `m0`, `m1`, ... */
export function memoriesById(count: number): string {
  const vars = Array.from({ length: count }, (_, i) => `$id${i}: UUID!`).join(", ");
  const fields = Array.from(
    { length: count },
    (_, i) => `m${i}: memory(id: $id${i}) { id text kind occurredAt recordedAt tags source validFrom validUntil invalidatedAt }`,
  ).join("\n  ");
  return `query ExplorerSearchMemories(${vars}) {\n  ${fields}\n}`;
}

const FACET = "distinct top { value count }";

export const OVERVIEW = `query ExplorerOverview($top: Int!, $days: Int!) {
  overview(top: $top, days: $days) {
    namespace memories
    kinds { ${FACET} } tags { ${FACET} } sources { ${FACET} } days { ${FACET} }
    components { seedId seedText size links complete memberIds }
    componentsNote
  }
}`;
