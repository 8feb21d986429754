"""Browser pages: GraphiQL that works offline (GET ``/graphql``) and the explorer (``/explore``).

Both pages and everything they load are files of this package, under ``graphsvc/api/static``,
built from ``web/`` by ``scripts/build_web.sh`` and committed (installing graphsvc needs no Node):

- ``static/graphiql/index.html``: React, GraphiQL and its explorer plugin, same-origin; the page's
  API-key field (or GraphiQL's header editor) sends ``Authorization: Bearer <key>``;
- ``static/explore/index.html``: the explorer, a reference frontend that uses only the public
  GraphQL API with the same API keys;
- ``static/licenses/``: the licenses of the third-party code shipped.

Routes: ``/explore`` (the page) and ``/static/{path}`` (the assets). Neither needs an API key: the
pages hold no data, and every GraphQL request they make carries the key the user typed. Assets
are named by their content hash, so they are cached for a year (``immutable``); the pages are
revalidated on every load (``no-cache``) and carry a Content-Security-Policy that allows this
origin only. Files are read with :mod:`importlib.resources` on first request and kept in memory
(a few MB), gzip-compressed for clients that accept it.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Route

logger = logging.getLogger("graphsvc.api")

STATIC_PACKAGE = "graphsvc.api"
STATIC_DIR = "static"
BUILD_COMMAND = "bash scripts/build_web.sh"

#: What the pages may load and call: this origin only. Styles allow inline attributes (GraphiQL's
#: editor and Cytoscape set element styles); fonts and the favicon are data: URLs.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)

#: Headers of the HTML pages.
PAGE_HEADERS = {
    "Cache-Control": "no-cache",
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

IMMUTABLE = "public, max-age=31536000, immutable"
_HASHED_NAME = re.compile(r"-[0-9a-f]{10}\.[a-z]+$")
_SEGMENT = re.compile(r"^[A-Za-z0-9_@][A-Za-z0-9._@-]{0,127}$")
_MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".woff2": "font/woff2",
}
_COMPRESSIBLE = {".js", ".css", ".txt", ".json", ".svg"}
_GZIP_MIN_BYTES = 1024


def static_root() -> Traversable:
    """The packaged ``static`` folder."""
    return resources.files(STATIC_PACKAGE).joinpath(STATIC_DIR)


def _missing_page(title: str) -> str:
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{title}</title></head><body><h1>{title}</h1>"
        "<p>The built browser pages are missing from this installation of graphsvc "
        f"(graphsvc/api/static). Build them with <code>{BUILD_COMMAND}</code> (Node 20+), "
        "or reinstall graphsvc from a release. The GraphQL API itself works: POST to "
        "<code>/graphql</code>.</p></body></html>"
    )


def _read_page(folder: str, title: str) -> str:
    page = static_root().joinpath(folder, "index.html")
    try:
        return page.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        logger.error("%s: %s/index.html is missing; run %s", title, folder, BUILD_COMMAND)
        return _missing_page(title)


@cache
def graphiql_html() -> str:
    """The GraphiQL page: same-origin React, GraphiQL and explorer plugin, with an API-key field.

    Read from the package once. When the built files are missing, a page that says how to
    build them.
    """
    return _read_page("graphiql", "graphsvc GraphiQL")


@cache
def explore_html() -> str:
    """The explorer page (same fallback as :func:`graphiql_html`)."""
    return _read_page("explore", "graphsvc explorer")


def graphiql_response() -> HTMLResponse:
    """The GraphiQL page as a response, with the pages' headers (CSP, no-cache)."""
    return HTMLResponse(graphiql_html(), headers=PAGE_HEADERS)


async def explore(request: Request) -> Response:
    """GET /explore: the explorer page. Its state is in the query string, read by the page."""
    return HTMLResponse(explore_html(), headers=PAGE_HEADERS)


@dataclass(frozen=True)
class Asset:
    """One packaged file, ready to send."""

    body: bytes
    gzipped: bytes | None
    media_type: str
    etag: str
    cache_control: str


def _walk(folder: Traversable, prefix: str) -> Iterator[tuple[str, Traversable]]:
    for entry in folder.iterdir():
        name = f"{prefix}{entry.name}"
        if entry.is_dir():
            yield from _walk(entry, f"{name}/")
        elif entry.is_file():
            yield name, entry


def _servable(path: str) -> bool:
    suffix = "." + path.rsplit(".", 1)[-1] if "." in path else ""
    parts = path.split("/")
    return suffix in _MEDIA_TYPES and all(_SEGMENT.match(part) for part in parts)


class StaticAssets:
    """The files under ``static/`` (not the HTML pages), served by name.

    The set of names is listed on first use, so a request can only ever name a packaged file
    (no path is built from user input). A file is read and compressed on its first request, in a
    worker thread, and kept.
    """

    def __init__(self, root: Traversable | None = None) -> None:
        self._root = root
        self._index: dict[str, Traversable] | None = None
        self._assets: dict[str, Asset] = {}
        self._lock = anyio.Lock()

    def _list(self) -> dict[str, Traversable]:
        root = self._root or static_root()
        if not root.is_dir():
            logger.error("the web assets are missing (graphsvc/api/static); run %s", BUILD_COMMAND)
            return {}
        return {name: entry for name, entry in _walk(root, "") if _servable(name)}

    @staticmethod
    def _load(path: str, entry: Traversable) -> Asset:
        body = entry.read_bytes()
        suffix = "." + path.rsplit(".", 1)[-1]
        gzipped = None
        if suffix in _COMPRESSIBLE and len(body) >= _GZIP_MIN_BYTES:
            packed = gzip.compress(body, compresslevel=9, mtime=0)
            gzipped = packed if len(packed) < len(body) else None
        return Asset(
            body=body,
            gzipped=gzipped,
            media_type=_MEDIA_TYPES[suffix],
            etag='"' + hashlib.sha256(body).hexdigest()[:32] + '"',
            cache_control=IMMUTABLE if _HASHED_NAME.search(path) else "no-cache",
        )

    async def get(self, path: str) -> Asset | None:
        """The asset named ``path`` (relative to ``static/``), or None when there is none."""
        asset = self._assets.get(path)
        if asset is not None:
            return asset
        async with self._lock:
            if self._index is None:
                self._index = await anyio.to_thread.run_sync(self._list)
            entry = self._index.get(path)
            if entry is None:
                return None
            asset = self._assets.get(path)
            if asset is None:
                asset = await anyio.to_thread.run_sync(self._load, path, entry)
                self._assets[path] = asset
            return asset

    async def serve(self, request: Request) -> Response:
        """GET/HEAD /static/{path}: the file, 304 when the client's copy is current, else 404."""
        asset = await self.get(str(request.path_params.get("path", "")))
        if asset is None:
            return Response(
                "no such file\n",
                status_code=404,
                media_type="text/plain",
                headers={"Cache-Control": "no-cache"},
            )
        headers = {
            "Cache-Control": asset.cache_control,
            "ETag": asset.etag,
            "X-Content-Type-Options": "nosniff",
            "Vary": "Accept-Encoding",
        }
        if asset.etag in _etags(request.headers.get("if-none-match", "")):
            return Response(status_code=304, headers=headers)
        body = asset.body
        if asset.gzipped is not None and _accepts_gzip(request.headers.get("accept-encoding", "")):
            body = asset.gzipped
            headers["Content-Encoding"] = "gzip"
        return Response(body, media_type=asset.media_type, headers=headers)


def _etags(header: str) -> set[str]:
    tags = {tag.strip().removeprefix("W/") for tag in header.split(",")}
    return {tag for tag in tags if tag}


def _accepts_gzip(header: str) -> bool:
    for item in header.split(","):
        coding, _, params = item.strip().partition(";")
        if coding.strip().lower() in ("gzip", "*"):
            return params.replace(" ", "").lower() not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


def web_routes() -> list[BaseRoute]:
    """``/explore`` and ``/static/{path}``; GraphiQL stays on ``/graphql`` (the GraphQL view)."""
    assets = StaticAssets()
    return [
        Route("/explore", explore, methods=["GET"]),
        Route("/static/{path:path}", assets.serve, methods=["GET"]),
    ]


__all__ = [
    "CONTENT_SECURITY_POLICY",
    "PAGE_HEADERS",
    "StaticAssets",
    "explore_html",
    "graphiql_html",
    "graphiql_response",
    "static_root",
    "web_routes",
]
