"""GraphiQL and the explorer in a real headless Chromium, on a real server with the demo data.

Every test runs on both stores (the server on the mirror, then on Neo4j). Chromium runs with every
host but 127.0.0.1 unresolvable, and each test asserts that the page asked nothing of any other
host and logged no console error. Screenshots go to ``test-artifacts/browser/``; the README's
picture, ``docs/img/explore.png``, is rewritten only with ``UPDATE_SCREENSHOTS=1`` (or when it is
missing), so a test run leaves the tree clean.

Needs Chromium (``apt-get install -y chromium``) and Playwright for Python (``pip install
playwright``; never ``playwright install``: the system Chromium is used). Without them every test
here is skipped with a loud reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest

from tests.api_support import Server, start_server
from tests.helpers import STORES

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Page, Request

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "browser"
README_SHOT = REPO / "docs" / "img" / "explore.png"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
RUN_ID = "run-browser-1"
QUESTION = "why did customers see payment timeouts at checkout?"
CUE = "why did payments fail during the checkout outage?"
WAIT_MS = 20_000


def chromium_path() -> str:
    """The system Chromium, or a loud skip that says how to install it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.skip(
            "BROWSER TESTS NOT RUN: no Chromium on PATH. Install it with "
            "`apt-get update && apt-get install -y chromium` (Debian's package; do not run "
            "`playwright install`). CI installs it."
        )
    return found


def require_playwright() -> None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip(
            "BROWSER TESTS NOT RUN: Playwright for Python is missing. Install it with "
            "`pip install 'playwright>=1.45'` (never `playwright install`: the tests drive the "
            "system Chromium, `apt-get install -y chromium`). CI installs both."
        )


# -- the server, with the demo incident and one run ----------------------------------------------


@dataclass
class Demo:
    """A running server with the demo incident in a fresh namespace, and one run."""

    server: Server
    store: str
    namespace: str
    ids: dict[str, str]  # demo.jsonl id -> the id in this namespace

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def key(self, name: str) -> str:
        return self.server.keys[name]

    def id(self, number: int) -> str:
        return self.ids[f"00000000-0000-4000-8000-{number:012d}"]


def graphql(server: Server, query: str, variables: dict[str, Any] | None = None) -> Any:
    response = httpx.post(
        server.graphql_url,
        json={"query": query, "variables": variables or {}},
        headers={"Authorization": f"Bearer {server.keys['writer']}"},
        timeout=30,
    )
    body = response.json()
    assert response.status_code == 200 and not body.get("errors"), body
    return body["data"]


def load_demo(server: Server, namespace: str) -> dict[str, str]:
    """The packaged demo incident, through the public API (rememberMany, linkMany). Memory ids
    are unique across namespaces, so each run gets its own (derived from the demo's)."""
    lines = resources.files("graphsvc").joinpath("data/demo.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    ids = {
        r["id"]: str(uuid.uuid5(uuid.NAMESPACE_URL, f"{namespace}/{r['id']}"))
        for r in records
        if r["type"] == "memory"
    }
    memories = [
        {**{k: v for k, v in r.items() if k != "type"}, "id": ids[r["id"]]}
        for r in records
        if r["type"] == "memory"
    ]
    links = [
        {
            **{k: v for k, v in r.items() if k != "type"},
            "source": ids[r["source"]],
            "target": ids[r["target"]],
        }
        for r in records
        if r["type"] == "link"
    ]
    graphql(
        server,
        "mutation($m: [MemoryInput!]!) { rememberMany(inputs: $m) { id } }",
        {"m": memories},
    )
    graphql(server, "mutation($l: [LinkInput!]!) { linkMany(inputs: $l) { kind } }", {"l": links})
    # A run of three assembled steps; the provider's counts are reported for two.
    for step, turn in enumerate(
        ["What happened to checkout?", "Why did the pool shrink?", "What changed after?"]
    ):
        graphql(
            server,
            "query($i: PromptInput!) { promptBundle(input: $i) { runId } }",
            {"i": {"userTurn": turn, "runId": RUN_ID, "step": step}},
        )
    for step, reported in [(0, 352), (1, 331)]:
        graphql(
            server,
            "mutation($r: String!, $s: Int!, $t: Int!) "
            "{ reportTokens(runId: $r, step: $s, reportedTokens: $t) { seq } }",
            {"r": RUN_ID, "s": step, "t": reported},
        )
    return ids


@pytest.fixture(scope="module", params=STORES)
def demo(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Demo]:
    chromium_path()
    require_playwright()
    namespace = f"web{uuid.uuid4().hex[:10]}"
    running = start_server(
        tmp_path_factory.mktemp("browser"),
        request.param,
        tenants={"writer": (namespace, "write"), "reader": (namespace, "read")},
    )
    try:
        yield Demo(running, request.param, namespace, load_demo(running, namespace))
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser(demo: Demo) -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


# -- a page that records what it asks for and what it logs ---------------------------------------


@dataclass
class Watched:
    """A page, the requests it made and the console errors it logged."""

    page: Page
    base_url: str
    store: str
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def goto(self, path: str) -> None:
        self.page.goto(f"{self.base_url}{path}", wait_until="load")

    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.page.url).query)

    def shot(self, name: str, *, full_page: bool = True) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}-{self.store}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        return path

    def foreign_requests(self) -> list[str]:
        own = urlsplit(self.base_url).netloc
        return [
            url
            for url in self.requests
            if not url.startswith(("data:", "blob:", "about:")) and urlsplit(url).netloc != own
        ]


PageFactory = Callable[..., Watched]


@pytest.fixture
def open_page(browser: Browser, demo: Demo) -> Iterator[PageFactory]:
    """Open pages (a fresh browser context each); after the test, assert no console error except
    the ones the test allows and no request to another host."""
    opened: list[tuple[Watched, list[re.Pattern[str]]]] = []

    def make(
        *,
        width: int = 1280,
        height: int = 800,
        key: str | None = "reader",
        allow_errors: list[str] | None = None,
    ) -> Watched:
        context = browser.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(WAIT_MS)
        if key is not None:
            # What typing it into the key field stores (that field is tested on its own below).
            context.add_init_script(
                f"sessionStorage.setItem('graphsvc.apiKey', {json.dumps(demo.key(key))})"
            )
        page = context.new_page()
        watched = Watched(page, demo.base_url, demo.store)

        def on_console(message: ConsoleMessage) -> None:
            if message.type == "error":
                watched.errors.append(message.text)

        def on_request(request: Request) -> None:
            watched.requests.append(request.url)

        page.on("console", on_console)
        page.on("pageerror", lambda error: watched.errors.append(f"page error: {error}"))
        page.on("request", on_request)
        opened.append((watched, [re.compile(p) for p in allow_errors or []]))
        return watched

    yield make
    for watched, allowed in opened:
        watched.page.context.close()
        unexpected = [e for e in watched.errors if not any(p.search(e) for p in allowed)]
        assert not unexpected, f"console errors: {unexpected}"
        assert watched.requests, "the page made no request at all"
        assert not watched.foreign_requests(), (
            f"requests to other hosts: {watched.foreign_requests()}"
        )


def expect_timeout() -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=WAIT_MS)


# -- GraphiQL -------------------------------------------------------------------------------------


def test_graphiql_renders_offline_and_runs_a_query(open_page: PageFactory, demo: Demo) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    w = open_page()
    w.goto("/graphql")
    page = w.page
    expect(page.locator(".graphiql-container")).to_be_visible()
    expect(page.locator(".graphiql-query-editor")).to_be_visible()
    expect(page.locator("#gs-api-key")).to_have_value(re.compile(".+"))
    # The header editor is there, for an Authorization header of one's own.
    expect(page.get_by_role("button", name="Headers", exact=True)).to_be_visible()
    # The explorer plugin, from the same origin.
    page.get_by_role("button", name="Show GraphiQL Explorer").click()
    expect(page.locator(".graphiql-explorer-root")).to_be_visible()
    page.locator(".graphiql-execute-button").click()
    result = page.get_by_role("region", name="Result Window")
    expect(result).to_contain_text(f'"namespace": "{demo.namespace}"')
    expect(result).to_contain_text('"memories": 20')
    w.shot("graphiql")
    assert any("/static/graphiql/graphiql.min-" in url for url in w.requests)


def test_graphiql_without_a_key_says_the_server_requires_one(
    open_page: PageFactory, demo: Demo
) -> None:
    # Keys required and none set: the status said "No key: requests go without one", and the
    # Explorer plugin "No Schema Available" without a word on why. The page's own link to
    # /explore was named "Explorer", like that plugin.
    from playwright.sync_api import expect

    expect_timeout()
    w = open_page(key=None, allow_errors=[r"status of 401"])
    w.goto("/graphql")
    page = w.page
    required = "This server requires a key: paste one in the key field."
    expect(page.locator("#gs-key-status")).to_have_text(required)
    page.get_by_role("button", name="Show GraphiQL Explorer").click()
    notice = page.locator(".gs-no-schema")
    expect(notice).to_contain_text(required)
    expect(page.get_by_text("No Schema Available")).to_have_count(0)
    expect(page.get_by_role("link", name="Memory explorer")).to_have_attribute("href", "explore")
    expect(page.get_by_role("link", name="Explorer", exact=True)).to_have_count(0)

    # A key the server accepts: the schema comes, and the plugin shows it.
    page.get_by_label("API key").fill(demo.key("reader"))
    page.get_by_role("button", name="Use key").click()
    expect(page.locator("#gs-key-status")).to_have_text("Key in use for this tab.")
    expect(page.locator(".graphiql-explorer-root")).to_be_visible()
    expect(notice).to_have_count(0)
    w.shot("graphiql-no-key")


# -- the explorer ---------------------------------------------------------------------------------


def test_a_shared_bundle_link_renders_without_interaction(
    open_page: PageFactory, demo: Demo
) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    w = open_page()
    w.goto(f"/explore?view=bundle&q={quote(QUESTION)}&budget=120")
    page = w.page
    result = page.locator("#bundle-result")
    expect(result).to_be_visible()
    expect(page.locator("#verdict")).to_contain_text("Memory answers")
    capsules = page.locator("#bundle-result .capsule")
    expect(capsules.first).to_contain_text("score")
    assert capsules.count() >= 1
    assert any("payment timeouts" in text for text in capsules.all_inner_texts())
    coverage = float(page.locator("#coverage-meter").get_attribute("value") or "nan")
    assert 0 < coverage <= 1
    expect(page.locator("#budget-meter + .meter-value")).to_contain_text("of 120 tokens")
    # A budget of 120 tokens leaves ranked memories out, each with its reason.
    reasons = page.locator("table.excluded tbody tr td code").all_inner_texts()
    assert reasons and set(reasons) <= {"budget", "duplicate", "max_capsules", "below_floor"}
    expect(page.locator("#viewer")).to_contain_text(demo.namespace)
    expect(page.locator("#ask-q")).to_have_value(QUESTION)
    # The question does not ask about order; the order follows the days of the capsules offered
    # (those left out do not count). The page said "the question asks about order" for every
    # chronological bundle.
    dated = page.locator("#bundle-result ol.capsules time[datetime]")
    days = {(value or "")[:10] for value in dated.evaluate_all("els => els.map(e => e.dateTime)")}
    order = page.locator("#bundle-result .facts div", has_text="Order").locator("dd")
    spans = "oldest first, dated (the evidence spans several days)"
    expect(order).to_have_text(spans if len(days) >= 2 else "by score")
    w.shot("explore-bundle")


def test_the_bundle_shows_the_question_s_own_words(open_page: PageFactory) -> None:
    # The page showed stems as words: "Not covered by memory: mar", "matched: custom, timeout".
    from playwright.sync_api import expect

    expect_timeout()
    w = open_page()
    question = "Did customers see payment timeouts on Mars?"
    w.goto(f"/explore?view=bundle&q={quote(question)}")
    page = w.page
    uncovered = page.get_by_role("list", name="Uncovered words")
    expect(uncovered.locator("li")).to_have_text(["Mars"])
    matched = page.locator("#bundle-result .capsule .matched").first
    expect(matched).to_have_text("matched: customers, see, payment, timeouts")
    expect(page.locator("#bundle-result .rendered pre")).to_contain_text(
        "Not covered by memory: Mars."
    )


def test_asking_a_new_question_updates_the_url_and_abstains_below_min_score(
    open_page: PageFactory,
) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    w = open_page()
    w.goto("/explore")
    page = w.page
    expect(page.locator("#bundle-results")).to_contain_text("Ask something")
    page.get_by_label("Question").fill("who owns the search service?")
    page.get_by_label("Question").press("Enter")
    expect(page.locator("#bundle-result .capsule").first).to_contain_text("Elasticsearch")
    assert w.query()["q"] == ["who owns the search service?"]
    # The same question with an abstention threshold no score reaches.
    page.get_by_label("minScore").fill("1")
    page.get_by_role("button", name="Ask").click()
    expect(page.locator("#verdict")).to_contain_text("Memory abstains")
    expect(page.locator("#bundle-result")).to_contain_text("No capsule was packed")
    assert page.locator("table.excluded tbody tr td code").all_inner_texts()[0] == "abstained"
    assert w.query()["minScore"] == ["1"]
    w.shot("explore-abstain")
    # Back: the answer without the threshold again (the URL is the state).
    page.go_back()
    expect(page.locator("#verdict")).to_contain_text("Memory answers")
    expect(page.get_by_label("minScore")).to_have_value("")


def node_position(page: Page, memory_id: str) -> tuple[float, float]:
    """Where a node is drawn, in page coordinates (from Cytoscape's rendered position)."""
    page.locator("#graph").scroll_into_view_if_needed()
    box = page.locator("#graph").bounding_box()
    assert box is not None
    point = page.evaluate(
        "id => window.graphsvcExplore.cy.getElementById(id).renderedPosition()", memory_id
    )
    return box["x"] + point["x"], box["y"] + point["y"]


def test_belief_graph_is_drawn_and_a_node_opens_its_memory(open_page: PageFactory) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    w = open_page()
    w.goto(f"/explore?view=belief&q={quote(CUE)}&k=3&depth=1")
    page = w.page
    expect(page.locator("#belief-result")).to_contain_text("direct sources")
    expect(page.locator("#confidence-meter")).to_be_visible()
    expect(page.locator("#belief-details pre.summary-text")).to_contain_text(
        "Causal chains (cause -> effect"
    )
    graph = page.locator("#graph")
    expect(graph.locator("canvas").first).to_be_attached()
    nodes = int(graph.get_attribute("data-nodes") or 0)
    assert nodes >= 3
    assert int(graph.get_attribute("data-edges") or 0) >= 2
    expect(page.locator("#graph-nodes button")).to_have_count(nodes)
    expect(page.locator("ol.sources li")).to_have_count(3)

    # A click on the drawn node (the canvas) opens the memory with its links.
    target = page.locator("#graph-nodes button").nth(1).get_attribute("data-memory-id")
    assert target
    x, y = node_position(page, target)
    page.mouse.click(x, y)
    expect(page.locator("#memory-body .memory-text")).to_be_visible()
    assert w.query()["node"] == [target]
    expect(page.locator("#memory-body ul.links li").first).to_be_visible()
    expect(page.locator("#memory-heading")).to_be_focused()

    # Walk one hop further from the selected memory, when it has links outside the graph.
    walk = page.locator("#walk-button")
    if walk.is_enabled():
        walk.click()
        expect(page.locator("#memory-body")).to_contain_text("Added")
        assert int(graph.get_attribute("data-nodes") or 0) > nodes
    w.shot("explore-belief")

    # The keyboard path: the list beside the graph selects the same nodes.
    first = page.locator("#graph-nodes button").first
    first.focus()
    page.keyboard.press("Enter")
    expect(first).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#memory-heading")).to_be_focused()
    assert w.query()["node"] == [first.get_attribute("data-memory-id")]


def test_a_shared_belief_url_opens_the_same_graph_and_memory(
    open_page: PageFactory, demo: Demo
) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    node = demo.id(4)
    path = f"/explore?view=belief&q={quote(CUE)}&k=3&depth=2&node={node}"
    w = open_page()
    w.goto(path)
    page = w.page
    expect(page.locator("#memory-body .memory-text")).to_contain_text(
        "Customers started seeing payment timeouts"
    )
    expect(page.locator(f'#graph-nodes button[data-memory-id="{node}"]')).to_have_attribute(
        "aria-pressed", "true"
    )
    links = page.locator("#memory-body ul.links li")
    expect(links).to_have_count(3)  # caused by latency; causes the page, the failed payments
    expect(links.filter(has_text="CAUSES →")).to_have_count(2)
    assert page.evaluate("id => window.graphsvcExplore.cy.getElementById(id).selected()", node), (
        "the node is selected on the graph"
    )
    readme_shot = w.shot("explore-readme", full_page=False)
    if demo.store == "mirror" and (
        os.environ.get("UPDATE_SCREENSHOTS") == "1" or not README_SHOT.exists()
    ):
        README_SHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(readme_shot, README_SHOT)
    w.shot("explore-shared-belief")

    # A memory alone (from the timeline's "Explore its links"): the graph around it.
    w.goto(f"/explore?view=belief&node={node}")
    expect(page.locator("#memory-body .memory-text")).to_contain_text("payment timeouts")
    assert int(page.locator("#graph").get_attribute("data-nodes") or 0) == 4


def test_timeline_filters_by_tag_and_time(open_page: PageFactory) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    w = open_page()
    w.goto("/explore?view=timeline")
    page = w.page
    items = page.locator("#timeline-list > li")
    expect(items).to_have_count(15)  # a page; the demo has 20 memories
    page.get_by_role("button", name="Load more").click()
    expect(items).to_have_count(20)
    expect(page.get_by_role("button", name="Load more")).to_have_count(0)
    texts = items.all_inner_texts()
    assert len(set(texts)) == 20, "a memory shows twice across pages"
    page.get_by_label("Tag", exact=True).fill("oncall")
    page.get_by_label("Since", exact=True).fill("2024-03-01")
    page.get_by_role("button", name="Show").click()
    expect(items).to_have_count(2)  # the page, and the rotation change of April
    page.get_by_label("Until", exact=True).fill("2024-04-01")
    page.get_by_role("button", name="Show").click()
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("PagerDuty paged")
    assert w.query()["tag"] == ["oncall"]
    assert w.query()["since"] == ["2024-03-01"]
    assert w.query()["until"] == ["2024-04-01"]
    w.goto("/explore?view=timeline&kind=decision&until=2024-03-12")
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("connection pool")
    w.shot("explore-timeline")


def test_run_view_draws_the_drift_chart(open_page: PageFactory) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    w = open_page()
    w.goto(f"/explore?view=run&run={RUN_ID}")
    page = w.page
    chart = page.locator("svg.drift-chart")
    expect(chart).to_be_visible()
    expect(chart.locator("rect.est")).to_have_count(3)
    expect(chart.locator("rect.reported")).to_have_count(2)
    expect(chart.locator("text.missing")).to_have_count(1)
    expect(page.locator("#run-result")).to_contain_text("Unreported steps")
    expect(page.locator("#drift-steps tbody tr")).to_have_count(3)
    assert page.locator("#run-events tbody tr").count() >= 5  # recalls, assembled, reports
    w.shot("explore-run")


def test_phone_width_is_usable(open_page: PageFactory) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    w = open_page(width=390, height=844)
    w.goto(f"/explore?q={quote(QUESTION)}")
    page = w.page
    expect(page.locator("#bundle-result .capsule").first).to_be_visible()

    def no_sideways_scroll() -> None:
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 1, f"the page scrolls sideways by {overflow}px"

    no_sideways_scroll()
    for control in [page.get_by_label("Question"), page.get_by_role("button", name="Ask")]:
        box = control.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    w.shot("explore-phone-bundle")
    page.get_by_role("link", name="Reconstruct").click()
    expect(page.locator("#belief-result")).to_be_visible()
    expect(page.locator("#graph canvas").first).to_be_attached()
    graph = page.locator("#graph").bounding_box()
    assert graph is not None and graph["width"] <= 390 and graph["height"] >= 200
    page.locator("#graph-nodes button").first.click()
    expect(page.locator("#memory-body .memory-text")).to_be_visible()
    no_sideways_scroll()
    w.shot("explore-phone-belief")


def test_the_api_key_field_and_keyboard_order(open_page: PageFactory, demo: Demo) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    # No key yet: the API answers 401, which Chromium logs; that error only is expected here.
    w = open_page(key=None, allow_errors=[r"status of 401"])
    w.goto(f"/explore?q={quote(QUESTION)}")
    page = w.page
    expect(page.locator("#viewer")).to_contain_text("No valid API key")
    expect(page.locator("#bundle-results [role=alert]")).to_contain_text("UNAUTHENTICATED")

    # Keyboard: the skip link comes first, then the views, then the key field.
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Ask")).to_be_focused()
    for _ in range(len(["Reconstruct", "Timeline", "Run & drift", "Overview"]) + 1):
        page.keyboard.press("Tab")
    expect(page.get_by_label("API key")).to_be_focused()
    page.keyboard.type(demo.key("reader"))
    page.keyboard.press("Enter")
    expect(page.locator("#viewer")).to_contain_text(f"{demo.namespace} · read key")
    expect(page.locator("#verdict")).to_contain_text("Memory answers")  # fetched again
    assert page.evaluate("() => sessionStorage.getItem('graphsvc.apiKey')") == demo.key("reader")

    # GraphiQL in the same tab uses the same key.
    w.goto("/graphql")
    expect(page.locator("#gs-api-key")).to_have_value(demo.key("reader"))
    page.locator(".graphiql-execute-button").click()
    expect(page.get_by_role("region", name="Result Window")).to_contain_text('"role": "read"')

    # Forget: the key is gone from the tab.
    page.get_by_role("button", name="Forget").click()
    assert page.evaluate("() => sessionStorage.getItem('graphsvc.apiKey')") is None


# -- acting on memory (issue 31 item 7): forget, link, search, overview --------------------------
# These run last for each store and leave the demo as they found it: what they write they forget.

SCRATCH = "scratch"


def doc_shot(w: Watched, demo: Demo, name: str, *, full_page: bool = False) -> None:
    """A screenshot for docs/explorer.md (``docs/img/<name>.png``), written as the README's is:
    from the mirror run, with ``UPDATE_SCREENSHOTS=1`` or when missing."""
    shot = w.shot(name, full_page=full_page)
    target = REPO / "docs" / "img" / f"{name}.png"
    if demo.store == "mirror" and (
        os.environ.get("UPDATE_SCREENSHOTS") == "1" or not target.exists()
    ):
        shutil.copyfile(shot, target)


def scratch(demo: Demo, text: str) -> str:
    data = graphql(
        demo.server,
        "mutation($i: MemoryInput!) { remember(input: $i) { id } }",
        {"i": {"text": text, "kind": "note", "tags": [SCRATCH]}},
    )
    return str(data["remember"]["id"])


def forget_quietly(demo: Demo, *ids: str) -> None:
    for mid in ids:
        httpx.post(
            demo.server.graphql_url,
            json={
                "query": "mutation($id: UUID!) { forget(id: $id) { memoryId } }",
                "variables": {"id": mid},
            },
            headers={"Authorization": f"Bearer {demo.key('writer')}"},
            timeout=30,
        )


def test_a_write_key_forgets_a_memory_after_confirming(open_page: PageFactory, demo: Demo) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    mid = scratch(demo, "A scratch note about the checkout dashboard, to forget")
    graphql(
        demo.server,
        "mutation($l: LinkInput!) { link(input: $l) { kind } }",
        {"l": {"source": mid, "target": demo.id(1), "kind": "RELATES_TO"}},
    )
    w = open_page(key="writer")
    w.goto(f"/explore?view=belief&node={mid}")
    page = w.page
    expect(page.locator("#memory-body .memory-text")).to_contain_text("scratch note")
    page.get_by_role("button", name="Forget this memory…").click()
    confirm = page.get_by_role("group", name="Confirm forgetting")
    expect(confirm).to_contain_text("1 link(s)")
    page.get_by_role("button", name="Cancel").click()
    expect(confirm).to_be_hidden()
    page.get_by_role("button", name="Forget this memory…").click()
    page.locator("#forget-confirm").click()
    receipt = page.locator(".memory-actions .notice-info")
    expect(receipt).to_contain_text("Forgotten.")
    expect(receipt).to_contain_text(f"Memory {mid} was removed from namespace {demo.namespace}")
    expect(receipt).to_contain_text("with 1 link(s) and 0 belief(s)")
    expect(page.locator(".receipt-links")).to_contain_text(f"{mid} RELATES_TO → {demo.id(1)}")
    expect(page.locator("#memory-heading")).to_contain_text("Forgotten:")
    doc_shot(w, demo, "explore-forget")
    gone = graphql(demo.server, "query($id: UUID!) { memory(id: $id) { id } }", {"id": mid})
    assert gone["memory"] is None


def test_a_read_key_sees_the_actions_disabled_and_the_server_refuses(
    open_page: PageFactory, demo: Demo
) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    mid = scratch(demo, "A scratch note a reader cannot forget")
    try:
        w = open_page(key="reader")
        w.goto(f"/explore?view=belief&node={mid}")
        page = w.page
        expect(page.locator("#memory-body .memory-text")).to_contain_text("reader cannot")
        expect(page.locator(".read-only-note")).to_be_visible()
        expect(page.get_by_role("button", name="Forget this memory…")).to_be_disabled()
        expect(page.locator("#link-submit")).to_be_disabled()
        # The server refuses anyway: the UI only spares the reader a useless click.
        response = httpx.post(
            demo.server.graphql_url,
            json={
                "query": "mutation($id: UUID!) { forget(id: $id) { memoryId } }",
                "variables": {"id": mid},
            },
            headers={"Authorization": f"Bearer {demo.key('reader')}"},
            timeout=30,
        )
        errors = response.json()["errors"]
        assert errors[0]["extensions"]["code"] == "FORBIDDEN"
        assert "role 'write'" in errors[0]["message"]
    finally:
        forget_quietly(demo, mid)


def test_a_write_key_links_two_memories_and_sees_refusals(
    open_page: PageFactory, demo: Demo
) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    older = scratch(demo, "Scratch: the old retry policy")
    newer = scratch(demo, "Scratch: the new retry policy")
    try:
        w = open_page(key="writer")
        w.goto(f"/explore?view=belief&node={newer}")
        page = w.page
        expect(page.locator("#memory-body .memory-text")).to_contain_text("new retry policy")
        form = page.locator("#link-form")
        form.get_by_label("Kind", exact=True).select_option("SUPERSEDES")
        form.get_by_label("Other memory").fill(older)
        form.get_by_label("Note").fill("replaced in the review")
        form.get_by_role("button", name="Link").click()
        expect(page.locator("#memory-body")).to_contain_text(f"Linked: SUPERSEDES to {older}.")
        expect(page.locator("#memory-body ul.links")).to_contain_text("SUPERSEDES →")
        # The other way round would be a cycle: the server's words are shown.
        form = page.locator("#link-form")
        form.get_by_label("Link", exact=True).select_option("to")
        form.get_by_label("Kind", exact=True).select_option("SUPERSEDES")
        form.get_by_label("Other memory").fill(older)
        form.get_by_role("button", name="Link").click()
        error = page.locator(".memory-actions .notice-error")
        expect(error).to_contain_text("SUPERSEDES links would form a cycle")
        error.scroll_into_view_if_needed()
        doc_shot(w, demo, "explore-link")
        unknown = "00000000-0000-4000-8000-999999999999"
        form.get_by_label("Link", exact=True).select_option("from")
        form.get_by_label("Kind", exact=True).select_option("CAUSES")
        form.get_by_label("Other memory").fill(unknown)
        form.get_by_role("button", name="Link").click()
        expect(error).to_contain_text(f"memory {unknown} does not exist")
        form.get_by_label("Other memory").fill("not-an-id")
        form.get_by_role("button", name="Link").click()
        expect(error).to_contain_text("not-an-id")
    finally:
        forget_quietly(demo, older, newer)


def test_timeline_searches_words_and_filters_the_matches(
    open_page: PageFactory, demo: Demo
) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    w = open_page()
    w.goto("/explore?view=timeline")
    page = w.page
    items = page.locator("#timeline-list > li")
    expect(items).to_have_count(15)
    page.get_by_label("Search").fill("connection pool")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#search-summary")).to_contain_text("memories ranked for “connection pool”")
    expect(items.first).to_contain_text("pool")
    assert w.query()["q"] == ["connection pool"]
    found = items.count()
    assert 1 < found <= 45
    page.get_by_label("Kind", exact=True).fill("decision")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#search-summary")).to_contain_text("left out by the filters")
    expect(items.first).to_contain_text("connection pool")
    assert all("decision" in text for text in items.all_inner_texts())
    doc_shot(w, demo, "explore-search")
    # A shared link gives the same result without interaction.
    w.goto("/explore?view=timeline&q=connection%20pool&kind=decision")
    expect(items.first).to_contain_text("connection pool")


def test_overview_shows_counts_and_causal_components(open_page: PageFactory, demo: Demo) -> None:
    from playwright.sync_api import expect

    expect_timeout()
    w = open_page()
    w.goto("/explore?view=overview")
    page = w.page
    kinds = page.locator("#facet-kinds tbody tr")
    expect(kinds).to_have_count(5)
    expect(kinds.first).to_contain_text("event")
    expect(kinds.first).to_contain_text("10")
    expect(page.locator("#overview-results")).to_contain_text("20")
    expect(page.locator("#facet-days tbody tr").first).to_be_visible()
    components = page.locator("#overview-components li")
    expect(components.first).to_contain_text("causal link(s)")
    doc_shot(w, demo, "explore-overview", full_page=True)
    kinds.first.get_by_role("link").click()
    expect(page.locator("#timeline-list > li")).to_have_count(10)
    assert w.query()["kind"] == ["event"]


def test_the_time_slider_steps_through_the_days_memory_holds(
    open_page: PageFactory, demo: Demo
) -> None:
    # Issue 32: a slider over the days the view changes (oldest on the left, far right "now")
    # sets the as-of instant to the end of its day, in ISO 8601, and asks again.
    from playwright.sync_api import expect

    expect_timeout()
    days = graphql(demo.server, "{ asOfDays(mode: VALID) }")["asOfDays"]
    assert len(days) >= 2, days  # the demo's memories span days
    w = open_page()
    w.goto(f"/explore?view=bundle&q={quote(QUESTION)}")
    page = w.page
    expect(page.locator("#as-of-used")).to_contain_text("As of now")
    slider = page.get_by_label("Move through time")
    expect(slider).to_be_enabled()
    expect(slider).to_have_attribute("max", str(len(days)))
    expect(slider).to_have_attribute("aria-valuetext", "now")
    slider.evaluate(
        "(el) => { el.value = '0'; el.dispatchEvent(new Event('input', { bubbles: true }));"
        " el.dispatchEvent(new Event('change', { bubbles: true })); }"
    )
    expect(page.locator("#as-of-used")).to_contain_text(f"As of {days[0]} 23:59 UTC, VALID")
    expect(slider).to_have_attribute("aria-valuetext", days[0])
    expect(page.get_by_label("As of (UTC)")).to_have_value(f"{days[0]}T23:59:59Z")
    assert w.query()["asOf"] == [f"{days[0]}T23:59:59Z"]


def test_as_of_answers_with_the_older_memory_and_the_panel_shows_its_history(
    open_page: PageFactory, demo: Demo
) -> None:
    # Issue 32: an instant before the superseding memory was written, in the KNOWN view, answers
    # with the older memory; its panel lists the chain, oldest first, itself marked.
    from playwright.sync_api import expect

    expect_timeout()
    older = scratch(demo, "Scratch: the ledger reconciler pager holder is Dana Whitfield")
    recorded = graphql(
        demo.server, "query($id: UUID!) { memory(id: $id) { recordedAt } }", {"id": older}
    )["memory"]["recordedAt"]
    # The as-of input holds whole seconds: the next second after the older memory's recording,
    # and the newer one written after it.
    at = datetime.fromisoformat(recorded).replace(microsecond=0) + timedelta(seconds=1)
    time.sleep(max(0.0, (at - datetime.fromisoformat(recorded)).total_seconds()) + 0.2)
    newer = scratch(demo, "Scratch: the ledger reconciler pager holder is Eli Moreno")
    try:
        graphql(
            demo.server,
            "mutation($l: LinkInput!) { link(input: $l) { kind } }",
            {"l": {"source": newer, "target": older, "kind": "SUPERSEDES"}},
        )
        w = open_page()
        w.goto(f"/explore?view=bundle&q={quote('ledger reconciler pager holder')}")
        page = w.page
        capsules = page.locator("#bundle-result .capsule")
        expect(capsules.first).to_contain_text("reconciler")
        assert any("Eli Moreno" in text for text in capsules.all_inner_texts())  # now
        expect(page.locator("#as-of-used")).to_contain_text("As of now")
        page.get_by_label("As of (UTC)").fill(at.strftime("%Y-%m-%dT%H:%M:%S"))
        page.get_by_label("View of the past").select_option("KNOWN")
        page.get_by_role("button", name="Ask").click()
        used = page.locator("#as-of-used")
        expect(used).to_contain_text(f"As of {at:%Y-%m-%d %H:%M} UTC, KNOWN")
        expect(capsules.first).to_contain_text("Dana Whitfield")
        assert not any("Eli Moreno" in text for text in capsules.all_inner_texts())
        assert w.query()["asOf"] == [at.strftime("%Y-%m-%dT%H:%M:%S")]
        assert w.query()["asOfMode"] == ["KNOWN"]
        doc_shot(w, demo, "explore-as-of")

        # The timeline as of the same instant lists what was recorded by then.
        w.goto(f"/explore?view=timeline&tag={SCRATCH}&asOf={w.query()['asOf'][0]}&asOfMode=KNOWN")
        items = page.locator("#timeline-list > li")
        expect(items).to_have_count(1)
        expect(items.first).to_contain_text("Dana Whitfield")
        page.get_by_label("View of the past").select_option("")
        page.get_by_role("button", name="Show").click()
        expect(page.locator("#as-of-valid-needs-words")).to_contain_text("type words")

        # The older memory's panel: the chain oldest first, this memory marked, what closed it.
        w.goto(f"/explore?view=belief&node={older}")
        history = page.locator("#memory-history li")
        expect(history).to_have_count(2)
        expect(history.first).to_have_attribute("aria-current", "true")
        expect(history.first).to_contain_text("Dana Whitfield")
        expect(history.first).to_contain_text("superseded by: Scratch: the ledger reconciler")
        expect(history.first).to_contain_text("until ")
        expect(history.nth(1)).to_contain_text("still true")
        history.nth(1).get_by_role("button").click()
        expect(page.locator("#memory-body .memory-text")).to_contain_text("Eli Moreno")
        expect(page.locator("#memory-history li").nth(1)).to_have_attribute("aria-current", "true")
        w.shot("explore-history")
    finally:
        forget_quietly(demo, newer, older)
