"""Text analysis and the token estimator (docs/design.md, read semantics 1, 8 and 9)."""

from __future__ import annotations

import re
import string
import unicodedata

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from graphsvc.text import (
    CHRONOLOGY_MARKERS,
    STOP_WORDS,
    analyse,
    analyse_many,
    asks_about_order,
    estimate_tokens,
    query_terms,
    query_words,
    tokenize,
)

FAST = hsettings(max_examples=150, deadline=None)

# Printable ASCII without whitespace maps one to one onto the fullwidth block U+FF01..U+FF5E.
_FULLWIDTH = str.maketrans({chr(c): chr(c - 0x21 + 0xFF01) for c in range(0x21, 0x7F)})
_ASCII_TEXT = st.text(alphabet=string.ascii_letters + string.digits + " .,;:!?-_/'()", max_size=80)


def _is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


# -- normalisation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Ｆｕｌｌｗｉｄｔｈ ＴＥＸＴ", ["fullwidth", "text"]),  # NFKC: fullwidth -> ASCII
        ("ﬁle ﬂow", ["file", "flow"]),  # NFKC: ligatures decomposed
        ("x² H₂O", ["x2", "h2o"]),  # NFKC: super/subscripts are digits
        ("Straße STRASSE strasse", ["strasse", "strasse", "strasse"]),  # casefold, not lower
        ("ΣΊΣΥΦΟΣ σίσυφος", ["σίσυφοσ", "σίσυφοσ"]),  # final sigma folds like sigma
        ("café CAFÉ cafe\u0301", ["café", "café", "café"]),  # decomposed input is composed
    ],
)
def test_tokenize_normalises_with_nfkc_and_casefold(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("snake_case_name", ["snake", "case", "name"]),  # "_" is not a letter or digit
        ("path/to/file.ext", ["path", "to", "file", "ext"]),
        ("a-b—c…d", ["a", "b", "c", "d"]),
        ("it's user's", ["it", "s", "user", "s"]),
        ("v2 2024-05-01 3.14", ["v2", "2024", "05", "01", "3", "14"]),
        ("  \t\n ", []),
        ("", []),
    ],
)
def test_tokenize_splits_on_everything_that_is_not_a_letter_or_digit(
    text: str, expected: list[str]
) -> None:
    assert tokenize(text) == expected


def test_analyse_drops_short_tokens_and_stop_words() -> None:
    assert analyse("a b c I x 7 ok") == ["ok"]
    assert analyse("the and of to were being because") == []
    assert analyse("The server was down") == ["server"]


def test_analyse_stems_with_snowball_english() -> None:
    assert analyse("running runs connection connected connecting ponies generously") == [
        "run",
        "run",
        "connect",
        "connect",
        "connect",
        "poni",
        "generous",
    ]


def test_analyse_keeps_repeats_in_order_and_query_terms_dedupes_keeping_first() -> None:
    text = "Cats chase cat toys; the CAT chased a toy"
    assert analyse(text) == ["cat", "chase", "cat", "toy", "cat", "chase", "toy"]
    assert query_terms(text) == ["cat", "chase", "toy"]


def test_stop_words_are_matched_before_stemming_and_after_folding() -> None:
    # "THE" folds to a stop word; "thes" is not one, and its stem is kept.
    assert analyse("THE") == []
    assert analyse("Being") == []
    assert analyse("theses") != []


def test_words_with_combining_marks_stay_whole() -> None:
    # "हिन्दी" = ह ि न ् द ी: the vowel signs and the virama are combining marks, part of the word.
    assert tokenize("हिन्दी भाषा") == ["हिन्दी", "भाषा"]
    assert analyse("हिन्दी भाषा") != []


@pytest.mark.parametrize("word", ["shell", "shed", "id", "ill", "hell", "wed"])
def test_real_words_are_not_stop_words(word: str) -> None:
    assert query_terms(f"which {word} was it") != []


def test_contractions_do_not_leave_terms_behind() -> None:
    assert analyse("she'll we'd they're you've don't isn't") == []


# -- properties -------------------------------------------------------------------------------


@FAST
@given(st.text(max_size=200))
def test_terms_are_non_empty_and_free_of_separators(text: str) -> None:
    for term in analyse(text):
        assert term
        # Letters, digits and combining marks only. Characters the interpreter's Unicode tables
        # do not know yet (category Cn) may be letters in the newer tables of `regex`.
        assert all(
            ch.isalnum() or unicodedata.category(ch)[0] == "M" or unicodedata.category(ch) == "Cn"
            for ch in term
        ), term
        assert not unicodedata.category(term[0]).startswith("M"), term
        # Folded: casefolding it again (and normalising, as the analyser does: a casefold can
        # decompose, "\u1f50" into "\u03c5\u0313", which NFKC composes back) changes nothing.
        assert term == unicodedata.normalize("NFKC", term.casefold())


@FAST
@given(st.text(max_size=200))
def test_tokenize_is_idempotent(text: str) -> None:
    # Tokens are already normalised, folded and separator-free: analysing them again is a no-op.
    tokens = tokenize(text)
    assert tokenize(" ".join(tokens)) == tokens


@FAST
@given(st.text(max_size=200))
def test_analyse_of_its_own_tokens_is_stable(text: str) -> None:
    tokens = [tok for tok in tokenize(text) if len(tok) >= 2 and tok not in STOP_WORDS]
    assert analyse(" ".join(tokens)) == analyse(text)


@FAST
@given(st.text(max_size=200))
def test_query_terms_is_the_first_occurrence_dedupe_of_analyse(text: str) -> None:
    terms = analyse(text)
    q = query_terms(text)
    assert len(q) == len(set(q))
    assert set(q) == set(terms)
    assert _is_subsequence(q, terms)
    # Each query term sits where it first occurs in the analysed text.
    firsts = sorted(terms.index(t) for t in q)
    assert [terms[i] for i in firsts] == q


# -- the user's words for the terms ---------------------------------------------------------


def test_query_words_are_the_words_as_written() -> None:
    # Bundles showed stems as words: "Not covered by memory: iguana, mar".
    assert query_words("What is the name of Melanie's pet iguana on Mars?") == [
        ("name", "name"),
        ("melani", "Melanie"),
        ("pet", "pet"),
        ("iguana", "iguana"),
        ("mar", "Mars"),
    ]
    # The first word that analyses to a term names it, case and all.
    assert query_words("Running runs; RUN run") == [("run", "Running")]
    assert query_words("Caroline und CAROLINE") == [("carolin", "Caroline"), ("und", "und")]
    # Outside ASCII the word is still the text as written, not its normalised form.
    assert query_words("Straße ﬁsh CAFÉ cafe\u0301") == [
        ("strass", "Straße"),
        ("fish", "ﬁsh"),
        ("café", "CAFÉ"),
    ]
    assert query_words("the of and") == []


@FAST
@given(st.one_of(_ASCII_TEXT, st.text(max_size=120)))
def test_every_query_term_gets_one_word_of_the_query(text: str) -> None:
    pairs = query_words(text)
    assert [term for term, _ in pairs] == query_terms(text)  # each term once, in order
    for term, word in pairs:
        assert word and word in text  # a substring: the user's own characters, case preserved
        assert term in analyse(word)
        if text.isascii():
            assert analyse(word) == [term]  # ASCII: exactly the one word
            first = next(t for t in re.findall("[A-Za-z0-9]+", text) if analyse(t) == [term])
            assert word == first  # the first word of the query that analyses to the term


@FAST
@given(_ASCII_TEXT)
def test_analyse_ignores_ascii_case(text: str) -> None:
    assert analyse(text.upper()) == analyse(text.lower()) == analyse(text)


@FAST
@given(_ASCII_TEXT)
def test_fullwidth_text_analyses_like_ascii(text: str) -> None:
    assert analyse(text.translate(_FULLWIDTH)) == analyse(text)


@FAST
@given(st.lists(st.text(max_size=40), max_size=5), st.sampled_from(["_", "-", " ", "/", "."]))
def test_separators_are_interchangeable(parts: list[str], sep: str) -> None:
    assert tokenize(sep.join(parts)) == tokenize(" ".join(parts))


# -- tokens -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 1), ("a", 1), ("abcd", 1), ("abcde", 2), ("abcdefgh", 2), ("x" * 401, 101)],
)
def test_estimate_tokens_is_a_quarter_of_the_characters_rounded_up(
    text: str, expected: int
) -> None:
    assert estimate_tokens(text) == expected


@FAST
@given(st.text(max_size=300), st.text(max_size=300))
def test_estimate_tokens_is_positive_and_monotone_in_length(a: str, b: str) -> None:
    assert estimate_tokens(a) >= 1
    assert estimate_tokens(a + b) >= estimate_tokens(a)
    assert estimate_tokens(a + b) <= estimate_tokens(a) + estimate_tokens(b)
    if a:
        assert estimate_tokens(a) == -(-len(a) // 4)


# -- chronology -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "what happened before the launch",
        "WHEN did we move?",
        "When?",
        "list the timeline",
        "what came after_the outage",  # "_" separates words
        "pre-before",
        "which was first",
        "what changed since Monday",
    ],
)
def test_asks_about_order_on_whole_marker_words(query: str) -> None:
    assert asks_about_order(query)


@pytest.mark.parametrize(
    "query",
    [
        "beforehand we agreed",
        "whenever it rains",
        "aftermath of the storm",
        "firstly, the plan",
        "lastly the budget",
        "ordering pizza",
        "what is the capital of France",
        "",
    ],
)
def test_asks_about_order_ignores_markers_inside_other_words(query: str) -> None:
    assert not asks_about_order(query)


@FAST
@given(
    st.sampled_from(sorted(CHRONOLOGY_MARKERS)),
    st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=4),
    st.booleans(),
)
def test_a_marker_glued_to_letters_is_not_a_marker(marker: str, extra: str, prefix: bool) -> None:
    word = extra + marker if prefix else marker + extra
    assert asks_about_order(f"tell me {marker} now")
    assert asks_about_order(f"{marker.upper()}!")
    assert asks_about_order(f"tell me {word} now") == (word in CHRONOLOGY_MARKERS)


@FAST
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_the_ascii_fast_path_tokenizes_like_the_unicode_path(text: str) -> None:
    from graphsvc.text import fast_tokenize

    assert fast_tokenize(text) == tokenize(text)


@FAST
@given(
    st.lists(
        st.one_of(_ASCII_TEXT, st.text(max_size=40), st.sampled_from(["a\x01b", "\x01", ""])),
        max_size=8,
    )
)
def test_analyse_many_is_analyse_of_each_text(texts: list[str]) -> None:
    # ASCII batches go through the joined fast path, others (and any holding its separator)
    # text by text: either way the terms of each text, in order.
    assert analyse_many(texts) == [tuple(analyse(text)) for text in texts]


def test_analyse_many_of_ascii_texts_cuts_the_batch_back_into_its_texts() -> None:
    texts = ["The pump failed.", "", "  ", "pump-valve_42 ran", "x", "Running pumps"]
    assert analyse_many(texts) == [
        ("pump", "fail"),
        (),
        (),
        ("pump", "valv", "42", "ran"),
        (),
        ("run", "pump"),
    ]
