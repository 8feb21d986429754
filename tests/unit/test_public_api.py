"""The public names of graphsvc and of its client, pinned; and what ``import graphsvc.client``
costs: httpx and pydantic, never the server's stack (strawberry, the stores, numpy, PyStemmer)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# httpx and pydantic, and what they depend on.
ALLOWED = frozenset(
    {
        "httpx",
        "pydantic",
        "httpcore",
        "h11",
        "anyio",
        "sniffio",
        "certifi",
        "idna",
        "pydantic_core",
        "annotated_types",
        "typing_extensions",
        "typing_inspection",
    }
)
# httpx's optional extras (cli, brotli, zstd, http2, socks): ``import httpx`` loads them whenever
# they are installed. They are httpx's cost, not the client's, so they are allowed only when
# ``import httpx`` on its own loads them in this environment.
HTTPX_OPTIONAL = frozenset(
    {"click", "pygments", "rich", "brotli", "brotlicffi", "zstandard", "h2", "socksio"}
)

# Top-level module names in sys.modules: at start-up (site, .pth hooks), after httpx and
# pydantic alone, and after the client.
PROBE = """
import json, sys
def top_level():
    return sorted({name.partition(".")[0] for name in sys.modules})
startup = top_level()
import httpx, pydantic
libraries = top_level()
import graphsvc.client
print(json.dumps({"startup": startup, "libraries": libraries, "client": top_level()}))
"""


def test_importing_the_client_loads_only_httpx_and_pydantic() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    ignored = set(sys.stdlib_module_names) | {"graphsvc"} | set(seen["startup"])
    # sysconfig's platform data (_sysconfigdata_<abi>_<platform>) is stdlib under a per-build name.
    third_party = {n for n in set(seen["client"]) - ignored if not n.startswith("_sysconfigdata_")}
    from_httpx = HTTPX_OPTIONAL & set(seen["libraries"])
    offenders = sorted(third_party - ALLOWED - from_httpx)
    assert not offenders, (
        f"import graphsvc.client loads {offenders}; the client may need only httpx and pydantic. "
        "Find the chain with: python -X importtime -c 'import graphsvc.client', and keep that "
        "import out of graphsvc.client, graphsvc.model, graphsvc.prompt and graphsvc.errors"
    )
    # The probe does see third-party modules (the filters do not hide everything):
    assert {"httpx", "pydantic"} <= third_party


# httpx's own package imports its command line (httpx._main: click, pygments, rich) and keeps what
# it loaded even when that fails (encode/httpx#3547 would move it to ``python -m httpx``). With that
# import refused, whatever loads click on ``import graphsvc.client`` is graphsvc's own chain.
WITHOUT_HTTPX_CLI = """
import json, sys
sys.modules["httpx._main"] = None
import graphsvc.client
print(json.dumps(sorted(sys.modules)))
"""


def test_importing_the_client_does_not_load_click_or_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_HTTPX_CLI],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert "click" not in loaded, (
        "import graphsvc.client loads click through graphsvc; find the chain with: python -X "
        "importtime -c 'import graphsvc.client'"
    )
    assert not sorted(n for n in loaded if n == "graphsvc.cli" or n.startswith("graphsvc.cli."))
    assert "httpx" in loaded  # the probe imported the client for real


GRAPHSVC_ALL = [
    "BadInputError",
    "ConflictError",
    "ContextBundle",
    "ContextCapsule",
    "ContextEvent",
    "ForgetReceipt",
    "GraphsvcError",
    "LimitExceededError",
    "Link",
    "LinkInput",
    "LinkKind",
    "Memory",
    "MemoryInput",
    "MemoryService",
    "NotFoundError",
    "OrderReason",
    "ReconstructedBelief",
    "Settings",
    "StoreUnavailableError",
    "__version__",
]
CLIENT_ALL = [
    "AsyncGraphsvcClient",
    "DEFAULT_URL",
    "ERRORS",
    "ForbiddenError",
    "GraphsvcClient",
    "UnauthenticatedError",
]


@pytest.mark.parametrize(
    ("module", "names"), [("graphsvc", GRAPHSVC_ALL), ("graphsvc.client", CLIENT_ALL)]
)
def test_public_names_are_pinned_and_resolve(module: str, names: list[str]) -> None:
    imported = import_module(module)
    assert sorted(imported.__all__) == names
    missing = [name for name in names if not hasattr(imported, name)]
    assert not missing, f"{module}.__all__ names {missing}, which it does not define"


def test_client_errors_are_graphsvc_errors() -> None:
    import graphsvc.errors
    from graphsvc.client import ERRORS, ForbiddenError, UnauthenticatedError

    assert ForbiddenError is graphsvc.errors.ForbiddenError
    assert UnauthenticatedError is graphsvc.errors.UnauthenticatedError
    assert {code: error.code for code, error in ERRORS.items()} == {code: code for code in ERRORS}
