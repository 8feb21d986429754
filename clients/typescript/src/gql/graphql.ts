/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
/** Which past an as-of read answers from. */
export type AsOfMode =
  /** What memory held then: only memories recorded at or before the instant (and links written by then). The audit view. */
  | 'KNOWN'
  /** What was true then, as memory knows it now: memories whose effective validity [start, end) holds the instant (start: validFrom, else occurredAt, else recordedAt; end: validUntil, closed earlier by a newer memory that SUPERSEDES it). */
  | 'VALID';

/** A project context file such as AGENTS.md. */
export type ContextFileInput = {
  /** Its full text. */
  content: string;
  /** Its path, 1-1024 characters. */
  path: string;
  /** Where it applies: project, user, a directory... */
  scope?: string;
};

/** Where the agent runs; every field optional. */
export type EnvironmentInput = {
  /** Working directory. */
  cwd?: string | null | undefined;
  /** Today (default: the server's UTC day). */
  date?: string | null | undefined;
  /** Model name. */
  model?: string | null | undefined;
  /** The harness's search mode (free text). */
  searchMode?: string | null | undefined;
};

/** A piece of system prompt (persona, rules, format...). */
export type FragmentInput = {
  /** A label, 1-128 characters. */
  name: string;
  /** The text, rendered as sent. */
  text: string;
};

/** Whether the caller's provider keeps the conversation history. */
export type HistoryReuse =
  /** The provider caches the history: context files whose sha256 is in prevContextHash(es) are sent as an 'unchanged' marker instead of their text. */
  | 'AVAILABLE'
  /** Every context file is sent in full (the default). */
  | 'UNAVAILABLE';

/** A link to write between two memories of the caller's namespace. */
export type LinkInput = {
  /** The relationship type. */
  kind: LinkKind;
  /** Free text (up to 2,000 characters). */
  note?: string | null | undefined;
  /** Id of the memory the link starts at. */
  source: string;
  /** Id of the memory the link points to. */
  target: string;
  /** Strength, 0 to 1,000,000. */
  weight?: number;
};

/** How two memories are related. */
export type LinkKind =
  /** The source caused the target. */
  | 'CAUSES'
  /** The source happened before. */
  | 'PRECEDES'
  /** An association. */
  | 'RELATES_TO'
  /** The source (newer) updates the target (older). */
  | 'SUPERSEDES';

/** A memory to write. */
export type MemoryInput = {
  /** Confidence in [0, 1]. */
  confidence?: number;
  /** Explicit id; by default one derived from the content. Rewriting an id with the same content is a no-op (retry-safe); with other content it is BAD_INPUT. */
  id?: string | null | undefined;
  /** Its kind: a letter, then up to 63 letters, digits or _ . : - */
  kind?: string;
  /** When it happened (naive times are UTC). */
  occurredAt?: string | null | undefined;
  /** Where it came from (up to 512 characters). */
  source?: string | null | undefined;
  /** Up to 32 tags of 1-64 characters. */
  tags?: Array<string>;
  /** What to remember (not empty). */
  text: string;
  /** When it became true (event time; a zone is required). Default: from occurredAt, else from when it is written. */
  validFrom?: string | null | undefined;
  /** When it stopped being true (exclusive; after validFrom; a zone is required). A newer memory that SUPERSEDES it closes it at that memory's start. */
  validUntil?: string | null | undefined;
};

/** Why a bundle's capsules are oldest first, each dated. */
export type OrderReason =
  /** The question does not ask about order, but the ranked memories carry `occurredAt` dates on two or more days. */
  | 'EVIDENCE_SPANS_DAYS'
  /** The question holds a chronology marker word (before, after, first, last, when, ...). */
  | 'QUESTION_ASKS_ORDER';

/** What promptBundle assembles a prompt from. Only userTurn is required. Large inputs belong in variables (documents are limited in tokens, not variables). */
export type PromptInput = {
  /** Skill metadata. */
  availableSkills?: Array<SkillInput>;
  /** Tokens the model reads and writes (default 200000: GRAPHSVC_PROMPT_CONTEXT_WINDOW). */
  contextWindow?: number | null | undefined;
  /** Where the agent runs. */
  environment?: EnvironmentInput | null | undefined;
  /** System prompt fragments, rendered in this order. */
  fragments?: Array<FragmentInput>;
  /** Whether the provider keeps the history. */
  historyReuse?: HistoryReuse;
  /** Size cap of one context file in estimated tokens (default 8000: GRAPHSVC_PROMPT_CONTEXT_FILE_MAX_TOKENS); longer files are cut and flagged `truncated`. */
  maxContextFileTokens?: number | null | undefined;
  /** A cap on the memory section's tokens (default and limit: GRAPHSVC_MAX_BUDGET_TOKENS). */
  maxMemoryTokens?: number | null | undefined;
  /** How many of the last transcript entries, 0-1000 (default 20: GRAPHSVC_PROMPT_TRANSCRIPT_TAIL). */
  maxTranscriptEntries?: number | null | undefined;
  /** Recall as of this instant (a time zone is required; default: now). */
  memoryAsOf?: string | null | undefined;
  /** With memoryAsOf: KNOWN (what was recorded by then) or VALID (what was true then; the default). */
  memoryAsOfMode?: AsOfMode | null | undefined;
  /** The most of the available input memory may take, in [0, 1] (default 0.1: GRAPHSVC_PROMPT_MEMORY_BUDGET_SHARE; 0: memory is not consulted). */
  memoryBudgetShare?: number | null | undefined;
  /** Most capsules (default GRAPHSVC_DEFAULT_MAX_CAPSULES). */
  memoryMaxCapsules?: number | null | undefined;
  /** Memory abstains when its top score is below this (default: the stage's threshold; 0 turns abstention off). */
  memoryMinScore?: number | null | undefined;
  /** What to recall for (default: the user turn, cut to GRAPHSVC_MAX_TEXT_CHARS). */
  memoryQuery?: string | null | undefined;
  /** Scoring stage of the recall: default, recent or exact. */
  memoryStage?: string | null | undefined;
  /** With historyReuse AVAILABLE: a context file whose contentHash equals it is sent as an 'unchanged, text omitted' marker. 64 hex digits ('sha256:' allowed). */
  prevContextHash?: string | null | undefined;
  /** As prevContextHash, for several files. */
  prevContextHashes?: Array<string>;
  /** Project context files. */
  projectContext?: Array<ContextFileInput>;
  /** Kept free for the answer (default 8192: GRAPHSVC_PROMPT_RESERVED_COMPLETION_TOKENS). */
  reservedCompletionTokens?: number | null | undefined;
  /** Record the recall and an 'assembled' event for this run (needs a write key): 1-128 letters, digits, '_', '.', ':' or '-'. */
  runId?: string | null | undefined;
  /** The agent's step number (>= 0). */
  step?: number;
  /** Tools, declared in `messages.tools`. */
  toolCatalog?: Array<ToolInput>;
  /** The conversation so far, oldest first. */
  transcript?: Array<TranscriptEntryInput>;
  /** What the user says now (not blank). */
  userTurn: string;
};

/** A skill's metadata (its body stays with the caller). */
export type SkillInput = {
  /** When to use it. */
  description?: string;
  /** The skill's name, 1-128 characters. */
  name: string;
  /** Where its body is. */
  path?: string | null | undefined;
};

/** A tool the model may call. */
export type ToolInput = {
  /** What it does. */
  description?: string;
  /** JSON Schema of its input (default {"type": "object"}). */
  inputSchema?: unknown;
  /** 1-64 letters, digits, '_' or '-'; unique. */
  name: string;
};

/** One entry of the conversation so far (send oldest first). */
export type TranscriptEntryInput = {
  /** USER, ASSISTANT or TOOL. */
  role: TranscriptRole;
  /** The text (not blank for USER and ASSISTANT; an empty tool result is sent as '(no output)'). */
  text: string;
  /** The tool, for a TOOL entry. */
  toolName?: string | null | undefined;
};

/** Who produced a transcript entry. */
export type TranscriptRole =
  /** The model. */
  | 'ASSISTANT'
  /** A tool's result (sent as user text). */
  | 'TOOL'
  /** The user. */
  | 'USER';

export type MemoryFieldsFragment = { id: string, namespace: string, text: string, kind: string, occurredAt: string | null, recordedAt: string, invalidatedAt: string | null, validFrom: string | null, validUntil: string | null, tags: Array<string>, source: string | null, confidence: number, tokens: number };

export type CapsuleFieldsFragment = { memoryId: string, text: string, kind: string, score: number, tokens: number, occurredAt: string | null, matchedTerms: Array<string>, matchedWords: Array<string>, reason: string | null };

export type BundleFieldsFragment = { query: string, stage: string, retrieval: string, budgetTokens: number, minScore: number, usedTokens: number, skipped: boolean, topScore: number, evidenceCoverage: number, uncoveredTerms: Array<string>, uncoveredWords: Array<string>, chronological: boolean, orderReason: OrderReason | null, rendered: string, capsules: Array<{ memoryId: string, text: string, kind: string, score: number, tokens: number, occurredAt: string | null, matchedTerms: Array<string>, matchedWords: Array<string>, reason: string | null }>, excluded: Array<{ memoryId: string, text: string, kind: string, score: number, tokens: number, occurredAt: string | null, matchedTerms: Array<string>, matchedWords: Array<string>, reason: string | null }>, asOf: { at: string, mode: AsOfMode } | null };

export type BeliefFieldsFragment = { cue: string, summary: string, sourceIds: Array<string>, linkedContextIds: Array<string>, confidence: number, beliefId: string | null, memories: Array<{ id: string, namespace: string, text: string, kind: string, occurredAt: string | null, recordedAt: string, invalidatedAt: string | null, validFrom: string | null, validUntil: string | null, tags: Array<string>, source: string | null, confidence: number, tokens: number }>, asOf: { at: string, mode: AsOfMode } | null };

export type BundleQueryVariables = Exact<{
  query: string;
  budgetTokens?: number | null | undefined;
  stage?: string | null | undefined;
  minScore?: number | null | undefined;
  maxCapsules?: number | null | undefined;
  runId?: string | null | undefined;
  step?: number;
  asOf?: string | null | undefined;
  asOfMode?: AsOfMode | null | undefined;
}>;


export type BundleQuery = { bundle: { query: string, stage: string, retrieval: string, budgetTokens: number, minScore: number, usedTokens: number, skipped: boolean, topScore: number, evidenceCoverage: number, uncoveredTerms: Array<string>, uncoveredWords: Array<string>, chronological: boolean, orderReason: OrderReason | null, rendered: string, capsules: Array<{ memoryId: string, text: string, kind: string, score: number, tokens: number, occurredAt: string | null, matchedTerms: Array<string>, matchedWords: Array<string>, reason: string | null }>, excluded: Array<{ memoryId: string, text: string, kind: string, score: number, tokens: number, occurredAt: string | null, matchedTerms: Array<string>, matchedWords: Array<string>, reason: string | null }>, asOf: { at: string, mode: AsOfMode } | null } };

export type ReconstructQueryVariables = Exact<{
  cue: string;
  k?: number | null | undefined;
  depth?: number | null | undefined;
  asOf?: string | null | undefined;
  asOfMode?: AsOfMode | null | undefined;
}>;


export type ReconstructQuery = { reconstruct: { cue: string, summary: string, sourceIds: Array<string>, linkedContextIds: Array<string>, confidence: number, beliefId: string | null, memories: Array<{ id: string, namespace: string, text: string, kind: string, occurredAt: string | null, recordedAt: string, invalidatedAt: string | null, validFrom: string | null, validUntil: string | null, tags: Array<string>, source: string | null, confidence: number, tokens: number }>, asOf: { at: string, mode: AsOfMode } | null } };

export type ReconstructAndStoreMutationVariables = Exact<{
  cue: string;
  k?: number | null | undefined;
  depth?: number | null | undefined;
  runId?: string | null | undefined;
  step?: number;
  asOf?: string | null | undefined;
  asOfMode?: AsOfMode | null | undefined;
}>;


export type ReconstructAndStoreMutation = { reconstruct: { cue: string, summary: string, sourceIds: Array<string>, linkedContextIds: Array<string>, confidence: number, beliefId: string | null, memories: Array<{ id: string, namespace: string, text: string, kind: string, occurredAt: string | null, recordedAt: string, invalidatedAt: string | null, validFrom: string | null, validUntil: string | null, tags: Array<string>, source: string | null, confidence: number, tokens: number }>, asOf: { at: string, mode: AsOfMode } | null } };

export type PromptBundleQueryVariables = Exact<{
  input: PromptInput;
}>;


export type PromptBundleQuery = { promptBundle: { userTurn: string, rendered: string, renderedHash: string, messages: unknown, memoryNote: string, historyReuse: HistoryReuse, runId: string | null, step: number, memory: { query: string, stage: string, retrieval: string, budgetTokens: number, minScore: number, usedTokens: number, skipped: boolean, topScore: number, evidenceCoverage: number, uncoveredTerms: Array<string>, uncoveredWords: Array<string>, chronological: boolean, orderReason: OrderReason | null, rendered: string, capsules: Array<{ memoryId: string, text: string, kind: string, score: number, tokens: number, occurredAt: string | null, matchedTerms: Array<string>, matchedWords: Array<string>, reason: string | null }>, excluded: Array<{ memoryId: string, text: string, kind: string, score: number, tokens: number, occurredAt: string | null, matchedTerms: Array<string>, matchedWords: Array<string>, reason: string | null }>, asOf: { at: string, mode: AsOfMode } | null } | null, contextLedger: { contextWindow: number, availableInputTokens: number, estimatedInputTokens: number, remainingTokens: number, fits: boolean, memoryBudgetTokens: number, memoryTokens: number } } };

export type RememberMutationVariables = Exact<{
  input: MemoryInput;
  runId?: string | null | undefined;
  step?: number;
}>;


export type RememberMutation = { remember: { id: string, namespace: string, text: string, kind: string, occurredAt: string | null, recordedAt: string, invalidatedAt: string | null, validFrom: string | null, validUntil: string | null, tags: Array<string>, source: string | null, confidence: number, tokens: number } };

export type RememberManyMutationVariables = Exact<{
  inputs: Array<MemoryInput> | MemoryInput;
  runId?: string | null | undefined;
  step?: number;
}>;


export type RememberManyMutation = { rememberMany: Array<{ id: string, namespace: string, text: string, kind: string, occurredAt: string | null, recordedAt: string, invalidatedAt: string | null, validFrom: string | null, validUntil: string | null, tags: Array<string>, source: string | null, confidence: number, tokens: number }> };

export type LinkMutationVariables = Exact<{
  input: LinkInput;
}>;


export type LinkMutation = { link: { source: string, target: string, kind: LinkKind, weight: number, createdAt: string, note: string | null } };

export type ForgetMutationVariables = Exact<{
  id: string;
}>;


export type ForgetMutation = { forget: { memoryId: string, namespace: string, removedBeliefIds: Array<string>, forgottenAt: string, removedLinks: Array<{ source: string, target: string, kind: LinkKind }> } };

export type MemoryQueryVariables = Exact<{
  id: string;
}>;


export type MemoryQuery = { memory: { id: string, namespace: string, text: string, kind: string, occurredAt: string | null, recordedAt: string, invalidatedAt: string | null, validFrom: string | null, validUntil: string | null, tags: Array<string>, source: string | null, confidence: number, tokens: number } | null };

export type MemoriesQueryVariables = Exact<{
  first?: number | null | undefined;
  after?: string | null | undefined;
  kind?: string | null | undefined;
  tag?: string | null | undefined;
  since?: string | null | undefined;
  until?: string | null | undefined;
  knownAsOf?: string | null | undefined;
}>;


export type MemoriesQuery = { memories: { nodes: Array<{ id: string, namespace: string, text: string, kind: string, occurredAt: string | null, recordedAt: string, invalidatedAt: string | null, validFrom: string | null, validUntil: string | null, tags: Array<string>, source: string | null, confidence: number, tokens: number }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } } };

export type HistoryQueryVariables = Exact<{
  id: string;
}>;


export type HistoryQuery = { memory: { id: string, history: Array<{ validFrom: string, validUntil: string | null, supersededBy: Array<string>, memory: { id: string, namespace: string, text: string, kind: string, occurredAt: string | null, recordedAt: string, invalidatedAt: string | null, validFrom: string | null, validUntil: string | null, tags: Array<string>, source: string | null, confidence: number, tokens: number } }> } | null };

export type ViewerQueryVariables = Exact<{ [key: string]: never; }>;


export type ViewerQuery = { viewer: { namespace: string, role: string, keyId: string } };

export class TypedDocumentString<TResult, TVariables>
  extends String
  implements DocumentTypeDecoration<TResult, TVariables>
{
  __apiType?: NonNullable<DocumentTypeDecoration<TResult, TVariables>['__apiType']>;
  private value: string;
  public __meta__?: Record<string, any> | undefined;

  constructor(value: string, __meta__?: Record<string, any> | undefined) {
    super(value);
    this.value = value;
    this.__meta__ = __meta__;
  }

  override toString(): string & DocumentTypeDecoration<TResult, TVariables> {
    return this.value;
  }
}
export const CapsuleFieldsFragmentDoc = new TypedDocumentString(`
    fragment CapsuleFields on ContextCapsule {
  memoryId
  text
  kind
  score
  tokens
  occurredAt
  matchedTerms
  matchedWords
  reason
}
    `, {"fragmentName":"CapsuleFields"}) as unknown as TypedDocumentString<CapsuleFieldsFragment, unknown>;
export const BundleFieldsFragmentDoc = new TypedDocumentString(`
    fragment BundleFields on ContextBundle {
  query
  stage
  retrieval
  budgetTokens
  minScore
  usedTokens
  capsules {
    ...CapsuleFields
  }
  excluded {
    ...CapsuleFields
  }
  skipped
  topScore
  evidenceCoverage
  uncoveredTerms
  uncoveredWords
  chronological
  orderReason
  rendered
  asOf {
    at
    mode
  }
}
    fragment CapsuleFields on ContextCapsule {
  memoryId
  text
  kind
  score
  tokens
  occurredAt
  matchedTerms
  matchedWords
  reason
}`, {"fragmentName":"BundleFields"}) as unknown as TypedDocumentString<BundleFieldsFragment, unknown>;
export const MemoryFieldsFragmentDoc = new TypedDocumentString(`
    fragment MemoryFields on Memory {
  id
  namespace
  text
  kind
  occurredAt
  recordedAt
  invalidatedAt
  validFrom
  validUntil
  tags
  source
  confidence
  tokens
}
    `, {"fragmentName":"MemoryFields"}) as unknown as TypedDocumentString<MemoryFieldsFragment, unknown>;
export const BeliefFieldsFragmentDoc = new TypedDocumentString(`
    fragment BeliefFields on ReconstructedBelief {
  cue
  summary
  sourceIds
  linkedContextIds
  confidence
  beliefId
  memories {
    ...MemoryFields
  }
  asOf {
    at
    mode
  }
}
    fragment MemoryFields on Memory {
  id
  namespace
  text
  kind
  occurredAt
  recordedAt
  invalidatedAt
  validFrom
  validUntil
  tags
  source
  confidence
  tokens
}`, {"fragmentName":"BeliefFields"}) as unknown as TypedDocumentString<BeliefFieldsFragment, unknown>;
export const BundleDocument = new TypedDocumentString(`
    query Bundle($query: String!, $budgetTokens: Int, $stage: String, $minScore: Float, $maxCapsules: Int, $runId: String, $step: Int! = 0, $asOf: DateTime, $asOfMode: AsOfMode) {
  bundle(
    query: $query
    budgetTokens: $budgetTokens
    stage: $stage
    minScore: $minScore
    maxCapsules: $maxCapsules
    runId: $runId
    step: $step
    asOf: $asOf
    asOfMode: $asOfMode
  ) {
    ...BundleFields
  }
}
    fragment CapsuleFields on ContextCapsule {
  memoryId
  text
  kind
  score
  tokens
  occurredAt
  matchedTerms
  matchedWords
  reason
}
fragment BundleFields on ContextBundle {
  query
  stage
  retrieval
  budgetTokens
  minScore
  usedTokens
  capsules {
    ...CapsuleFields
  }
  excluded {
    ...CapsuleFields
  }
  skipped
  topScore
  evidenceCoverage
  uncoveredTerms
  uncoveredWords
  chronological
  orderReason
  rendered
  asOf {
    at
    mode
  }
}`) as unknown as TypedDocumentString<BundleQuery, BundleQueryVariables>;
export const ReconstructDocument = new TypedDocumentString(`
    query Reconstruct($cue: String!, $k: Int, $depth: Int, $asOf: DateTime, $asOfMode: AsOfMode) {
  reconstruct(cue: $cue, k: $k, depth: $depth, asOf: $asOf, asOfMode: $asOfMode) {
    ...BeliefFields
  }
}
    fragment MemoryFields on Memory {
  id
  namespace
  text
  kind
  occurredAt
  recordedAt
  invalidatedAt
  validFrom
  validUntil
  tags
  source
  confidence
  tokens
}
fragment BeliefFields on ReconstructedBelief {
  cue
  summary
  sourceIds
  linkedContextIds
  confidence
  beliefId
  memories {
    ...MemoryFields
  }
  asOf {
    at
    mode
  }
}`) as unknown as TypedDocumentString<ReconstructQuery, ReconstructQueryVariables>;
export const ReconstructAndStoreDocument = new TypedDocumentString(`
    mutation ReconstructAndStore($cue: String!, $k: Int, $depth: Int, $runId: String, $step: Int! = 0, $asOf: DateTime, $asOfMode: AsOfMode) {
  reconstruct(
    cue: $cue
    k: $k
    depth: $depth
    runId: $runId
    step: $step
    asOf: $asOf
    asOfMode: $asOfMode
  ) {
    ...BeliefFields
  }
}
    fragment MemoryFields on Memory {
  id
  namespace
  text
  kind
  occurredAt
  recordedAt
  invalidatedAt
  validFrom
  validUntil
  tags
  source
  confidence
  tokens
}
fragment BeliefFields on ReconstructedBelief {
  cue
  summary
  sourceIds
  linkedContextIds
  confidence
  beliefId
  memories {
    ...MemoryFields
  }
  asOf {
    at
    mode
  }
}`) as unknown as TypedDocumentString<ReconstructAndStoreMutation, ReconstructAndStoreMutationVariables>;
export const PromptBundleDocument = new TypedDocumentString(`
    query PromptBundle($input: PromptInput!) {
  promptBundle(input: $input) {
    userTurn
    rendered
    renderedHash
    messages
    memoryNote
    historyReuse
    runId
    step
    memory {
      ...BundleFields
    }
    contextLedger {
      contextWindow
      availableInputTokens
      estimatedInputTokens
      remainingTokens
      fits
      memoryBudgetTokens
      memoryTokens
    }
  }
}
    fragment CapsuleFields on ContextCapsule {
  memoryId
  text
  kind
  score
  tokens
  occurredAt
  matchedTerms
  matchedWords
  reason
}
fragment BundleFields on ContextBundle {
  query
  stage
  retrieval
  budgetTokens
  minScore
  usedTokens
  capsules {
    ...CapsuleFields
  }
  excluded {
    ...CapsuleFields
  }
  skipped
  topScore
  evidenceCoverage
  uncoveredTerms
  uncoveredWords
  chronological
  orderReason
  rendered
  asOf {
    at
    mode
  }
}`) as unknown as TypedDocumentString<PromptBundleQuery, PromptBundleQueryVariables>;
export const RememberDocument = new TypedDocumentString(`
    mutation Remember($input: MemoryInput!, $runId: String, $step: Int! = 0) {
  remember(input: $input, runId: $runId, step: $step) {
    ...MemoryFields
  }
}
    fragment MemoryFields on Memory {
  id
  namespace
  text
  kind
  occurredAt
  recordedAt
  invalidatedAt
  validFrom
  validUntil
  tags
  source
  confidence
  tokens
}`) as unknown as TypedDocumentString<RememberMutation, RememberMutationVariables>;
export const RememberManyDocument = new TypedDocumentString(`
    mutation RememberMany($inputs: [MemoryInput!]!, $runId: String, $step: Int! = 0) {
  rememberMany(inputs: $inputs, runId: $runId, step: $step) {
    ...MemoryFields
  }
}
    fragment MemoryFields on Memory {
  id
  namespace
  text
  kind
  occurredAt
  recordedAt
  invalidatedAt
  validFrom
  validUntil
  tags
  source
  confidence
  tokens
}`) as unknown as TypedDocumentString<RememberManyMutation, RememberManyMutationVariables>;
export const LinkDocument = new TypedDocumentString(`
    mutation Link($input: LinkInput!) {
  link(input: $input) {
    source
    target
    kind
    weight
    createdAt
    note
  }
}
    `) as unknown as TypedDocumentString<LinkMutation, LinkMutationVariables>;
export const ForgetDocument = new TypedDocumentString(`
    mutation Forget($id: UUID!) {
  forget(id: $id) {
    memoryId
    namespace
    removedLinks {
      source
      target
      kind
    }
    removedBeliefIds
    forgottenAt
  }
}
    `) as unknown as TypedDocumentString<ForgetMutation, ForgetMutationVariables>;
export const MemoryDocument = new TypedDocumentString(`
    query Memory($id: UUID!) {
  memory(id: $id) {
    ...MemoryFields
  }
}
    fragment MemoryFields on Memory {
  id
  namespace
  text
  kind
  occurredAt
  recordedAt
  invalidatedAt
  validFrom
  validUntil
  tags
  source
  confidence
  tokens
}`) as unknown as TypedDocumentString<MemoryQuery, MemoryQueryVariables>;
export const MemoriesDocument = new TypedDocumentString(`
    query Memories($first: Int, $after: String, $kind: String, $tag: String, $since: DateTime, $until: DateTime, $knownAsOf: DateTime) {
  memories(
    first: $first
    after: $after
    kind: $kind
    tag: $tag
    since: $since
    until: $until
    knownAsOf: $knownAsOf
  ) {
    nodes {
      ...MemoryFields
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}
    fragment MemoryFields on Memory {
  id
  namespace
  text
  kind
  occurredAt
  recordedAt
  invalidatedAt
  validFrom
  validUntil
  tags
  source
  confidence
  tokens
}`) as unknown as TypedDocumentString<MemoriesQuery, MemoriesQueryVariables>;
export const HistoryDocument = new TypedDocumentString(`
    query History($id: UUID!) {
  memory(id: $id) {
    id
    history {
      validFrom
      validUntil
      supersededBy
      memory {
        ...MemoryFields
      }
    }
  }
}
    fragment MemoryFields on Memory {
  id
  namespace
  text
  kind
  occurredAt
  recordedAt
  invalidatedAt
  validFrom
  validUntil
  tags
  source
  confidence
  tokens
}`) as unknown as TypedDocumentString<HistoryQuery, HistoryQueryVariables>;
export const ViewerDocument = new TypedDocumentString(`
    query Viewer {
  viewer {
    namespace
    role
    keyId
  }
}
    `) as unknown as TypedDocumentString<ViewerQuery, ViewerQueryVariables>;