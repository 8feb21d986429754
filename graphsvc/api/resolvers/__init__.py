"""The resolvers of ``Query`` and ``Mutation``, one module per domain: :mod:`.memories`,
:mod:`.recall`, :mod:`.prompt` and :mod:`.admin`. :mod:`graphsvc.api.schema` composes the root
types from their classes.

Every resolver works in the caller's namespace, taken from the request context's
:class:`~graphsvc.api.auth.Principal` (never from an argument), calls
:class:`~graphsvc.service.MemoryService` in a worker thread, and returns domain objects, which the
types of :mod:`graphsvc.api.types` present.
"""
