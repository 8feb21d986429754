"""Nested ``links`` costed from the degrees actually read, one level ahead.

The cost check (:mod:`graphsvc.api.cost`) estimates every ``links`` list at the namespace's
average links per memory. A clique of ten memories beside a sparse ring hides in that average:
fourteen aliased copies of three levels of links under a clique member passed the check and
then read thousands of rows before the rows cap stopped them, each request a second or two of
event-loop time.

Here the estimate is refined as the request runs (:class:`~graphsvc.api.budget.CostPlan`): when a
``links`` field is read, its real count replaces the average (each link more than assumed adds
the cost of one link's selection under it); and when that selection asks for ``links`` again
under ``targetMemory`` or ``sourceMemory``, the links of those memories are read at once, in the
same batch as every other resolver's (the loader's cache keeps them for the resolvers that will
ask), and their real counts replace the average for that level too, before the links read so far
are handed to graphql-core. A request whose refined estimate passes ``GRAPHSVC_MAX_QUERY_COST``
stops there: a clique is seen at its first level, after two batched reads, not after thousands of
rows. Each link's memory is counted once per place it appears (the next level's resolver finds
its count already taken, :meth:`CostPlan.prepay`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from graphql import (
    EnumValueNode,
    FieldNode,
    FragmentSpreadNode,
    GraphQLResolveInfo,
    InlineFragmentNode,
    SelectionSetNode,
    VariableNode,
)

from graphsvc import model as m
from graphsvc.api.context import RequestContext

#: The fields of a link that lead to a memory, and which end of the link each one reads.
ENDS = {"targetMemory": "target", "sourceMemory": "source"}

#: A ``links`` field under one end of a link: the end ('target' or 'source'), its node, and the
#: kind it keeps (None: every kind).
Ahead = tuple[str, FieldNode, str | None]


def _fields(
    selection_set: SelectionSetNode | None, info: GraphQLResolveInfo[Any], seen: set[str]
) -> list[FieldNode]:
    """The fields of a selection set with its inline fragments and spread fragments expanded
    (each fragment once), in document order."""
    found: list[FieldNode] = []
    stack = list(reversed(selection_set.selections)) if selection_set is not None else []
    while stack:
        selection = stack.pop()
        if isinstance(selection, FieldNode):
            found.append(selection)
        elif isinstance(selection, InlineFragmentNode):
            stack.extend(reversed(selection.selection_set.selections))
        elif isinstance(selection, FragmentSpreadNode):
            name = selection.name.value
            fragment = info.fragments.get(name)
            if fragment is not None and name not in seen:
                seen.add(name)
                stack.extend(reversed(fragment.selection_set.selections))
    return found


def _kind(node: FieldNode, info: GraphQLResolveInfo[Any]) -> str | None:
    """The link kind a ``links`` field keeps (its ``kind`` argument), None for every kind or
    one this cannot tell (then every link counts: the estimate stays on the safe side)."""
    for argument in node.arguments or ():
        if argument.name.value != "kind":
            continue
        value = argument.value
        if isinstance(value, EnumValueNode):
            return value.value
        if isinstance(value, VariableNode):
            values = info.variable_values  # strawberry hands resolvers the coerced dict
            coerced = getattr(values, "coerced", values)
            found = coerced.get(value.name.value) if isinstance(coerced, dict) else None
            name = getattr(found, "name", found)
            return name if isinstance(name, str) else None
    return None


def links_ahead(node: FieldNode, info: GraphQLResolveInfo[Any]) -> tuple[Ahead, ...]:
    """The ``links`` fields under ``targetMemory`` and ``sourceMemory`` in the selection of the
    ``links`` field ``node``: one per response name (graphql-core merges fields that share
    one, and resolves the first node's)."""
    found: list[Ahead] = []
    taken: set[tuple[str, str]] = set()
    for end_field in _fields(node.selection_set, info, set()):
        end = ENDS.get(end_field.name.value)
        if end is None:
            continue
        end_key = (end_field.alias or end_field.name).value
        for inner in _fields(end_field.selection_set, info, set()):
            if inner.name.value != "links":
                continue
            key = (end_key, (inner.alias or inner.name).value)
            if key in taken:
                continue
            taken.add(key)
            found.append((end, inner, _kind(inner, info)))
    return tuple(found)


def _count(links: Sequence[m.Link], kind: str | None) -> int:
    if kind is None:
        return len(links)
    return sum(link.kind.value == kind for link in links)


async def read_links(
    info: GraphQLResolveInfo[Any], ctx: RequestContext, memory: UUID, links: Sequence[m.Link]
) -> None:
    """``memory``'s ``links`` field (``info``) read ``links``: refine the operation's estimate
    with their count, and with the counts of the next level's links where the selection asks
    for them (see the module). A request whose estimate passes the limit stops here.

    Raises:
        LimitExceededError: the refined estimate is over ``GRAPHSVC_MAX_QUERY_COST``.
        DeadlinePassedError: past the request's deadline.
    """
    plan = ctx.cost
    if plan is None:
        return
    node = info.field_nodes[0]
    ctx.refine(plan.read(id(node), memory, len(links)))
    if not links or ctx.stopped:
        return
    ahead = plan.ahead.get(id(node))
    if ahead is None:
        ahead = plan.ahead[id(node)] = links_ahead(node, info)
    ahead = tuple(item for item in ahead if id(item[1]) in plan.per_link)
    if not ahead:
        return
    ends = {end for end, _, _ in ahead}
    ids = list(dict.fromkeys(getattr(link, end) for end in ends for link in links))
    ctx.take_rows(0)  # a request past its deadline reads no more
    found = dict(zip(ids, await ctx.links_loader.load_many(ids), strict=True))
    if ctx.stopped:  # another field of the request stopped it meanwhile
        return
    delta = 0
    most = 0
    for end, inner, kind in ahead:
        below = plan.per_link[id(inner)]
        for link in links:
            other: UUID = getattr(link, end)
            count = _count(found[other], kind)
            most = max(most, count)
            plan.prepay(id(inner), other)
            delta += (count - plan.links_per_memory) * below
    ctx.refine(plan.grow(delta, most))


__all__ = ["ENDS", "links_ahead", "read_links"]
