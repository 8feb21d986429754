// schema: constraints and indexes graphsvc needs. Idempotent (IF NOT EXISTS); run at store open.
// Statements are separated by semicolons at the end of a line.
CREATE CONSTRAINT memory_id IF NOT EXISTS FOR (m:Memory) REQUIRE m.id IS UNIQUE;
CREATE CONSTRAINT term_stat_key IF NOT EXISTS FOR (t:TermStat) REQUIRE t.key IS UNIQUE;
CREATE CONSTRAINT namespace_stat IF NOT EXISTS FOR (s:NamespaceStat) REQUIRE s.namespace IS UNIQUE;
CREATE CONSTRAINT belief_id IF NOT EXISTS FOR (b:Belief) REQUIRE b.id IS UNIQUE;
CREATE CONSTRAINT run_key IF NOT EXISTS FOR (r:Run) REQUIRE r.key IS UNIQUE;
CREATE INDEX memory_namespace_recorded IF NOT EXISTS FOR (m:Memory) ON (m.namespace, m.recordedAt);
CREATE INDEX term_stat_namespace IF NOT EXISTS FOR (t:TermStat) ON (t.namespace);
CREATE INDEX belief_namespace IF NOT EXISTS FOR (b:Belief) ON (b.namespace);
CREATE FULLTEXT INDEX memory_terms IF NOT EXISTS FOR (m:Memory) ON EACH [m.namespace, m.termText]
  OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace', `fulltext.eventually_consistent`: false}};
