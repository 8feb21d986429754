"""graphsvc-lab: the laboratory beside the product. Evaluation on public datasets (``eval``),
benchmarks (``bench``, ``bench-http``), dataset converters (``convert``) and a Neo4j of one's own
for the fault runner (``own_neo4j``).

It imports the service; the service never imports it. Installed, it adds its commands to
``graphsvc`` through the ``graphsvc.commands`` entry point (:mod:`graphsvc_lab.commands`), and the
``graphsvc`` command loads each of them only when it runs.
"""
