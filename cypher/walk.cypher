// walk: up to four breadth-first hops over every link kind, both directions, in one round trip;
// memories already seen are skipped (cycle-safe), each layer is sorted by id and cut to the room
// left. With $members, also what the walk reached: the memories and every link among its members.
// params: $ns: string, $frontier: list<string> (where this part of the walk goes on from),
//         $seen: list<string> (the starts and every id reached so far), $room: int (nodes the
//         walk may still add), $hops: int (0 to 4), $members: bool, $reached: list<string> (ids
//         reached by earlier parts), $starts: list<string>
// returns: layers (list<list<string>>: the ids reached at each hop of this part, 4 lists, empty
//          past the last), memories (list<map>, of every id reached: $reached and the layers),
//          links (list<{source, target, kind, weight, createdUs, createdAt, note}>, the times as
//          in links_touching); memories and links empty unless $members
WITH $frontier AS layer0, $seen AS seen0, $room AS room0
CALL (layer0, seen0, room0) {
  WITH layer0, seen0, room0
  WHERE $hops >= 1 AND room0 > 0
  UNWIND layer0 AS fid
  MATCH (:Memory {namespace: $ns, id: fid})-[:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(b:Memory)
  WHERE b.namespace = $ns AND NOT b.id IN seen0
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
  MATCH (:Memory {namespace: $ns, id: fid})-[:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(b:Memory)
  WHERE b.namespace = $ns AND NOT b.id IN seen1
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
  MATCH (:Memory {namespace: $ns, id: fid})-[:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(b:Memory)
  WHERE b.namespace = $ns AND NOT b.id IN seen2
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
  MATCH (:Memory {namespace: $ns, id: fid})-[:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]-(b:Memory)
  WHERE b.namespace = $ns AND NOT b.id IN seen3
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
                    .recordedUs, .occurredUs, .invalidatedAt}) AS memories
}
CALL (reached) {
  WITH $starts + reached AS members
  WHERE $members
  MATCH (a:Memory)-[r:CAUSES|PRECEDES|RELATES_TO|SUPERSEDES]->(b:Memory)
  WHERE a.id IN members AND b.id IN members AND a.namespace = $ns AND b.namespace = $ns
  RETURN collect({source: a.id, target: b.id, kind: type(r), weight: r.weight,
                  createdUs: r.createdUs,
                  createdAt: CASE WHEN r.createdUs IS NULL THEN r.createdAt END,
                  note: r.note}) AS links
}
RETURN layers, memories, links
