"""The catalog and its word-overlap search: the bundled catalog parses, and for any catalog and query
the search returns exactly the best-scoring services (checked against a brute-force ranking)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from seamkit_servicedesk.catalog import Service, bundled_catalog, parse_catalog, score, search


def test_the_bundled_catalog_has_a_dozen_services_with_unique_ids() -> None:
    services = bundled_catalog()
    assert len(services) == 12 and len({s.id for s in services}) == 12
    assert all(s.keywords and s.description and s.team for s in services)


def test_each_bundled_service_is_the_best_match_for_its_own_name() -> None:
    for service in bundled_catalog():
        assert search(service.name, bundled_catalog())[0] == service, service.name


def test_score_ignores_case_stop_words_and_plurals() -> None:
    (printer,) = [s for s in bundled_catalog() if s.id == "printer-issue"]
    assert score("PRINTERS", printer) == score("printer", printer) > 0
    assert score("the and of my please", printer) == 0


# letters no stop word is made of, words too short to lose a plural "s": the oracle below needs
# neither rule (test_score_ignores_case_stop_words_and_plurals covers them)
_words = st.text(alphabet="jkqvxz", min_size=1, max_size=3)
_services = st.lists(
    st.builds(lambda name, kw, desc: (" ".join(name), kw, " ".join(desc)),
              st.lists(_words, min_size=1, max_size=3), st.lists(_words, max_size=4), st.lists(_words, max_size=6)),
    min_size=1, max_size=8,
)


@given(_services, st.lists(_words, min_size=1, max_size=5), st.integers(min_value=1, max_value=5))
def test_search_returns_the_top_scoring_services_best_first(raw: list[tuple[str, list[str], str]],
                                                            query_words: list[str], limit: int) -> None:
    services = parse_catalog({"services": [
        {"id": f"s{i}", "name": name, "keywords": kw, "description": desc or "-", "team": "t"}
        for i, (name, kw, desc) in enumerate(raw)]})
    query = " ".join(query_words).upper()
    got = search(query, services, limit=limit)

    # independent check: weights 3/2/1 for a query word in the name / keywords / description
    def expected_score(s: Service) -> int:
        words = {w for w in query.lower().split()}
        return sum(3 * (w in s.name.split()) + 2 * (w in s.keywords) + 1 * (w in s.description.split())
                   for w in words)

    ranked = sorted((s for s in services if expected_score(s) > 0),
                    key=lambda s: (-expected_score(s), services.index(s)))
    assert got == ranked[:limit]
