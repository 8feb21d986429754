// after_import: what Neo4j's CSV importer cannot write, run once on the imported store before its
// first use (`scripts/neo4j.sh import`, written beside the CSV files by `graphsvc bulk-export`).
// A memory without tags gets the empty list, as a normal import gives (the importer stores no
// empty list). Run again while it returns n > 0: each run sets at most 20,000 memories.
// params: none
// returns: n
MATCH (m:Memory) WHERE m.tags IS NULL WITH m LIMIT 20000 SET m.tags = [] RETURN count(m) AS n;
