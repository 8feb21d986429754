// walk: up to four breadth-first hops over every link kind, both directions, in one round trip;
// memories already seen are skipped (cycle-safe), each layer is sorted by id and cut to the room
// left. With $members, also what the walk reached: the memories and every link among its members.
// params: $ns: string, $frontier: list<string> (where this part of the walk goes on from),
//         $seen: list<string> (the starts and every id reached so far), $room: int (nodes the
//         walk may still add), $hops: int (0 to 4), $members: bool, $reached: list<string> (ids
//         reached by earlier parts), $starts: list<string>, $asOf (below)
// returns: layers (list<list<string>>: the ids reached at each hop of this part, 4 lists, empty
//          past the last), memories (list<map>, of every id reached: $reached and the layers),
//          links (list<{source, target, kind, weight, createdUs, createdAt, note}>, the times as
//          in links_touching); memories and links empty unless $members
// $asOf: map or null: {us: int (the instant, epoch microseconds), known: bool}: the walk goes
// only through what a read as of then sees (graphsvc.validity: KNOWN, recordedUs <= us; VALID,
// the start, validFromUs else occurredUs else recordedUs, <= us < validUntilUs, and no memory
// that SUPERSEDES it started by then; KNOWN also only over links written by then, createdUs <=
// us); null: everything.
WITH $frontier AS layer0, $seen AS seen0, $room AS room0
CALL (layer0, seen0, room0) {
  WITH layer0, seen0, room0
  WHERE $hops >= 1 AND room0 > 0
  UNWIND layer0 AS fid
  MATCH (:Memory {namespace: $ns, id: fid})-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(b:Memory)
  WHERE b.namespace = $ns AND NOT b.id IN seen0
    AND ($asOf IS NULL OR NOT $asOf.known OR r.createdUs <= $asOf.us)
    AND ($asOf IS NULL OR CASE WHEN $asOf.known THEN b.recordedUs <= $asOf.us
      ELSE coalesce(b.validFromUs, b.occurredUs, b.recordedUs) <= $asOf.us
           AND (b.validUntilUs IS NULL OR b.validUntilUs > $asOf.us)
           AND NOT EXISTS { MATCH (n:Memory)-[:SUPERSEDES]->(b)
                            WHERE coalesce(n.validFromUs, n.occurredUs, n.recordedUs) <= $asOf.us }
      END)
  WITH DISTINCT b.id AS id
  ORDER BY id
  RETURN collect(id) AS found1
}
WITH *, found1[0..room0] AS layer1
WITH *, seen0 + layer1 AS seen1, room0 - size(layer1) AS room1
CALL (layer1, seen1, room1) {
  WITH layer1, seen1, room1
  WHERE $hops >= 2 AND room1 > 0
  UNWIND layer1 AS fid
  MATCH (:Memory {namespace: $ns, id: fid})-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(b:Memory)
  WHERE b.namespace = $ns AND NOT b.id IN seen1
    AND ($asOf IS NULL OR NOT $asOf.known OR r.createdUs <= $asOf.us)
    AND ($asOf IS NULL OR CASE WHEN $asOf.known THEN b.recordedUs <= $asOf.us
      ELSE coalesce(b.validFromUs, b.occurredUs, b.recordedUs) <= $asOf.us
           AND (b.validUntilUs IS NULL OR b.validUntilUs > $asOf.us)
           AND NOT EXISTS { MATCH (n:Memory)-[:SUPERSEDES]->(b)
                            WHERE coalesce(n.validFromUs, n.occurredUs, n.recordedUs) <= $asOf.us }
      END)
  WITH DISTINCT b.id AS id
  ORDER BY id
  RETURN collect(id) AS found2
}
WITH *, found2[0..room1] AS layer2
WITH *, seen1 + layer2 AS seen2, room1 - size(layer2) AS room2
CALL (layer2, seen2, room2) {
  WITH layer2, seen2, room2
  WHERE $hops >= 3 AND room2 > 0
  UNWIND layer2 AS fid
  MATCH (:Memory {namespace: $ns, id: fid})-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(b:Memory)
  WHERE b.namespace = $ns AND NOT b.id IN seen2
    AND ($asOf IS NULL OR NOT $asOf.known OR r.createdUs <= $asOf.us)
    AND ($asOf IS NULL OR CASE WHEN $asOf.known THEN b.recordedUs <= $asOf.us
      ELSE coalesce(b.validFromUs, b.occurredUs, b.recordedUs) <= $asOf.us
           AND (b.validUntilUs IS NULL OR b.validUntilUs > $asOf.us)
           AND NOT EXISTS { MATCH (n:Memory)-[:SUPERSEDES]->(b)
                            WHERE coalesce(n.validFromUs, n.occurredUs, n.recordedUs) <= $asOf.us }
      END)
  WITH DISTINCT b.id AS id
  ORDER BY id
  RETURN collect(id) AS found3
}
WITH *, found3[0..room2] AS layer3
WITH *, seen2 + layer3 AS seen3, room2 - size(layer3) AS room3
CALL (layer3, seen3, room3) {
  WITH layer3, seen3, room3
  WHERE $hops >= 4 AND room3 > 0
  UNWIND layer3 AS fid
  MATCH (:Memory {namespace: $ns, id: fid})-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(b:Memory)
  WHERE b.namespace = $ns AND NOT b.id IN seen3
    AND ($asOf IS NULL OR NOT $asOf.known OR r.createdUs <= $asOf.us)
    AND ($asOf IS NULL OR CASE WHEN $asOf.known THEN b.recordedUs <= $asOf.us
      ELSE coalesce(b.validFromUs, b.occurredUs, b.recordedUs) <= $asOf.us
           AND (b.validUntilUs IS NULL OR b.validUntilUs > $asOf.us)
           AND NOT EXISTS { MATCH (n:Memory)-[:SUPERSEDES]->(b)
                            WHERE coalesce(n.validFromUs, n.occurredUs, n.recordedUs) <= $asOf.us }
      END)
  WITH DISTINCT b.id AS id
  ORDER BY id
  RETURN collect(id) AS found4
}
WITH *, found4[0..room3] AS layer4
WITH *, seen3 + layer4 AS seen4, room3 - size(layer4) AS room4
WITH [layer1, layer2, layer3, layer4] AS layers,
     CASE WHEN $members THEN $reached + layer1 + layer2 + layer3 + layer4 ELSE [] END AS reached
CALL (reached) {
  UNWIND reached AS id
  MATCH (m:Memory {namespace: $ns, id: id})
  RETURN collect(m {.id, .text, .kind, .tags, .source, .confidence, .tokens, .terms, .termSeq,
                    .recordedUs, .occurredUs, .invalidatedAt, .validFromUs, .validUntilUs}) AS memories
}
CALL (reached) {
  WITH $starts + reached AS members
  WHERE $members
  MATCH (a:Memory)-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]->(b:Memory)
  WHERE a.id IN members AND b.id IN members AND a.namespace = $ns AND b.namespace = $ns
    AND ($asOf IS NULL OR NOT $asOf.known OR r.createdUs <= $asOf.us)
  RETURN collect({source: a.id, target: b.id, kind: type(r), weight: r.weight,
                  createdUs: r.createdUs,
                  createdAt: CASE WHEN r.createdUs IS NULL THEN r.createdAt END,
                  note: r.note}) AS links
}
RETURN layers, memories, links
