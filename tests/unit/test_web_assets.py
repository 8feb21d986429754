"""The packaged browser pages: present, same-origin only, built from the current web/ sources, and
served with the right headers (in process; the real browser suite is tests/e2e/test_browser.py)."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from graphsvc.api.app import create_app
from graphsvc.api.auth import ApiKeys
from graphsvc.api.web import CONTENT_SECURITY_POLICY, graphiql_html, static_root
from graphsvc.settings import Settings
from tests.api_support import in_process

REPO = Path(__file__).resolve().parents[2]
WEB = REPO / "web"
PAGES = ["graphiql/index.html", "explore/index.html"]
# The inputs of web/build.mjs's sourceHash, in the same order of definition.
SOURCES = ["package.json", "package-lock.json", "build.mjs", "tsconfig.json", "src"]
REBUILD = "run `bash scripts/build_web.sh` and commit graphsvc/api/static"


class _Urls(HTMLParser):
    """Every URL an HTML page loads or links to (src, href, action, ...)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in {"src", "href", "action", "poster", "data", "srcset"} and value is not None:
                self.urls.append(value)


def page_text(name: str) -> str:
    return static_root().joinpath(name).read_text(encoding="utf-8")


def urls_of(name: str) -> list[str]:
    parser = _Urls()
    parser.feed(page_text(name))
    return parser.urls


def build_info() -> dict[str, Any]:
    info: dict[str, Any] = json.loads(static_root().joinpath("build-info.json").read_text())
    return info


@pytest.mark.parametrize("name", PAGES)
def test_pages_load_only_same_origin_urls(name: str) -> None:
    html = page_text(name)
    assert not re.search(r"(?i)\bhttps?:", html), f"{name} names another host"
    assert "//" not in "".join(urls_of(name)), f"{name} has a protocol-relative URL"
    for url in urls_of(name):
        assert url.startswith(("static/", "data:", "#")) or url in {"graphql", "explore"}, url


@pytest.mark.parametrize("name", PAGES)
def test_every_asset_a_page_names_is_packaged(name: str) -> None:
    assets = [url for url in urls_of(name) if url.startswith("static/")]
    assert assets, f"{name} loads nothing"
    for url in assets:
        path = url.removeprefix("static/")
        assert static_root().joinpath(path).is_file(), f"{name} names {url}, not packaged"
        assert re.search(r"-[0-9a-f]{10}\.[a-z]+$", path), f"{url} is not content-hashed"


def test_graphiql_page_loads_react_graphiql_and_the_explorer_plugin() -> None:
    scripts = [url for url in urls_of("graphiql/index.html") if url.endswith(".js")]
    names = [Path(url).name.rsplit("-", 1)[0] for url in scripts]
    # Order matters: the UMD builds define globals the next ones use.
    assert names == [
        "react.production.min",
        "react-dom.production.min",
        "graphiql.min",
        "plugin-explorer",
        "page",
    ]
    assert graphiql_html() == page_text("graphiql/index.html")


def test_build_info_matches_the_packaged_files() -> None:
    info = build_info()
    assert info["versions"]["graphiql"] == "3.8.3"
    assert info["versions"]["react"] == info["versions"]["react-dom"] == "18.2.0"
    for name, digest in info["files"].items():
        data = static_root().joinpath(name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, f"{name} was changed after the build"


def test_the_licenses_of_shipped_packages_are_packaged() -> None:
    info = build_info()
    notices_name = next(name for name in info["files"] if name.startswith("licenses/"))
    notices = static_root().joinpath(notices_name).read_text(encoding="utf-8")
    shipped = [*info["explorerBundledPackages"], *info["versions"]]
    for package in shipped:
        assert re.search(rf"^{re.escape(package)}@\S+ \(", notices, re.M), package
    assert notices.count("Permission is hereby granted") > 10  # license texts, not just names


def test_explorer_bundle_stays_small() -> None:
    bundle = next(name for name in build_info()["files"] if re.match(r"explore/app-.*\.js$", name))
    packed = gzip.compress(static_root().joinpath(bundle).read_bytes())
    assert len(packed) < 1_000_000, f"the explorer is {len(packed)} bytes gzipped"


def source_hash() -> str:
    files: list[str] = []
    for entry in SOURCES:
        path = WEB / entry
        if path.is_dir():
            files += [p.relative_to(WEB).as_posix() for p in path.rglob("*") if p.is_file()]
        else:
            files.append(entry)
    digest = hashlib.sha256()
    for name in sorted(files):
        content = hashlib.sha256((WEB / name).read_bytes()).hexdigest()
        digest.update(f"{name}\0{content}\n".encode())
    return digest.hexdigest()


def test_the_packaged_pages_are_built_from_the_current_sources() -> None:
    if not (WEB / "package.json").exists():
        pytest.skip("web/ is not here (an installed graphsvc): nothing to compare")
    assert build_info()["sourceHash"] == source_hash(), (
        f"web/ changed since graphsvc/api/static was built: {REBUILD}"
    )


# -- served ---------------------------------------------------------------------------------------


@pytest.fixture
def client(tmp_path: Path) -> Any:
    settings = Settings(data_dir=tmp_path / "data", fsync=False, neo4j_uri=None)
    with in_process(create_app(settings, ApiKeys.parse("secret-key-0123456789=webns:read"))) as c:
        yield c


def test_pages_need_no_key_and_allow_this_origin_only(client: Any) -> None:
    for path, marker in [("/explore?q=anything", "graphsvc explorer"), ("/graphql", "GraphiQL")]:
        response = client.get(path, headers={"Accept": "text/html"})
        assert response.status_code == 200, path
        assert marker in response.text
        assert "unpkg" not in response.text
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert response.headers["cache-control"] == "no-cache"
    # The data still needs the key.
    refused = client.post("/graphql", json={"query": "{ viewer { namespace } }"})
    assert refused.status_code == 401


def test_hashed_assets_are_cached_compressed_and_revalidated(tmp_path: Path) -> None:
    # Straight on the ASGI app (assets need no store), so the compressed bytes are seen as sent.
    settings = Settings(data_dir=tmp_path / "data", fsync=False, neo4j_uri=None)
    app = create_app(settings, ApiKeys())
    url = next(u for u in urls_of("explore/index.html") if u.endswith(".js"))
    on_disk = static_root().joinpath(url.removeprefix("static/")).read_bytes()

    async def fetch(headers: dict[str, str]) -> tuple[httpx.Response, bytes]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            async with c.stream("GET", f"/{url}", headers=headers) as response:
                raw = b"".join([chunk async for chunk in response.aiter_raw()])
            return response, raw

    plain, body = anyio.run(fetch, {"Accept-Encoding": "identity"})
    assert plain.status_code == 200
    assert plain.headers["content-type"].startswith("text/javascript")
    assert plain.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert "content-encoding" not in plain.headers
    assert body == on_disk
    packed, compressed = anyio.run(fetch, {"Accept-Encoding": "gzip, br"})
    assert packed.headers["content-encoding"] == "gzip"
    assert packed.headers["vary"] == "Accept-Encoding"
    assert gzip.decompress(compressed) == on_disk
    assert len(compressed) < len(on_disk) / 2
    again, empty = anyio.run(fetch, {"If-None-Match": plain.headers["etag"]})
    assert again.status_code == 304
    assert empty == b""


@pytest.mark.parametrize(
    "path",
    [
        "/static/nothing-here.js",
        "/static/graphiql/index.html",  # pages are served at their routes only
        "/static/../web.py",
        "/static/%2e%2e/web.py",
        "/static/explore/../../web.py",
        "/static/.hidden.js",
    ],
)
def test_only_packaged_assets_are_served(client: Any, path: str) -> None:
    assert client.get(path).status_code == 404
