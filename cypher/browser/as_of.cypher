// As of an instant: the memories of a namespace that were true then (VALID: started by then,
// validUntil after it, and no memory that SUPERSEDES them started by then) and recorded by now,
// newest start first, with the SUPERSEDES links around them. For what memory held then (KNOWN),
// keep only `m.recordedUs <= $at` instead of the WHERE on validity.
// In Neo4j Browser first set the parameters, e.g.
//   :param ns => 'default'
//   :param at => datetime('2024-03-11T00:00:00Z').epochMillis * 1000
MATCH (m:Memory)
WHERE m.namespace = $ns
  AND coalesce(m.validFromUs, m.occurredUs, m.recordedUs) <= $at
  AND (m.validUntilUs IS NULL OR m.validUntilUs > $at)
  AND NOT EXISTS {
    MATCH (n:Memory)-[:SUPERSEDES]->(m)
    WHERE coalesce(n.validFromUs, n.occurredUs, n.recordedUs) <= $at
  }
WITH m
ORDER BY coalesce(m.validFromUs, m.occurredUs, m.recordedUs) DESC, m.id
LIMIT 100
OPTIONAL MATCH path = (m)-[:SUPERSEDES]-(:Memory)
RETURN m, path
