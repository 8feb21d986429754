"""Tools beside the service: evaluation on public datasets, benchmarks, dataset converters and the
fault runner.

They import the service; the service never imports them, and the ``graphsvc`` command loads each of
them only when its command runs.
"""
