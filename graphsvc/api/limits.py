"""What a GraphQL document may cost, checked in time linear in its size, and the step that
parses, checks and validates it: off the event loop, once per distinct document.

A document is prepared once (:func:`prepare`): its length is checked before anything reads it
(``GRAPHSVC_MAX_QUERY_CHARS``), it is parsed with a token limit (``GRAPHSVC_MAX_QUERY_TOKENS``),
its shape is checked (:func:`shape_errors`: fragment spreads, depth, aliases), and only a document
within those limits meets graphql-core's validation rules. The result, document and errors, is
kept in an LRU cache per schema (:class:`PreparedCache`); a document the cache does not hold is
prepared in a worker thread, so the event loop never parses or validates a client's document.

Why the shape check is our own: strawberry's ``QueryDepthLimiter`` and ``MaxAliasesLimiter``
re-walk a fragment every time it is spread, so a chain where each fragment spreads the next twice
costs 2^n (30 levels ran for over ten minutes), and a spread of an unknown fragment crashed them
(a ``KeyError`` without a code). Here every fragment is summarised once and the summaries are
combined, memoised, in one pass: the cost is linear in the document, whatever it spreads.

graphql-core's own rules are not all linear: ``OverlappingFieldsCanBeMergedRule`` compares fields
that share a response name pairwise, about 1.5 s of CPU for the worst document of 2,000 tokens
(``{ viewer { role } viewer { role } ... }``). That cost is bounded by the token limit and paid
in a worker thread; lower ``GRAPHSVC_MAX_QUERY_TOKENS`` to shrink it.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio.to_thread
from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSchema,
    InlineFragmentNode,
    NameNode,
    Node,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    parse,
    specified_rules,
)
from strawberry.extensions import SchemaExtension
from strawberry.schema.schema import validate_document

from graphsvc.api.context import DOCUMENT_CACHE, Limits
from graphsvc.errors import LimitExceededError
from graphsvc.settings import Settings

#: Above this a count (aliases, spreads) stops growing: a fragment chain can multiply it 2^n.
COUNT_CAP = 1_000_000_000
#: Most fields with one response name in one selection set, fragments included. graphql-core's
#: OverlappingFieldsCanBeMergedRule compares such fields pairwise: 390 of them cost a second of
#: CPU and garbage-collection pauses of 100 ms that stall the event loop from a worker thread.
MAX_FIELD_REPEATS = 50


@dataclass(frozen=True)
class DocumentLimits:
    """What one GraphQL document may hold. Build it with :meth:`of`.

    Attributes:
        max_chars: longest document, in characters (``GRAPHSVC_MAX_QUERY_CHARS``).
        max_tokens: most lexical tokens, comments included (``GRAPHSVC_MAX_QUERY_TOKENS``).
        max_depth: deepest field nesting of an operation (``GRAPHSVC_MAX_QUERY_DEPTH``).
        max_aliases: most aliases, counted as the fragments expand (``GRAPHSVC_MAX_ALIASES``).
        max_fragment_spreads: most ``...Name`` spreads, counted as the fragments expand (a
            spread inside a fragment spread twice counts twice; ``GRAPHSVC_MAX_FRAGMENT_SPREADS``).
        cache_size: prepared documents kept (LRU, per schema).
    """

    max_chars: int
    max_tokens: int
    max_depth: int
    max_aliases: int
    max_fragment_spreads: int
    cache_size: int = DOCUMENT_CACHE

    @classmethod
    def of(cls, limits: Limits, settings: Settings | None = None) -> DocumentLimits:
        """Depth, tokens, aliases and cache size from ``limits``; the document's length and
        spreads from ``settings`` (default: the settings' declared defaults, without reading the
        environment)."""
        settings = settings or Settings.model_construct(data_dir=Path())
        return cls(
            max_chars=settings.max_query_chars,
            max_tokens=limits.max_tokens,
            max_depth=limits.max_depth,
            max_aliases=limits.max_aliases,
            max_fragment_spreads=settings.max_fragment_spreads,
            cache_size=limits.document_cache,
        )


def limit_error(message: str, nodes: list[Node] | None = None) -> GraphQLError:
    """A GraphQL error whose cause is a :class:`LimitExceededError` (``code: LIMIT_EXCEEDED``)."""
    return GraphQLError(message, nodes, original_error=LimitExceededError(message))


# -- the shape of a document, in linear time ---------------------------------------------------


@dataclass
class _Group:
    """The fields of one selection set as execution merges them: a field's sub-selection with
    the fields of the inline fragments inside it; spreads are listed, not yet followed."""

    node: Node
    names: Counter[str] = field(default_factory=Counter)  # response name -> fields
    spreads: list[str] = field(default_factory=list)


@dataclass
class _Summary:
    """One definition (an operation or a fragment) with its spreads not yet followed.

    ``height`` is the deepest field level counted for depth (0: fields directly in the set);
    ``spreads`` holds ``(level, fragment, counts_for_depth)`` for every spread inside it;
    ``groups`` are its selection sets, the definition's own first."""

    node: OperationDefinitionNode | FragmentDefinitionNode
    height: int = 0
    aliases: int = 0
    spreads: list[tuple[int, str, bool]] = field(default_factory=list)
    groups: list[_Group] = field(default_factory=list)


def _summarise(node: OperationDefinitionNode | FragmentDefinitionNode) -> _Summary:
    """One pass over a definition's own selections. Introspection fields (``__schema``,
    ``__type``, ``__typename``) count as leaves for depth, as in strawberry's limiter, but their
    aliases count."""
    summary = _Summary(node, groups=[_Group(node)])
    stack: list[tuple[SelectionSetNode, int, bool, _Group]] = [
        (node.selection_set, 0, True, summary.groups[0])
    ]
    while stack:
        selection_set, level, counts, group = stack.pop()
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                group.names[(selection.alias or selection.name).value] += 1
                if selection.alias is not None:
                    summary.aliases += 1
                if counts:
                    summary.height = max(summary.height, level)
                if selection.selection_set is not None:
                    deeper = counts and not selection.name.value.startswith("__")
                    inner = _Group(selection)
                    summary.groups.append(inner)
                    stack.append((selection.selection_set, level + 1, deeper, inner))
            elif isinstance(selection, InlineFragmentNode):
                stack.append((selection.selection_set, level, counts, group))
            elif isinstance(selection, FragmentSpreadNode):
                summary.spreads.append((level, selection.name.value, counts))
                group.spreads.append(selection.name.value)
    return summary


def _merged_names(fragments: dict[str, _Summary]) -> dict[str, Counter[str]]:
    """Per fragment, the response names its own selection set brings where it is spread (its
    spreads followed, each fragment once; cycles and unknown fragments add nothing)."""
    done: dict[str, Counter[str]] = {}
    for root in fragments:
        stack: list[tuple[str, bool]] = [(root, False)]
        on_path: set[str] = set()
        while stack:
            name, expanded = stack.pop()
            group = fragments[name].groups[0]
            if expanded:
                on_path.discard(name)
                merged = Counter(group.names)
                for target in group.spreads:
                    merged.update(done.get(target, Counter()))
                done[name] = merged
                continue
            if name in done or name in on_path:
                continue
            on_path.add(name)
            stack.append((name, True))
            stack.extend(
                (target, False)
                for target in group.spreads
                if target in fragments and target not in done and target not in on_path
            )
    return done


def _repeated_field(summaries: list[_Summary], merged: dict[str, Counter[str]]) -> str | None:
    """The first response name asked for more than :data:`MAX_FIELD_REPEATS` times in one
    selection set, fragments included (graphql-core compares those fields pairwise)."""
    for summary in summaries:
        for group in summary.groups:
            names = Counter(group.names)
            for target in group.spreads:
                names.update(merged.get(target, Counter()))
            if names:
                name, count = names.most_common(1)[0]
                if count > MAX_FIELD_REPEATS:
                    return f"{name!r} {count} times"
    return None


_Counts = tuple[int, int, int]  # height, aliases, spreads: with the spread fragments expanded


def _resolve(fragments: dict[str, _Summary]) -> dict[str, _Counts]:
    """The counts of every fragment with its spreads followed, each fragment once (iterative
    depth-first, memoised). A spread of an unknown fragment, or one that closes a cycle, counts
    as one spread and adds nothing else: graphql-core's rules report those."""
    done: dict[str, _Counts] = {}
    for root in fragments:
        if root in done:
            continue
        stack: list[tuple[str, bool]] = [(root, False)]
        on_path: set[str] = set()
        while stack:
            name, expanded = stack.pop()
            summary = fragments[name]
            if expanded:
                on_path.discard(name)
                done[name] = _combine(summary, done)
                continue
            if name in done or name in on_path:
                continue
            on_path.add(name)
            stack.append((name, True))
            for _, target, _ in summary.spreads:
                if target in fragments and target not in done and target not in on_path:
                    stack.append((target, False))
    return done


def _combine(summary: _Summary, done: dict[str, _Counts]) -> _Counts:
    height, aliases, spreads = summary.height, summary.aliases, 0
    for level, target, counts in summary.spreads:
        target_height, target_aliases, target_spreads = done.get(target, (0, 0, 0))
        if counts:
            height = max(height, level + target_height)
        aliases = min(aliases + target_aliases, COUNT_CAP)
        spreads = min(spreads + 1 + target_spreads, COUNT_CAP)
    return height, aliases, spreads


def _count(value: int) -> str:
    return f"over {COUNT_CAP}" if value >= COUNT_CAP else str(value)


def shape_errors(document: DocumentNode, limits: DocumentLimits) -> list[GraphQLError]:
    """The limits a parsed document breaks: fragment spreads, depth of each operation, aliases,
    with the spread fragments expanded (as execution would). Linear in the document."""
    operations: list[_Summary] = []
    fragments: dict[str, _Summary] = {}
    written = 0
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode | FragmentDefinitionNode):
            summary = _summarise(definition)
            written += len(summary.spreads)
            if isinstance(definition, OperationDefinitionNode):
                operations.append(summary)
            else:
                fragments.setdefault(definition.name.value, summary)
    resolved = _resolve(fragments)
    counted = [(operation, _combine(operation, resolved)) for operation in operations]
    spreads = max(written, min(sum(c[2] for _, c in counted), COUNT_CAP))
    if spreads > limits.max_fragment_spreads:
        return [  # the depth and the aliases follow the spreads: report the cause only
            limit_error(
                f"the document spreads fragments {_count(spreads)} times (a spread inside a "
                f"fragment counts each time that fragment is spread); the limit is "
                f"{limits.max_fragment_spreads} (GRAPHSVC_MAX_FRAGMENT_SPREADS): spread fewer "
                "fragments, or split the request"
            )
        ]
    repeated = _repeated_field([*operations, *fragments.values()], _merged_names(fragments))
    if repeated is not None:
        return [  # checked before graphql-core's rules, which are quadratic in such repeats
            limit_error(
                f"the document asks for {repeated} in one selection set; the limit is "
                f"{MAX_FIELD_REPEATS}: ask for each field once (an alias gives a field another "
                "name)"
            )
        ]
    errors = [
        limit_error(
            f"the query nests fields deeper than {limits.max_depth} levels: ask for fewer "
            "nested fields, or make several requests",
            [operation.node],
        )
        for operation, (height, _, _) in counted
        if height > limits.max_depth
    ]
    aliases = min(sum(c[1] for _, c in counted), COUNT_CAP)
    if aliases > limits.max_aliases:
        errors.append(
            limit_error(
                f"the query uses {_count(aliases)} aliases; the limit is {limits.max_aliases}: "
                "split it into several requests"
            )
        )
    return errors


# -- preparing a document ----------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """A document and what stops it: ``document`` is ``None`` when it could not be parsed (or
    was too long to try); ``errors`` are parse, limit or validation errors (empty: valid)."""

    document: DocumentNode | None
    errors: tuple[GraphQLError, ...] = ()


#: One document is prepared at a time in this process. Preparing is pure Python, so the
#: interpreter lock lets only one thread run it anyway; more threads at it would only take more
#: turns from the event loop's thread (each turn it waits for is up to the switch interval).
_PREPARING = threading.Lock()


def prepare(query: str, schema: GraphQLSchema, limits: DocumentLimits) -> Prepared:
    """Parse, check and validate one document. CPU only, no I/O: safe in a worker thread, one
    at a time (:data:`_PREPARING`).

    The cost is bounded by the limits: the length is checked first, parsing stops at
    ``max_tokens``, the shape check is linear, and graphql-core's rules meet only a document
    within the shape limits.
    """
    with _PREPARING:
        return _prepare(query, schema, limits)


def _prepare(query: str, schema: GraphQLSchema, limits: DocumentLimits) -> Prepared:
    if len(query) > limits.max_chars:
        return Prepared(
            None,
            (
                limit_error(
                    f"the query document is {len(query)} characters long; the limit is "
                    f"{limits.max_chars} (GRAPHSVC_MAX_QUERY_CHARS): pass large inputs as "
                    "variables"
                ),
            ),
        )
    try:
        document = parse(query, max_tokens=limits.max_tokens)
    except GraphQLError as exc:
        return Prepared(None, (exc,))
    except RecursionError:
        return Prepared(
            None,
            (limit_error("the query document nests too deeply to parse: flatten it"),),
        )
    shape = shape_errors(document, limits)
    if shape:
        return Prepared(document, tuple(shape))
    try:
        errors = validate_document(schema, document, tuple(specified_rules))
    except RecursionError:
        errors = [GraphQLError("Validation aborted.")]
    return Prepared(document, tuple(errors))


class PreparedCache:
    """Prepared documents by query text, least recently used dropped first. Thread-safe: the
    schema may serve several event loops (tests, an embedding process)."""

    def __init__(self, limits: DocumentLimits) -> None:
        self.limits = limits
        self._entries: OrderedDict[str, Prepared] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, query: str) -> Prepared | None:
        """The prepared document, when the cache holds it."""
        with self._lock:
            found = self._entries.get(query)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(query)
            self.hits += 1
            return found

    def put(self, query: str, prepared: Prepared) -> None:
        """Keep a prepared document, dropping the least recently used past the size."""
        with self._lock:
            self._entries[query] = prepared
            self._entries.move_to_end(query)
            while len(self._entries) > self.limits.cache_size:
                self._entries.popitem(last=False)

    async def prepared(self, query: str, schema: GraphQLSchema) -> Prepared:
        """The prepared document: from the cache on the event loop, else prepared in a worker
        thread (abandoned if the request is cancelled: preparing is pure CPU)."""
        found = self.get(query)
        if found is not None:
            return found
        made = await anyio.to_thread.run_sync(
            functools.partial(prepare, query, schema, self.limits), abandon_on_cancel=True
        )
        self.put(query, made)
        return made


def placeholder(operation_name: str | None) -> DocumentNode:
    """A document of one empty query named ``operation_name``: what the execution context
    holds when the client's document did not parse, so that strawberry reaches its validation
    step, which answers the parse error inside the result (with a code) instead of raising it
    past the error extensions."""
    operation = OperationDefinitionNode(
        operation=OperationType.QUERY,
        name=NameNode(value=operation_name) if operation_name is not None else None,
        variable_definitions=(),
        directives=(),
        selection_set=SelectionSetNode(selections=()),
    )
    return DocumentNode(definitions=(operation,))


class PreparedDocuments(SchemaExtension):
    """Parsing and validation from a :class:`PreparedCache`, in place of strawberry's.

    ``on_parse`` sets the document (or, when it did not parse, a :func:`placeholder` and the
    errors); ``on_validate`` sets the validation errors, so strawberry's own validation, which
    would run on the event loop, is skipped.

    Args:
        cache: the schema's prepared documents.
    """

    def __init__(self, *, cache: PreparedCache) -> None:
        self.cache = cache
        self._errors: tuple[GraphQLError, ...] = ()

    async def on_parse(self) -> AsyncIterator[None]:
        context = self.execution_context
        if context.graphql_document is None and context.query:
            prepared = await self.cache.prepared(context.query, context.schema._schema)
            if prepared.document is None:
                context.graphql_document = placeholder(context.operation_name)
                context.pre_execution_errors = list(prepared.errors)
            else:
                context.graphql_document = prepared.document
                self._errors = prepared.errors
        yield

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        if context.pre_execution_errors is None:
            context.pre_execution_errors = list(self._errors)
        yield


__all__ = [
    "DocumentLimits",
    "Prepared",
    "PreparedCache",
    "PreparedDocuments",
    "limit_error",
    "placeholder",
    "prepare",
    "shape_errors",
]
