"""The asynchronous client, and the source of the synchronous one.

``_sync.py`` is generated from this file by ``scripts/gen_client.py`` (unasync: ``async`` and
``await`` dropped, ``AsyncGraphsvcClient`` -> ``GraphsvcClient``, ``httpx.AsyncClient`` ->
``httpx.Client``, ``aclose`` -> ``close``, ``__aenter__``/``__aexit__`` -> ``__enter__``/
``__exit__``). Edit this file, then run ``python scripts/gen_client.py``; a test fails while the
generated file is stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Self, TypeVar
from uuid import UUID

import httpx

from graphsvc.client._operations import (
    DEFAULT_TIMEOUT,
    DEFAULT_URL,
    Operation,
    bundle_op,
    drift_op,
    erase_op,
    events_op,
    explain_op,
    forget_op,
    history_op,
    link_many_op,
    link_op,
    memory_op,
    prompt_bundle_op,
    reconstruct_op,
    record_event_op,
    remember_many_op,
    remember_op,
    report_tokens_op,
    request_headers,
    result_data,
    unreachable,
)
from graphsvc.model import (
    ContextBundle,
    ContextEvent,
    EraseReceipt,
    ForgetReceipt,
    Link,
    LinkInput,
    LinkKind,
    Memory,
    MemoryInput,
    ReconstructedBelief,
    ValidityInterval,
)
from graphsvc.prompt import DriftReport, PromptBundle, PromptInput
from graphsvc.requests import BundleQuery, ReconstructQuery

R = TypeVar("R")


class AsyncGraphsvcClient:
    """An asynchronous client for graphsvc's GraphQL API; every method is a coroutine.

    Constructing it does no I/O. Use it as an async context manager, or call :meth:`aclose`.

    Args:
        url: the GraphQL endpoint (``http://host:port/graphql``).
        api_key: sent as ``Authorization: Bearer <key>``; None for a server without keys.
        timeout: seconds per request.
        http: an ``httpx.AsyncClient`` to use instead of a new one (tests, custom transports);
            the client does not close one it was given.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url
        self._headers = request_headers(api_key)
        self._owned = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)

    async def execute(
        self, document: str, variables: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Run any GraphQL document.

        Returns:
            The response's ``data``.

        Raises:
            StoreUnavailableError: the server cannot be reached or answers 502-504.
            GraphsvcError: the error the response reports, mapped back from its
                ``extensions.code`` (:data:`graphsvc.client.ERRORS`).
        """
        try:
            response = await self._http.post(
                self.url,
                json={"query": document, "variables": variables or {}},
                headers=self._headers,
            )
        except httpx.TransportError as exc:
            raise unreachable(self.url, exc) from exc
        return result_data(response)

    async def _run(self, op: Operation[R]) -> R:
        data = await self.execute(op.document, op.variables)
        return op.parse(data["result"])

    async def remember(
        self,
        text: str,
        *,
        kind: str = "observation",
        occurred_at: datetime | None = None,
        tags: Sequence[str] = (),
        source: str | None = None,
        id: UUID | None = None,
        confidence: float = 1.0,
        valid_from: datetime | None = None,
        valid_until: datetime | None = None,
        run_id: str | None = None,
        step: int = 0,
    ) -> Memory:
        """Write one memory (a rewrite of the same id and content is a no-op). ``valid_from``
        and ``valid_until`` bound when it is true (aware times; the end exclusive).

        Raises:
            BadInputError: the arguments do not make a valid memory (checked before sending).
        """
        op = remember_op(
            text,
            kind=kind,
            occurred_at=occurred_at,
            tags=tags,
            source=source,
            id=id,
            confidence=confidence,
            valid_from=valid_from,
            valid_until=valid_until,
            run_id=run_id,
            step=step,
        )
        return await self._run(op)

    async def remember_many(
        self,
        items: Sequence[MemoryInput],
        *,
        run_id: str | None = None,
        step: int = 0,
        wait_for_vectors: bool | None = None,
    ) -> list[Memory]:
        """Write memories, all or nothing; returned in input order. ``wait_for_vectors``: True
        answers once their vectors are stored (found by meaning at once), False at lexical
        speed; None: the server's setting."""
        op = remember_many_op(items, run_id=run_id, step=step, wait_for_vectors=wait_for_vectors)
        return await self._run(op)

    async def link(
        self,
        source: UUID,
        target: UUID,
        kind: LinkKind | str,
        *,
        weight: float = 1.0,
        note: str | None = None,
    ) -> Link:
        """Link two memories of the namespace.

        Raises:
            BadInputError: the arguments do not make a valid link (checked before sending).
            NotFoundError: a memory it names does not exist.
        """
        return await self._run(link_op(source, target, kind, weight=weight, note=note))

    async def link_many(self, items: Sequence[LinkInput]) -> list[Link]:
        """Write links, all or nothing."""
        return await self._run(link_many_op(items))

    async def bundle(
        self,
        request: BundleQuery | str,
        /,
        *,
        run_id: str | None = None,
        step: int = 0,
        **options: Any,
    ) -> ContextBundle:
        """What memory offers a prompt for a question under a token budget: ``request`` is a
        :class:`~graphsvc.requests.BundleQuery`, or the question with the query's other fields
        as ``options`` (``budget_tokens=500``, ``as_of=...``, ``as_of_mode="KNOWN"``). With
        ``run_id``, a memory_recall event is recorded.

        Raises:
            BadInputError: the fields do not make a valid query (checked before sending).
        """
        return await self._run(
            bundle_op(BundleQuery.of(request, options), run_id=run_id, step=step)
        )

    async def prompt_bundle(self, request: PromptInput) -> PromptBundle:
        """Assemble a prompt (:mod:`graphsvc.prompt`); with ``request.run_id``, an 'assembled'
        event is recorded at ``request.step``."""
        return await self._run(prompt_bundle_op(request))

    async def report_tokens(self, run_id: str, step: int, reported_tokens: int) -> ContextEvent:
        """Put the provider's input token count on the step's 'assembled' event.

        Raises:
            NotFoundError: the step has no 'assembled' event.
        """
        return await self._run(report_tokens_op(run_id, step, reported_tokens))

    async def record_event(
        self,
        run_id: str,
        step: int,
        kind: str,
        *,
        detail: str | None = None,
        est_tokens: int | None = None,
    ) -> ContextEvent:
        """Record a harness decision: reread, reread_refused, served, replan or stalled."""
        return await self._run(record_event_op(run_id, step, kind, detail, est_tokens))

    async def drift(self, run_id: str) -> DriftReport:
        """Estimated against reported tokens over a run."""
        return await self._run(drift_op(run_id))

    async def reconstruct(
        self,
        request: ReconstructQuery | str,
        /,
        *,
        run_id: str | None = None,
        step: int = 0,
        **options: Any,
    ) -> ReconstructedBelief:
        """Reconstruct and store the belief (the mutation; a run gets an event): ``request`` is
        a :class:`~graphsvc.requests.ReconstructQuery`, or the cue with the query's other fields
        as ``options`` (``k=3``, ``as_of=...``). :meth:`explain` only reads.

        Raises:
            BadInputError: the fields do not make a valid query (checked before sending).
        """
        op = reconstruct_op(ReconstructQuery.of(request, options), run_id=run_id, step=step)
        return await self._run(op)

    async def explain(
        self, request: ReconstructQuery | str, /, **options: Any
    ) -> ReconstructedBelief:
        """The belief memory supports about a cue, without storing it (a read key may call
        it): as :meth:`reconstruct`, read only.

        Raises:
            BadInputError: the fields do not make a valid query (checked before sending).
        """
        return await self._run(explain_op(ReconstructQuery.of(request, options)))

    async def history(self, memory_id: UUID) -> list[ValidityInterval]:
        """A fact's history: the memories joined to this one by SUPERSEDES links, either way
        (this one included), oldest first, each with its effective validity; empty when the
        memory does not exist."""
        return await self._run(history_op(memory_id))

    async def forget(self, memory_id: UUID) -> ForgetReceipt:
        """Remove a memory, its links and the beliefs built on it.

        Raises:
            NotFoundError: the memory does not exist.
        """
        return await self._run(forget_op(memory_id))

    async def erase(
        self,
        *,
        everything: bool = False,
        tag: str | None = None,
        source: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> EraseReceipt:
        """Erase the whole namespace (``everything``), or every memory matching all the filters
        given (a tag, a source, a time range ``since <= when < until``), with their links and the
        beliefs built on them; say what was removed. When the receipt says ``complete=False``
        the server stopped at its time budget: call again with the same arguments to finish.

        Raises:
            BadInputError: nothing to erase was named, or ``everything`` with a filter.
        """
        return await self._run(
            erase_op(everything=everything, tag=tag, source=source, since=since, until=until)
        )

    async def memory(self, memory_id: UUID) -> Memory | None:
        """A memory by id, or None."""
        return await self._run(memory_op(memory_id))

    async def events(self, run_id: str) -> list[ContextEvent]:
        """The context events of a run."""
        return await self._run(events_op(run_id))

    async def aclose(self) -> None:
        """Release the client's connections (an ``http`` client it was given stays open)."""
        if self._owned:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
