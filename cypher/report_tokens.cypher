// report_tokens: put the provider's token count on the latest 'assembled' event of a run's step.
// params: $key: string (namespace + U+001F + run id), $step: int, $tokens: int
// returns: event (map), or no row when the step has no 'assembled' event
MATCH (:Run {key: $key})-[:HAD_EVENT]->(e:ContextEvent)
WHERE e.step = $step AND e.kind = 'assembled'
WITH e ORDER BY e.seq DESC LIMIT 1
SET e.reportedTokens = $tokens
RETURN properties(e) AS event
