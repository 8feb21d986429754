/** The shapes the explorer reads from the public GraphQL API (see schema.graphql). */

export type LinkKind = "CAUSES" | "PRECEDES" | "RELATES_TO" | "SUPERSEDES";

export type OrderReason = "QUESTION_ASKS_ORDER" | "EVIDENCE_SPANS_DAYS";

export interface Capsule {
  memoryId: string;
  text: string;
  kind: string;
  score: number;
  tokens: number;
  occurredAt: string | null;
  matchedTerms: string[];
  /** The question's own words for matchedTerms (which are stems), one for each. */
  matchedWords: string[];
  reason: string | null;
  /** The memory's effective interval [validFrom, validUntil) and what supersedes it. */
  validFrom?: string | null;
  validUntil?: string | null;
  supersededBy?: string[];
  /** Whether it is true at the instant the bundle answers for (now, or its asOf). */
  validity?: Validity;
}

export type Validity = "CURRENT" | "SUPERSEDED" | "EXPIRED" | "NOT_YET";

/** The view of the past an answer used (echoed by bundle). */
export interface AsOf {
  at: string;
  mode: "KNOWN" | "VALID";
}

export interface Bundle {
  query: string;
  stage: string;
  budgetTokens: number;
  minScore: number;
  usedTokens: number;
  capsules: Capsule[];
  excluded: Capsule[];
  skipped: boolean;
  topScore: number;
  evidenceCoverage: number;
  uncoveredTerms: string[];
  /** The question's own words for uncoveredTerms (which are stems), one for each. */
  uncoveredWords: string[];
  chronological: boolean;
  /** Why the capsules are oldest first; null when they are best match first. */
  orderReason: OrderReason | null;
  rendered: string;
  asOf?: AsOf | null;
}

export interface MemoryRef {
  id: string;
  text: string;
  kind: string;
  occurredAt: string | null;
  validFrom?: string | null;
}

export interface Link {
  source: string;
  target: string;
  kind: LinkKind;
  weight: number;
  note: string | null;
  sourceMemory?: MemoryRef | null;
  targetMemory?: MemoryRef | null;
}

export interface Memory extends MemoryRef {
  recordedAt: string;
  invalidatedAt?: string | null;
  tags: string[];
  source: string | null;
  confidence: number;
  tokens?: number;
  links: Link[];
  validFrom?: string | null;
  validUntil?: string | null;
  history?: ValidityInterval[];
}

/** One memory of a fact's history, with its effective interval [validFrom, validUntil). */
export interface ValidityInterval {
  memory: MemoryRef & { recordedAt: string };
  validFrom: string;
  validUntil: string | null;
  supersededBy: string[];
}

export interface MemoryValidity {
  memoryId: string;
  validFrom: string;
  validUntil: string | null;
  supersededBy: string[];
  validity: Validity;
}

export interface Belief {
  cue: string;
  summary: string;
  confidence: number;
  sourceIds: string[];
  linkedContextIds: string[];
  memories: Memory[];
  validity?: MemoryValidity[];
}

export interface TimelineMemory {
  id: string;
  text: string;
  kind: string;
  occurredAt: string | null;
  recordedAt: string;
  tags: string[];
  source: string | null;
  validFrom?: string | null;
  validUntil?: string | null;
  invalidatedAt?: string | null;
}

export interface MemoryPage {
  nodes: TimelineMemory[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

export interface ContextEvent {
  runId: string;
  seq: number;
  step: number;
  kind: string;
  detail: string | null;
  estTokens: number | null;
  reportedTokens: number | null;
  recordedAt: string;
}

export interface DriftStep {
  step: number;
  seq: number;
  estTokens: number | null;
  reportedTokens: number | null;
  ratio: number | null;
}

export interface DriftReport {
  runId: string;
  steps: DriftStep[];
  reportedSteps: number[];
  unreportedSteps: number[];
  estimatedTokens: number;
  reportedTokens: number;
  ratio: number | null;
}

export interface Viewer {
  namespace: string;
  role: string;
  keyId: string;
}

export interface Stats {
  memories: number;
  links: number;
  beliefs: number;
}

export interface ForgetReceipt {
  memoryId: string;
  namespace: string;
  removedLinks: Array<{ source: string; target: string; kind: string }>;
  removedBeliefIds: string[];
  forgottenAt: string;
}

export interface FacetCount {
  value: string;
  count: number;
}

export interface Facet {
  distinct: number;
  top: FacetCount[];
}

export interface CausalComponent {
  seedId: string;
  seedText: string;
  size: number;
  links: number;
  complete: boolean;
  memberIds: string[];
}

export interface Overview {
  namespace: string;
  memories: number;
  kinds: Facet;
  tags: Facet;
  sources: Facet;
  days: Facet;
  components: CausalComponent[];
  componentsNote: string | null;
}
