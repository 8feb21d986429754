"""Recall by meaning, the encoder's side: from a text to the int8 codes the stores keep, and the
exact search over them (docs/design.md, dense recall).

- :mod:`~graphsvc.embedding.encoder`: the :class:`Embedder` seam and the ONNX encoder.
- :mod:`~graphsvc.embedding.registry`: the packaged models, where their pinned files are, and what
  recall reads of each model's cosines.
- :mod:`~graphsvc.embedding.install`: ``graphsvc model install``, fetching and checking the files.
- :mod:`~graphsvc.embedding.codes`: stored codes and their exact cosines (the same bits on every
  store).
- :mod:`~graphsvc.embedding.search`: the exact nearest rows without reading every vector.
- :mod:`~graphsvc.embedding.dense_recall`: a service's encoder, and whether a namespace is
  answered by meaning.

A query's side (its codes encoded once per request, batched with concurrent requests', cached) is
recall's: :mod:`graphsvc.recall.query_encoder`; the vector queue, which encodes the memories
written without their vector, drives a store and this encoder and so is the service's:
:mod:`graphsvc.service.vector_queue`. Import from the modules; the package holds none of
their names.
"""
