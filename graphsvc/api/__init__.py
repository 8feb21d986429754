"""graphsvc's GraphQL API: the strawberry schema, the ASGI app, API keys and the ``serve`` command.

Import the parts from their modules (``graphsvc.api.schema``, ``graphsvc.api.app``,
``graphsvc.api.serve``): this package module stays empty so that importing
``graphsvc.api.auth`` (which the client does, for its error types) does not pull in strawberry,
Starlette or uvicorn.
"""
