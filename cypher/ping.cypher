// ping: the server answers queries.
// params: none
// returns: ok
RETURN 1 AS ok
