"""What a GraphQL operation would cost, estimated before it runs, and the extension that refuses
an operation above ``GRAPHSVC_MAX_QUERY_COST``.

The depth and alias limits (:mod:`graphsvc.api.limits`) bound a document's shape, not its work:
``links { targetMemory { links { ... } } }`` repeats everything under it once per link, so four
levels within the depth limit multiply a page of memories by the links per memory four times.
The cost counts that: every field resolved counts 1, and the fields under a list count once per
item the list is expected to hold:

- a page of ``memories``: its ``first`` (default ``GRAPHSVC_DEFAULT_PAGE_SIZE``), at most the
  namespace's memories when its counts are read;
- ``Memory.links`` and ``ForgetReceipt.removedLinks``: the namespace's links per memory (twice
  its links over its memories, rounded up, at least 1: every link touches two memories), read
  from its counts and kept for :data:`COUNTS_TTL` seconds;
- ``ReconstructedBelief.memories``: ``k`` (default ``GRAPHSVC_DEFAULT_K``) plus
  ``GRAPHSVC_WALK_MAX_NODES`` (at most the namespace's memories);
- a bundle's ``capsules``: ``maxCapsules`` (default ``GRAPHSVC_DEFAULT_MAX_CAPSULES``), its
  ``excluded``: ``GRAPHSVC_RANKED_LIMIT``;
- ``rememberMany`` and ``linkMany``: their inputs;
- any other list of objects: :data:`OTHER_LIST_SIZE`.

Introspection fields (``__schema``, ``__type``) count 1: the schema is finite. ``@skip`` and
``@include`` are ignored (the estimate is for the document as written). Fragments are costed once
per spread context (memoised), so the estimate is linear in the document however it spreads.

An estimate can be wrong (one memory may hold far more links than the average): the rows an
operation really reads are counted too (:mod:`graphsvc.api.budget`).
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_named_type,
    value_from_ast_untyped,
)
from strawberry.extensions import SchemaExtension

from graphsvc.api.budget import COST_CAP, CostPlan
from graphsvc.api.context import RequestContext
from graphsvc.api.inflight import InFlight, Ticket
from graphsvc.errors import GraphsvcError, LimitExceededError

#: The estimated length of a list of objects that no argument or limit bounds (the parts of a
#: prompt bundle, the context events of a run, the steps of a drift report).
OTHER_LIST_SIZE = 20
#: Seconds a namespace's links per memory are kept before they are read again.
COUNTS_TTL = 5.0
#: The share of GRAPHSVC_REQUEST_TIMEOUT an operation may wait for room in its key's and
#: namespace's budget in flight; the rest is left for it to run.
WAIT_SHARE = 0.5


@dataclass(frozen=True)
class Estimates:
    """The list lengths the cost counts (see the module).

    Attributes:
        default_page_size / max_page_size: a page of ``memories``.
        links_per_memory: links touching a memory, on average (at least 1).
        default_k / max_k: direct hits of a reconstruct.
        walk_max_nodes: memories a reconstruct walk adds.
        default_max_capsules / max_capsules: capsules of a bundle.
        ranked_limit: ranked candidates of a bundle (capsules and exclusions).
        memories: the namespace's memories, when its counts were read: no list of memories
            is longer (``None``: not known).
    """

    default_page_size: int
    max_page_size: int
    links_per_memory: int
    default_k: int
    max_k: int
    walk_max_nodes: int
    default_max_capsules: int
    max_capsules: int
    ranked_limit: int
    memories: int | None = None

    def at_most_memories(self, size: int) -> int:
        """``size``, or the namespace's memories when they are fewer (at least 1)."""
        return size if self.memories is None else max(1, min(size, self.memories))


def _int(value: Any, default: int, most: int) -> int:
    """An integer argument as the resolver will see it: ``default`` when absent or not an
    integer (the resolver refuses those), at least 1 and at most ``most``."""
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return max(1, min(value, most))


def _length(value: Any) -> int:
    return len(value) if isinstance(value, list) else 1


def _inner_sizes(
    type_name: str, field_name: str, args: dict[str, Any], est: Estimates
) -> tuple[tuple[str, int], ...]:
    """The lengths of the lists inside a field's value that its own arguments decide."""
    if (type_name, field_name) == ("Query", "memories"):
        page = est.at_most_memories(
            _int(args.get("first"), est.default_page_size, est.max_page_size)
        )
        return (("edges", page), ("nodes", page))
    if field_name == "reconstruct":
        k = _int(args.get("k"), est.default_k, est.max_k)
        return (("memories", est.at_most_memories(k + est.walk_max_nodes)),)
    if (type_name, field_name) == ("Query", "bundle"):
        capsules = _int(args.get("maxCapsules"), est.default_max_capsules, est.max_capsules)
        return (("capsules", capsules), ("excluded", est.ranked_limit))
    return ()


class _Walk:
    """One costing of one operation (see the module)."""

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: dict[str, FragmentDefinitionNode],
        variables: dict[str, Any],
        est: Estimates,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.est = est
        self.counts_links = False  # a list of links was costed
        # id of each `Memory.links` field node -> the cost of one link's selection under it
        self.per_link: dict[int, int] = {}
        self._memo: dict[tuple[str, tuple[tuple[str, int], ...]], int] = {}
        self._open: set[str] = set()

    def _args(self, node: FieldNode) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for argument in node.arguments or ():
            try:
                found[argument.name.value] = value_from_ast_untyped(argument.value, self.variables)
            except Exception:  # an odd literal: the argument counts as absent
                continue
        return found

    def _list_size(
        self,
        parent: GraphQLObjectType,
        name: str,
        args: dict[str, Any],
        sizes: tuple[tuple[str, int], ...],
    ) -> int:
        for inner, size in sizes:
            if inner == name:
                return size
        if (parent.name, name) in {("Memory", "links"), ("ForgetReceipt", "removedLinks")}:
            self.counts_links = True
            return self.est.links_per_memory
        if parent.name == "Mutation" and name == "rememberMany":
            return _length(args.get("inputs"))
        if parent.name == "Mutation" and name == "linkMany":
            return _length(args.get("inputs"))
        return OTHER_LIST_SIZE

    def selections(
        self,
        selection_set: SelectionSetNode,
        parent: GraphQLNamedType | None,
        sizes: tuple[tuple[str, int], ...],
    ) -> int:
        """The cost of one object's selection of ``parent``'s fields."""
        total = 0
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                total += self.field(selection, parent, sizes)
            elif isinstance(selection, InlineFragmentNode):
                on = selection.type_condition
                target = self.schema.get_type(on.name.value) if on is not None else parent
                total += self.selections(selection.selection_set, target, sizes)
            elif isinstance(selection, FragmentSpreadNode):
                total += self.spread(selection.name.value, sizes)
            total = min(total, COST_CAP)
        return total

    def spread(self, name: str, sizes: tuple[tuple[str, int], ...]) -> int:
        key = (name, sizes)
        found = self._memo.get(key)
        if found is not None:
            return found
        fragment = self.fragments.get(name)
        if fragment is None or name in self._open:  # validation reports both
            return 0
        self._open.add(name)
        target = self.schema.get_type(fragment.type_condition.name.value)
        cost = self.selections(fragment.selection_set, target, sizes)
        self._open.discard(name)
        self._memo[key] = cost
        return cost

    def field(
        self, node: FieldNode, parent: GraphQLNamedType | None, sizes: tuple[tuple[str, int], ...]
    ) -> int:
        name = node.name.value
        if (
            node.selection_set is None
            or name.startswith("__")
            or not isinstance(parent, GraphQLObjectType)
            or name not in parent.fields
        ):
            return 1
        args = self._args(node)
        field_type: GraphQLOutputType = parent.fields[name].type
        count = 1
        while isinstance(field_type, GraphQLNonNull | GraphQLList):
            if isinstance(field_type, GraphQLList):
                count = min(count * self._list_size(parent, name, args, sizes), COST_CAP)
            field_type = field_type.of_type
        inner = _inner_sizes(parent.name, name, args, self.est)
        below = self.selections(node.selection_set, get_named_type(field_type), inner)
        if (parent.name, name) == ("Memory", "links"):
            self.per_link[id(node)] = below
        return min(1 + count * below, COST_CAP)


def _operation(document: DocumentNode, name: str | None) -> OperationDefinitionNode | None:
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if name is None:
        return operations[0] if len(operations) == 1 else None
    return next((o for o in operations if o.name is not None and o.name.value == name), None)


@dataclass(frozen=True)
class Cost:
    """An operation's estimated cost, and whether it counted lists of links (whose length
    comes from the namespace's counts).

    Attributes:
        per_link: for each ``Memory.links`` field of the document (by ``id`` of its node), the
            cost of one link's selection: what each link more or fewer than the estimate
            assumed adds to the cost once the links are read (:class:`CostPlan`).
    """

    value: int
    counts_links: bool
    per_link: Mapping[int, int] = field(default_factory=dict)


#: Costs of operations kept (per schema): a client that sends one document again and again
#: (an agent's loop, or an attacker's) is costed once per estimate.
COST_MEMO = 512


def frozen_variables(variables: Any) -> str | None:
    """An operation's variables as a key (sorted JSON), ``None`` when they are no JSON (an
    in-process caller's objects)."""
    try:
        return json.dumps(variables, sort_keys=True) if variables else ""
    except (TypeError, ValueError):
        return None


class CostMemo:
    """Operation costs by document, operation, variables and estimates, least recently used
    dropped first (:data:`COST_MEMO`). Documents come from the prepared-document cache, so the
    same document is the same object; the memo holds it, so its id is not reused."""

    def __init__(self, size: int = COST_MEMO) -> None:
        self.size = size
        self._kept: OrderedDict[tuple[Any, ...], tuple[DocumentNode, Cost]] = OrderedDict()

    def cost(
        self,
        schema: GraphQLSchema,
        document: DocumentNode,
        operation_name: str | None,
        variables: dict[str, Any] | None,
        est: Estimates,
    ) -> Cost:
        """:func:`operation_cost`, from the memo when it holds it."""
        frozen = frozen_variables(variables)
        if frozen is None:
            return operation_cost(schema, document, operation_name, variables, est)
        key = (id(schema), id(document), operation_name, frozen, est)
        found = self._kept.get(key)
        if found is not None and found[0] is document:
            self._kept.move_to_end(key)
            return found[1]
        cost = operation_cost(schema, document, operation_name, variables, est)
        if self.size:
            self._kept[key] = (document, cost)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return cost


def operation_cost(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: dict[str, Any] | None,
    est: Estimates,
) -> Cost:
    """The estimated cost of the operation ``operation_name`` names (the only one when
    ``None``; 0 when there is no such operation). Linear in the document."""
    operation = _operation(document, operation_name)
    if operation is None:
        return Cost(0, counts_links=False)
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    walk = _Walk(schema, fragments, variables or {}, est)
    root = schema.get_root_type(operation.operation)
    value = walk.selections(operation.selection_set, root, ())
    return Cost(value, walk.counts_links, walk.per_link)


def links_per_memory(memories: int, links: int) -> int:
    """Links touching a memory on average: each link touches two (at least 1)."""
    return max(1, math.ceil(2 * links / max(memories, 1)))


class LinkCounts:
    """Each namespace's memories and links per memory, read from its counts at most every
    :data:`COUNTS_TTL` seconds (per service and namespace)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._kept: dict[tuple[int, str], tuple[float, int, int]] = {}

    async def of(self, ctx: RequestContext) -> tuple[int, int]:
        """The caller's namespace's memories and links per memory."""
        key = (id(ctx.service), ctx.namespace)
        kept = self._kept.get(key)
        now = self.clock()
        if kept is not None and now - kept[0] < COUNTS_TTL:
            return kept[1], kept[2]
        stats = await ctx.run(ctx.service.stats, ctx.namespace)
        found = (stats.memories, links_per_memory(stats.memories, stats.links))
        if len(self._kept) > 10_000:  # many namespaces: start again rather than grow
            self._kept.clear()
        self._kept[key] = (now, *found)
        return found


class Refusals:
    """Operations their refined estimate stopped (:class:`~graphsvc.api.budget.CostPlan`), per
    service, namespace, document and variables, kept :data:`COUNTS_TTL` seconds: the same
    operation sent again meanwhile is refused before it runs, from the degrees the last one
    read (an agent retrying, or an attacker repeating, costs a lookup, not an execution).

    Args:
        clock: monotonic seconds (tests pass their own).
        size: operations kept at most, the oldest dropped first.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, size: int = 1024) -> None:
        self.clock = clock
        self.size = size
        self._kept: OrderedDict[tuple[Any, ...], tuple[float, DocumentNode, str]] = OrderedDict()

    def key(
        self, ctx: RequestContext, document: DocumentNode, operation: str | None, variables: Any
    ) -> tuple[Any, ...] | None:
        """The key of an operation, or ``None`` for variables that are no JSON."""
        frozen = frozen_variables(variables)
        if frozen is None:
            return None
        return (id(ctx.service), ctx.namespace, id(document), operation, frozen)

    def refused(self, key: tuple[Any, ...], document: DocumentNode) -> str | None:
        """Why the operation was stopped, when it was within :data:`COUNTS_TTL` seconds."""
        found = self._kept.get(key)
        if found is None or found[1] is not document:
            return None
        if self.clock() - found[0] >= COUNTS_TTL:
            del self._kept[key]
            return None
        return found[2]

    def remember(self, key: tuple[Any, ...], document: DocumentNode, message: str) -> None:
        self._kept[key] = (self.clock(), document, message)
        self._kept.move_to_end(key)
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)


def estimates(ctx: RequestContext, links: int, memories: int | None = None) -> Estimates:
    """The list lengths of the caller's request (limits from its context and service)."""
    settings = ctx.service.settings
    return Estimates(
        default_page_size=ctx.limits.default_page_size,
        max_page_size=ctx.limits.max_page_size,
        links_per_memory=links,
        default_k=settings.default_k,
        max_k=settings.max_k,
        walk_max_nodes=settings.walk_max_nodes,
        default_max_capsules=settings.default_max_capsules,
        max_capsules=settings.max_capsules_limit,
        ranked_limit=settings.ranked_limit,
        memories=memories,
    )


def cost_error(cost: Cost, limit: int, est: Estimates) -> GraphQLError:
    """The refusal of an operation above ``limit`` (``code: LIMIT_EXCEEDED``)."""
    value = f"over {COST_CAP}" if cost.value >= COST_CAP else f"about {cost.value}"
    links = (
        f", each `links` as {est.links_per_memory} (this namespace's links per memory)"
        if cost.counts_links
        else ""
    )
    message = (
        f"the operation would resolve {value} fields (each list counted as often as it is "
        f"expected to repeat: a page by its `first`{links}); the limit is {limit} "
        "(GRAPHSVC_MAX_QUERY_COST): ask for fewer nested `links`, a smaller `first`, fewer "
        "aliased copies, or split the request"
    )
    return GraphQLError(message, original_error=LimitExceededError(message))


class QueryCost(SchemaExtension):
    """Refuses, before execution, an operation whose estimated cost is above the context's
    ``limits.max_cost`` (a validation error, ``code: LIMIT_EXCEEDED``); admits the others into
    their key's and namespace's budget in flight (:mod:`graphsvc.api.inflight`), waiting for
    room when there is none, and hands the resolvers the estimate to refine
    (:attr:`RequestContext.cost`). Runs after the document was prepared and found valid;
    requests without a caller are left to the resolvers.

    Args:
        counts: the schema's links-per-memory cache.
        inflight: the schema's budgets in flight (``None``: none).
        memo: the schema's operation costs (``None``: none kept).
        refusals: the operations stopped by their refined estimate lately (``None``: none
            kept).
    """

    def __init__(
        self,
        *,
        counts: LinkCounts,
        inflight: InFlight | None = None,
        memo: CostMemo | None = None,
        refusals: Refusals | None = None,
    ) -> None:
        self.counts = counts
        self.inflight = inflight
        self.memo = memo or CostMemo(0)
        self.refusals = refusals
        self._ticket: Ticket | None = None

    async def on_operation(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if self._ticket is not None:
                self._ticket.release()

    async def on_validate(self) -> AsyncIterator[None]:
        context = self.execution_context
        ctx = context.context
        document = context.graphql_document
        if (
            not context.pre_execution_errors
            and document is not None
            and isinstance(ctx, RequestContext)
            and ctx.principal is not None
        ):
            error = await self._check(ctx, document)
            if error is None:
                error = await self._admit(ctx)
            if error is not None:
                context.pre_execution_errors = [error]
        yield

    async def _check(self, ctx: RequestContext, document: DocumentNode) -> GraphQLError | None:
        context = self.execution_context
        schema = context.schema._schema
        est = estimates(ctx, 1)
        cost = self.memo.cost(schema, document, context.operation_name, context.variables, est)
        if cost.value > ctx.limits.max_cost:
            return cost_error(cost, ctx.limits.max_cost, est)
        if cost.counts_links:
            try:
                memories, links = await self.counts.of(ctx)
            except GraphsvcError as exc:  # the store's own error, with its code
                return GraphQLError(str(exc), original_error=exc)
            est = estimates(ctx, links, memories)
            cost = self.memo.cost(schema, document, context.operation_name, context.variables, est)
            if cost.value > ctx.limits.max_cost:
                return cost_error(cost, ctx.limits.max_cost, est)
        plan = ctx.cost = CostPlan(
            estimate=cost.value,
            limit=ctx.limits.max_cost,
            links_per_memory=est.links_per_memory,
            per_link=cost.per_link,
        )
        refusals = self.refusals
        if refusals is not None and cost.per_link:
            key = refusals.key(ctx, document, context.operation_name, context.variables)
            if key is not None:
                message = refusals.refused(key, document)
                if message is not None:
                    return GraphQLError(message, original_error=LimitExceededError(message))
                plan.refused = functools.partial(refusals.remember, key, document)
        return None

    async def _admit(self, ctx: RequestContext) -> GraphQLError | None:
        plan = ctx.cost
        if self.inflight is None or plan is None:
            return None
        budget = ctx.budget
        wait = (
            budget.timeout * WAIT_SHARE
            if budget is not None and budget.timeout is not None
            else self.inflight.wait
        )
        caller = ctx.caller
        try:
            self._ticket = await self.inflight.admit(
                caller.key_id, caller.namespace, plan.estimate, wait
            )
        except LimitExceededError as exc:
            return GraphQLError(str(exc), original_error=exc)
        plan.ticket = self._ticket
        return None


__all__ = [
    "COST_CAP",
    "COST_MEMO",
    "COUNTS_TTL",
    "OTHER_LIST_SIZE",
    "WAIT_SHARE",
    "Cost",
    "CostMemo",
    "Estimates",
    "LinkCounts",
    "QueryCost",
    "Refusals",
    "cost_error",
    "estimates",
    "links_per_memory",
    "operation_cost",
]
