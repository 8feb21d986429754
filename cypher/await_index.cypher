// await_index: wait until an index is online (a vector index just created).
// params: $name: string, $seconds: int
// returns: nothing
CALL db.awaitIndex($name, $seconds)
