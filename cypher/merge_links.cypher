// merge_links: create links between memories of one namespace, or update weight and note of an
// existing link of the same kind (its createdAt stays). The type comes from an allowlisted kind.
// params: $ns: string, $links: list<{source, target, kind, weight, note, createdAt}>
// returns: merged (count)
UNWIND $links AS l
MATCH (a:Memory {namespace: $ns, id: l.source})
MATCH (b:Memory {namespace: $ns, id: l.target})
FOREACH (_ IN CASE WHEN l.kind = 'CAUSES' THEN [1] ELSE [] END |
  MERGE (a)-[r:CAUSES]->(b) ON CREATE SET r.createdAt = l.createdAt
  SET r.weight = l.weight, r.note = l.note)
FOREACH (_ IN CASE WHEN l.kind = 'PRECEDES' THEN [1] ELSE [] END |
  MERGE (a)-[r:PRECEDES]->(b) ON CREATE SET r.createdAt = l.createdAt
  SET r.weight = l.weight, r.note = l.note)
FOREACH (_ IN CASE WHEN l.kind = 'RELATES_TO' THEN [1] ELSE [] END |
  MERGE (a)-[r:RELATES_TO]->(b) ON CREATE SET r.createdAt = l.createdAt
  SET r.weight = l.weight, r.note = l.note)
FOREACH (_ IN CASE WHEN l.kind = 'SUPERSEDES' THEN [1] ELSE [] END |
  MERGE (a)-[r:SUPERSEDES]->(b) ON CREATE SET r.createdAt = l.createdAt
  SET r.weight = l.weight, r.note = l.note)
RETURN count(*) AS merged
