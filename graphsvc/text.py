"""Text analysis and the token estimator (docs/design.md, read semantics: text analysis, tokens).

The same analyser runs for memories and queries, in both stores.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import regex
import Stemmer

# A token is a run of letters and digits. Combining marks belong to the letter they modify
# (Devanagari vowel signs, the dot of a casefolded "İ"), so they continue a token but never start
# one; everything else separates tokens.
_TOKEN = regex.compile(r"[\p{L}\p{N}][\p{L}\p{N}\p{M}]*")

# The classic English stop-word list (Snowball's), casefolded. Contractions appear without their
# apostrophe only where that is not also a real word ("shell", "wed", "ill" stay searchable).
# Chronology markers such as "before" and "when" are stop words for retrieval; chronology
# detection reads the raw query instead.
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are aren arent as at be because been
    before being below between both but by can cannot could couldn couldnt did didn didnt do does
    doesn doesnt doing don dont down during each few for from further had hadn hadnt has hasn hasnt
    have haven havent having he hed hes her here heres hers herself him himself his how hows
    i im ive if in into is isn isnt it its itself me more most mustn mustnt my myself
    no nor not of off on once only or other ought our ours ourselves out over own same shan shant
    she shes should shouldn shouldnt so some such than that thats the their theirs them
    themselves then there theres these they theyd theyll theyre theyve this those through to too
    under until up very was wasn wasnt we were weren werent weve what whats when whens
    where wheres which while who whos whom why whys with won wont would wouldn wouldnt you youd
    youll youre youve your yours yourself yourselves ll re ve
    """.split()
)

_stemmer = Stemmer.Stemmer("english")

# ASCII text needs neither NFKC (the identity on ASCII) nor casefold (lower() on ASCII), and its
# tokens are exactly the runs of [a-z0-9] once lowered: map every other byte to a space and split.
_ASCII_SEPARATORS = bytes(
    c if chr(c).isascii() and (chr(c).isdigit() or chr(c).islower()) else 0x20 for c in range(256)
)
# analyse_many joins a batch's texts with a control character that the table below keeps (where
# the one above makes it a space), so the translated batch splits back into its texts.
_BATCH_SEPARATOR = "\x01"
_BATCH_SEPARATORS = _ASCII_SEPARATORS[:1] + b"\x01" + _ASCII_SEPARATORS[2:]
# token -> analysed term, "" when dropped (too short, or a stop word); cleared past
# _TERM_CACHE_SIZE entries so it stays bounded on an open vocabulary.
_TERM_CACHE: dict[str, str] = {}
_TERM_CACHE_SIZE = 500_000


def fast_tokenize(text: str) -> list[str]:
    """:func:`tokenize`, with a fast path for ASCII text (a test checks they agree)."""
    if text.isascii():
        return text.lower().encode("ascii").translate(_ASCII_SEPARATORS).decode("ascii").split()
    return tokenize(text)


def _fill_term_cache(tokens: list[str]) -> None:
    if len(_TERM_CACHE) > _TERM_CACHE_SIZE:
        _TERM_CACHE.clear()
    for tok in tokens:
        if tok not in _TERM_CACHE:
            keep = len(tok) >= 2 and tok not in STOP_WORDS
            _TERM_CACHE[tok] = _stemmer.stemWord(tok) if keep else ""


def tokenize(text: str) -> list[str]:
    """NFKC-normalise and casefold (and NFKC again, as casefolding can denormalise), then take the
    runs of letters and digits (with their combining marks)."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return list(_TOKEN.findall(folded))


def analyse(text: str) -> list[str]:
    """The analysed terms of a memory's text, in order, repeats kept (for term frequencies).

    Tokens under 2 characters and stop words are dropped; the rest are Snowball-stemmed.
    """
    return list(_terms_of(fast_tokenize(text)))


def _terms_of(tokens: list[str]) -> tuple[str, ...]:
    """The terms of ``tokens``, in order, stop words and short tokens dropped; a token not met
    before is analysed and cached first."""
    try:
        return tuple(filter(None, map(_TERM_CACHE.__getitem__, tokens)))
    except KeyError:
        _fill_term_cache(tokens)
        return tuple(filter(None, map(_TERM_CACHE.__getitem__, tokens)))


def analyse_many(texts: Sequence[str]) -> list[tuple[str, ...]]:
    """:func:`analyse` of each text, as tuples: a write's batch at once. When every text is
    ASCII and none holds the separator, they are lowered and translated as one string and cut
    apart again (the same tokens as text by text); otherwise each is analysed on its own."""
    blob = _BATCH_SEPARATOR.join(texts)
    if not (blob.isascii() and blob.count(_BATCH_SEPARATOR) == len(texts) - 1):
        return [tuple(analyse(text)) for text in texts]
    parts = blob.lower().encode("ascii").translate(_BATCH_SEPARATORS).decode("ascii")
    return [_terms_of(part.split()) for part in parts.split(_BATCH_SEPARATOR)]


def query_terms(text: str) -> list[str]:
    """The analysed terms of a query: as :func:`analyse`, deduplicated keeping first occurrence."""
    return list(dict.fromkeys(analyse(text)))


# A run of ASCII letters and digits: the tokens of ASCII text, as written (fast_tokenize's).
_ASCII_TOKEN = regex.compile(r"[A-Za-z0-9]+")


def _surface_spans(text: str) -> list[tuple[int, int]]:
    """Where the tokens of ``text`` are in ``text`` itself, as (start, end) indices.

    ASCII text's tokens are its runs of letters and digits. Otherwise each character is
    normalised and casefolded on its own (as :func:`tokenize` does to the whole text), the tokens
    are found in the result, and each is mapped back to the characters it came from: the same
    tokens as :func:`tokenize` but where normalisation composes across characters."""
    if text.isascii():
        return [match.span() for match in _ASCII_TOKEN.finditer(text)]
    folded: list[str] = []
    origin: list[int] = []  # the index in ``text`` of each character of ``folded``
    for at, char in enumerate(text):
        piece = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", char).casefold())
        folded.append(piece)
        origin.extend([at] * len(piece))
    return [
        (origin[match.start()], origin[match.end() - 1] + 1)
        for match in _TOKEN.finditer("".join(folded))
    ]


def query_words(text: str) -> list[tuple[str, str]]:
    """The terms of a query (:func:`query_terms`, in order), each with the user's own word for it:
    the first stretch of ``text``, as written (case and all), that analyses to the term. A term
    is a stem ("mar" for "Mars"); the word is what a person should be shown.

    Every word is a substring of ``text``. A token whose normalisation depends on its neighbours
    (rare, outside ASCII) may match no single token's analysis: its word is then the shortest run
    of adjacent tokens that holds the term, and at worst the whole (stripped) text."""
    spans = _surface_spans(text)
    words: dict[str, str] = {}
    for start, end in spans:
        surface = text[start:end]
        for term in analyse(surface):
            words.setdefault(term, surface)
    pairs: list[tuple[str, str]] = []
    for term in query_terms(text):
        word = words.get(term)
        if word is None:
            word = words[term] = _widest_word(text, spans, term)
        pairs.append((term, word))
    return pairs


def _widest_word(text: str, spans: Sequence[tuple[int, int]], term: str) -> str:
    """The shortest run of adjacent token spans of ``text`` (the first of that length) that
    analyses to ``term``; the stripped text when none does."""
    for width in range(2, min(len(spans), 4) + 1):
        for first in range(len(spans) - width + 1):
            word = text[spans[first][0] : spans[first + width - 1][1]]
            if term in analyse(word):
                return word
    return text.strip()


def estimate_tokens(text: str) -> int:
    """Estimated LLM tokens of ``text``: one per 4 characters, rounded up, at least 1.

    This is the common rule of thumb for English with BPE tokenizers (about 4 characters per
    token). It needs no network and no model; what a provider really charged is recorded beside it
    (``ContextEvent.reportedTokens``) so the drift is measured.
    """
    return max(1, (len(text) + 3) // 4)


# Whole words that make a question about order (docs/design.md, the bundle: chronology).
CHRONOLOGY_MARKERS: frozenset[str] = frozenset(
    """
    before after first last earliest latest order ordered sequence timeline when since until
    previously recently then later earlier next prior chronological chronologically
    """.split()
)


def asks_about_order(query: str) -> bool:
    """True when the query contains a chronology marker as a whole word."""
    return any(tok in CHRONOLOGY_MARKERS for tok in tokenize(query))
