// A belief and what it was built from: DERIVED_FROM its direct sources (with their rank) and
// USED_CONTEXT the linked memories the walk reached, plus the links among those memories.
//   :param ns => 'default'
//   :param beliefId => '<a belief id returned by the reconstruct mutation>'
MATCH (b:Belief {id: $beliefId})
WHERE b.namespace = $ns
OPTIONAL MATCH used = (b)-[:DERIVED_FROM|USED_CONTEXT]->(m:Memory)
OPTIONAL MATCH link = (m)-[:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]->(:Memory)<-[:DERIVED_FROM|USED_CONTEXT]-(b)
RETURN b, used, link
