"""A request's query, analysed once: :class:`Query`.

The recall pipeline makes one when a request arrives (:meth:`RecallPipeline.analyse
<graphsvc.recall.pipeline.RecallPipeline.analyse>`) and hands it to every stage that reads the
query: its terms (tokenised once, what the store's candidates and every lexical score read) and
the future of its stored codes (encoded once, what the search by meaning and the exact cosines of
the ranked memories read). Pure: the codes are encoded elsewhere
(:mod:`graphsvc.recall.query_encoder`); the value only holds their future.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Query:
    """A query as recall reads it.

    Attributes:
        text: the query as asked.
        terms: its analysed terms (:func:`graphsvc.text.query_terms`), deduplicated, in order.
        codes: the future of its stored codes; None when it is not encoded (recall is
            lexical-only, or the namespace was last found lexical: :meth:`encoded` adds it).
    """

    text: str
    terms: list[str]
    codes: Future[bytes] | None = None

    def encoded(self, codes: Future[bytes] | None) -> Query:
        """This query with the future of its codes."""
        return replace(self, codes=codes)

    def vector(self) -> bytes:
        """Its stored codes, waiting for them if they are still being encoded.

        Raises:
            ValueError: the query is not encoded (:attr:`codes` is None).
            ModelUnavailableError: the model could not encode it.
        """
        if self.codes is None:
            raise ValueError(f"the query {self.text!r} was not encoded")
        return self.codes.result()


__all__ = ["Query"]
