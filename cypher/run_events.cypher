// run_events: the events of a run in the order recorded.
// params: $key: string (namespace + U+001F + run id)
// returns: event (map)
MATCH (:Run {key: $key})-[:HAD_EVENT]->(e:ContextEvent)
RETURN properties(e) AS event
ORDER BY e.seq
