// schema: constraints and indexes graphsvc needs. Idempotent (IF NOT EXISTS, IF EXISTS); run at
// store open. Statements are separated by semicolons at the end of a line.
// Memory ids are per namespace: (namespace, id) is unique, the same id may be in two namespaces.
// Migration of a database made before that: the old constraint on Memory.id alone is dropped
// (after the composite one exists, so a memory is never without a unique index); nothing else
// changes, ids stay.
CREATE CONSTRAINT memory_namespace_id IF NOT EXISTS FOR (m:Memory) REQUIRE (m.namespace, m.id) IS UNIQUE;
DROP CONSTRAINT memory_id IF EXISTS;
CREATE CONSTRAINT term_stat_key IF NOT EXISTS FOR (t:TermStat) REQUIRE t.key IS UNIQUE;
CREATE CONSTRAINT namespace_stat IF NOT EXISTS FOR (s:NamespaceStat) REQUIRE s.namespace IS UNIQUE;
CREATE CONSTRAINT belief_id IF NOT EXISTS FOR (b:Belief) REQUIRE b.id IS UNIQUE;
CREATE CONSTRAINT run_key IF NOT EXISTS FOR (r:Run) REQUIRE r.key IS UNIQUE;
CREATE CONSTRAINT vector_model_namespace IF NOT EXISTS FOR (v:VectorModel) REQUIRE v.namespace IS UNIQUE;
CREATE INDEX memory_namespace_recorded IF NOT EXISTS FOR (m:Memory) ON (m.namespace, m.recordedAt);
// As-of reads (graphsvc.validity): ranges of recording and validity times per namespace, for
// Neo4j Browser's as_of.cypher and any Cypher asking what was known or true at an instant (the
// bundle's own as-of filter reads these properties on the candidates the full-text index found).
CREATE INDEX memory_namespace_recorded_us IF NOT EXISTS FOR (m:Memory) ON (m.namespace, m.recordedUs);
CREATE INDEX memory_namespace_valid_from IF NOT EXISTS FOR (m:Memory) ON (m.namespace, m.validFromUs);
CREATE INDEX memory_namespace_valid_until IF NOT EXISTS FOR (m:Memory) ON (m.namespace, m.validUntilUs);
// Memories with a vector (vectorDimension is set only on them), per namespace: clearing and
// scanning a namespace's vectors. Each dimension's vector index is made by the store
// (create_vector_index.cypher) when a model of that dimension is first set.
CREATE INDEX memory_namespace_vector IF NOT EXISTS FOR (m:Memory) ON (m.namespace, m.vectorDimension);
// The vector queue: memories that wait for their vector (vectorQueuedUs, their recordedUs, is set
// only on them), oldest first per namespace (pending_vectors.cypher); and the lease of the one
// process that drains it (take_vector_queue.cypher).
CREATE INDEX memory_vector_queue IF NOT EXISTS FOR (m:Memory) ON (m.namespace, m.vectorQueuedUs);
CREATE CONSTRAINT queue_lease IF NOT EXISTS FOR (l:QueueLease) REQUIRE l.queue IS UNIQUE;
CREATE INDEX term_stat_namespace IF NOT EXISTS FOR (t:TermStat) ON (t.namespace);
// How many memories of a namespace have each kind, tag, source and day (bump_facet_stats).
CREATE CONSTRAINT facet_stat_key IF NOT EXISTS FOR (f:FacetStat) REQUIRE f.key IS UNIQUE;
CREATE INDEX facet_stat_namespace IF NOT EXISTS FOR (f:FacetStat) ON (f.namespace, f.facet, f.value);
CREATE INDEX belief_namespace IF NOT EXISTS FOR (b:Belief) ON (b.namespace);
CREATE INDEX run_namespace IF NOT EXISTS FOR (r:Run) ON (r.namespace);
CREATE INDEX context_event_namespace IF NOT EXISTS FOR (e:ContextEvent) ON (e.namespace);
CREATE FULLTEXT INDEX memory_terms IF NOT EXISTS FOR (m:Memory) ON EACH [m.namespace, m.termText]
  OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace', `fulltext.eventually_consistent`: false}};
