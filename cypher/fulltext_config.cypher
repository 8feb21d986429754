// fulltext_config: how the full-text index memory_terms is made, which the queries that find
// candidates rely on (its namespace field matched as one exact token, so they read no
// namespace property to check it).
// params: none
// returns: labels (list<string>), properties (list<string>), analyzer (string); no row when
//          the index does not exist
SHOW FULLTEXT INDEXES YIELD name, labelsOrTypes, properties, options
WHERE name = 'memory_terms'
RETURN labelsOrTypes AS labels, properties, options.indexConfig.`fulltext.analyzer` AS analyzer
