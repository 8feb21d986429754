"""Attack a real graphsvc server and its command line, and print what held.

A fault runner, not a unit test: it starts ``python -m graphsvc.api.serve`` on a free loopback
port with a fresh data directory (the embedded store), runs each attack, and prints figures.
Loopback only; every attack is bounded in time and in requests.

Attacks (``--only NAME`` runs one; each is printed as it ends):

- ``fanout``: one read key sends ``--clients`` (16) concurrent nested reads, each the issue's
  memory of a 10-memory clique (beside a sparse 40-memory ring) with ``links { targetMemory {
  links { targetMemory { links { targetMemory ... } } } } }`` aliased 14 times, again and again
  for ``--seconds``. Meanwhile another process asks ``/healthz`` every 20 ms and another key
  (its own namespace of ``--memories`` memories) asks bundles one after another. Figures: the
  attack's answers by code, ``/healthz`` worst and p99, and the other key's bundle p50 beside its
  p50 before the attack (idle).
- ``cli``: hostile files to every command that reads a file a user names: ``graphsvc convert
  locomo|esc|beam``, ``graphsvc ingest``, ``graphsvc import``, and the API keys file
  (``GRAPHSVC_API_KEYS_FILE``) under ``graphsvc serve`` and ``graphsvc mcp --print-config``:
  non-UTF-8 bytes, binary, JSON that is not the expected shape, scalars, NaN, numbers of
  thousands of digits, nesting a hundred thousand deep, a large file. Each must exit 2 with one
  line of message on stderr and no traceback.

Usage::

    python scripts/attack_faults.py                    # every attack, the issue's bounds
    python scripts/attack_faults.py --ci --seconds 5   # what CI runs (scripts/test.sh)
    python scripts/attack_faults.py --only fanout --seconds 20 --json

Exit status: 0 when every attack held, 1 when one did not (the figures say which), 2 when the
runner could not run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import httpx

from graphsvc_lab.bench_http import ServerProcess, stop_server
from graphsvc_lab.bench_http import start_server as start_serve

REPO = Path(__file__).resolve().parents[1]
START_SECONDS = 60.0
#: ``/healthz`` answer time the fanout attack may cause at worst (seconds).
HEALTHZ_LIMIT = 0.5
#: How many times the other key's bundle p50 may grow during the fanout attack.
BUNDLE_RATIO_LIMIT = 2.0
#: The bounds of ``--ci``, for a shared machine whose load the runner does not control: a
#: stalled server (seconds of /healthz, bundles 40 to 300 times slower) still fails them.
CI_HEALTHZ_LIMIT = 1.0
CI_BUNDLE_RATIO_LIMIT = 4.0
ALIASES = 14
CLIQUE = 10
RING = 40


# -- a server ---------------------------------------------------------------------------------


@dataclass
class Server:
    """``graphsvc serve`` on a free loopback port (the lab's :func:`start_server`)."""

    started: ServerProcess

    @property
    def base_url(self) -> str:
        return self.started.url.removesuffix("/graphql")

    @property
    def process(self) -> subprocess.Popen[bytes]:
        return self.started.process

    def stop(self) -> int:
        stop_server(self.started)
        return self.started.process.returncode


def start_server(root: Path, keys: dict[str, str], extra: dict[str, str] | None = None) -> Server:
    """A server on the embedded store in ``root/data``; ``keys`` is ``key -> namespace:role``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHSVC_")}
    env.update(
        {
            "GRAPHSVC_API_KEYS": ",".join(f"{k}={v}" for k, v in keys.items()),
            "GRAPHSVC_FSYNC": "false",
            "GRAPHSVC_EMBED": "off",
            **(extra or {}),
        }
    )
    return Server(start_serve(root, env))


def post(client: httpx.Client, key: str, document: str, **variables: Any) -> Any:
    response = client.post(
        "/graphql",
        json={"query": document, "variables": variables},
        headers={"Authorization": f"Bearer {key}"},
    )
    body = response.json()
    if body.get("errors"):
        raise RuntimeError(f"{document[:60]!r}: {body['errors'][0]['message']}")
    return body["data"]


# -- helper processes: a /healthz prober and a bundle asker ------------------------------------

PROBER = """
import json, sys, threading, time
import httpx
url, every = sys.argv[1], float(sys.argv[2])
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
times = []
with httpx.Client(base_url=url, timeout=30) as client:
    print("ready", flush=True)
    while not stop.is_set():
        began = time.perf_counter()
        try:
            ok = client.get("/healthz").status_code == 200
        except httpx.HTTPError:
            ok = False
        times.append(time.perf_counter() - began if ok else 1e9)
        stop.wait(every)
print(json.dumps(times), flush=True)
"""

ASKER = """
import json, sys, threading, time
import httpx
url, key, queries, every = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), float(sys.argv[4])
document = "query($q: String!) { bundle(query: $q) { usedTokens capsules { memoryId score } } }"
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
times, errors, i = [], 0, 0
with httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {key}"}) as c:
    print("ready", flush=True)
    while not stop.is_set():
        began = time.perf_counter()
        q = queries[i % len(queries)]
        r = c.post("/graphql", json={"query": document, "variables": {"q": q}})
        took = time.perf_counter() - began
        if r.status_code == 200 and not r.json().get("errors"):
            times.append(took)
        else:
            errors += 1
        i += 1
        stop.wait(every)
print(json.dumps({"times": times, "errors": errors}), flush=True)
"""


class Helper:
    """A helper process running ``code``; it prints ``ready``, runs until its stdin closes, then
    prints its figures as one JSON line."""

    def __init__(self, code: str, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError("a helper process did not start")

    def finish(self) -> Any:
        out, _ = self.process.communicate(input="", timeout=120)
        return json.loads(out.strip().splitlines()[-1])


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- fanout --------------------------------------------------------------------------------------


def fanout_document(memory_id: str, aliases: int = ALIASES) -> str:
    """The issue's read: ``aliases`` copies of three levels of links under one memory."""
    inner = "links { targetMemory { id links { kind targetMemory { id links { kind targetMemory"
    inner += " { id text } } } } } }"
    body = " ".join(f"a{i}: {inner}" for i in range(aliases))
    return f'{{ memory(id: "{memory_id}") {{ {body} }} }}'


def load_fanout(client: httpx.Client, writer: str) -> str:
    """The clique beside the ring; returns a clique member's id."""
    remember = "mutation($i: [MemoryInput!]!) { rememberMany(inputs: $i) { id } }"
    link = "mutation($l: [LinkInput!]!) { linkMany(inputs: $l) { kind } }"
    clique = [
        m["id"]
        for m in post(client, writer, remember, i=[{"text": f"clique {i}"} for i in range(CLIQUE)])[
            "rememberMany"
        ]
    ]
    ring = [
        m["id"]
        for m in post(client, writer, remember, i=[{"text": f"ring {i}"} for i in range(RING)])[
            "rememberMany"
        ]
    ]
    pairs = [(a, b) for a in clique for b in clique if a != b]
    pairs += [(ring[i], ring[(i + 1) % RING]) for i in range(RING)]
    post(
        client,
        writer,
        link,
        l=[{"source": s, "target": t, "kind": "RELATES_TO"} for s, t in pairs],
    )
    return str(clique[0])


def load_bundles(client: httpx.Client, key: str, memories: int) -> list[str]:
    """``memories`` memories of the synthetic corpus for the other key; its queries."""
    from graphsvc_lab.bench import make_corpus

    corpus = make_corpus(7, memories, 200, 30_000, links_per_memory=0.0)
    remember = "mutation($i: [MemoryInput!]!) { rememberMany(inputs: $i) { id } }"
    rows = [m.to_json_dict() for m in corpus.memories]
    for start in range(0, len(rows), 500):
        post(client, key, remember, i=rows[start : start + 500])
    return [q.text for q in corpus.queries]


async def _attack(
    base_url: str, key: str, document: str, clients: int, seconds: float
) -> tuple[Counter[str], list[float]]:
    codes: Counter[str] = Counter()
    times: list[float] = []
    stop = time.monotonic() + seconds
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def one(http: httpx.AsyncClient) -> None:
        while time.monotonic() < stop:
            began = time.perf_counter()
            response = await http.post("/graphql", json={"query": document}, headers=headers)
            times.append(time.perf_counter() - began)
            body = response.json()
            errors = body.get("errors") or []
            code = errors[0]["extensions"]["code"] if errors else "OK"
            codes[f"{response.status_code} {code}"] += 1
            if response.status_code == 429:
                await asyncio.sleep(float(response.headers.get("retry-after", "1")))

    async with httpx.AsyncClient(base_url=base_url, timeout=120, limits=limits) as http:
        await asyncio.gather(*(one(http) for _ in range(clients)))
    return codes, times


def fanout(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The concurrent nested reads of one read key (see the module)."""
    writer, reader, other = (secrets.token_urlsafe(24) for _ in range(3))
    keys = {writer: "fanout:write", reader: "fanout:read", other: "others:write"}
    # Every client of this runner is 127.0.0.1: the per-client limit would count them as one.
    extra = {"GRAPHSVC_RATE_LIMIT_PER_CLIENT": "0"}
    if args.no_key_rate_limit:
        extra["GRAPHSVC_RATE_LIMIT_PER_KEY"] = "0"
    server = start_server(root, keys, extra)
    try:
        with httpx.Client(base_url=server.base_url, timeout=120) as client:
            member = load_fanout(client, writer)
            queries = load_bundles(client, other, args.memories)
        document = fanout_document(member)
        asker = Helper(ASKER, server.base_url, other, json.dumps(queries), "0.05")
        time.sleep(args.idle)
        idle = asker.finish()
        prober = Helper(PROBER, server.base_url, "0.02")
        asker = Helper(ASKER, server.base_url, other, json.dumps(queries), "0.05")
        began = time.monotonic()
        codes, times = asyncio.run(
            _attack(server.base_url, reader, document, args.clients, args.seconds)
        )
        attack_s = time.monotonic() - began
        probes = prober.finish()
        during = asker.finish()
        healthz = (
            server.process.poll() is None and httpx.get(f"{server.base_url}/healthz").is_success
        )
    finally:
        status = server.stop()
    idle_p50 = statistics.median(idle["times"]) if idle["times"] else float("nan")
    during_p50 = statistics.median(during["times"]) if during["times"] else float("nan")
    ratio = during_p50 / idle_p50 if idle_p50 else float("inf")
    worst = max(probes, default=float("inf"))
    figures = {
        "clients": args.clients,
        "aliases": ALIASES,
        "attack_s": round(attack_s, 1),
        "attack_requests": sum(codes.values()),
        "attack_answers": dict(sorted(codes.items())),
        "attack_p50_s": round(percentile(times, 0.5), 3),
        "attack_worst_s": round(max(times, default=0.0), 3),
        "healthz_probes": len(probes),
        "healthz_p50_s": round(percentile(probes, 0.5), 4),
        "healthz_p99_s": round(percentile(probes, 0.99), 4),
        "healthz_worst_s": round(worst, 4),
        "bundle_idle_p50_ms": round(idle_p50 * 1000, 2),
        "bundle_idle_requests": len(idle["times"]),
        "bundle_during_p50_ms": round(during_p50 * 1000, 2),
        "bundle_during_requests": len(during["times"]),
        "bundle_during_errors": during["errors"],
        "bundle_ratio": round(ratio, 2),
        "server_exit": status,
    }
    failures = []
    healthz_limit, ratio_limit = HEALTHZ_LIMIT, BUNDLE_RATIO_LIMIT
    if args.ci:
        healthz_limit, ratio_limit = CI_HEALTHZ_LIMIT, CI_BUNDLE_RATIO_LIMIT
    figures["bounds"] = f"/healthz <= {healthz_limit:g} s, bundle p50 <= {ratio_limit:g}x idle"
    if worst > healthz_limit:
        failures.append(f"/healthz took {worst:.3f} s (limit {healthz_limit:g} s)")
    if not ratio <= ratio_limit:
        failures.append(f"the other key's bundle p50 grew {ratio:.2f}x (limit {ratio_limit:g}x)")
    if during["errors"] or not during["times"]:
        failures.append(f"the other key's bundles failed {during['errors']} times")
    if any(c.startswith("5") for c in codes):
        failures.append(f"5xx answers to the attack: {dict(codes)}")
    if not healthz or status != 0:
        failures.append(f"the server did not survive (exit {status})")
    figures["failures"] = failures
    return figures


# -- cli: a fuzz of the files the command line reads --------------------------------------------

#: Runs in a fresh interpreter: every (command, file) through graphsvc's own command group, in
#: process (a process per case would cost a second each); prints one JSON line of outcomes.
CLI_DRIVER = """
import json, os, sys, tempfile, traceback
from pathlib import Path
from click.testing import CliRunner
from graphsvc.cli import cli

cases = json.loads(sys.argv[1])
runner = CliRunner()
outcomes = []
for path in cases:
    scratch = Path(tempfile.mkdtemp(prefix="attack-cli-"))
    plans = [
        (["convert", "locomo", path], {}),
        (["convert", "esc", path], {}),
        (["convert", "beam", path], {}),
        (["ingest", path, "--data-dir", str(scratch / "d")], {}),
    ]
    for suffix in (".json", ".toml"):
        keys = scratch / f"keys{suffix}"
        keys.write_bytes(Path(path).read_bytes())
        plans.append(
            (["mcp", "--print-config", "--data-dir", str(scratch / "m"), "--create"],
             {"GRAPHSVC_API_KEYS_FILE": str(keys), "GRAPHSVC_API_KEYS": None,
              "GRAPHSVC_MCP_API_KEY": None})
        )
    for args, env in plans:
        result = runner.invoke(cli, args, env={"GRAPHSVC_NEO4J_URI": None, "GRAPHSVC_EMBED": "off",
                                                "GRAPHSVC_FSYNC": "false", **env})
        crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        outcomes.append({
            "file": os.path.basename(path),
            "command": " ".join(args[:2]) if args[0] in ("convert", "mcp") else args[0],
            "exit": result.exit_code, "lines": len(lines), "crashed": crashed,
            "traceback": crashed and "".join(traceback.format_exception(result.exception))[-600:],
            "message": lines[-1][:200] if lines else "",
        })
print(json.dumps(outcomes))
"""

#: Seeds of the fuzz: small valid files of each kind the commands read.
CLI_SEEDS: dict[str, bytes] = {
    "locomo": json.dumps(
        [
            {
                "sample_id": "s1",
                "conversation": {
                    "speaker_a": "Ann",
                    "speaker_b": "Bo",
                    "session_1_date_time": "1:56 pm on 8 May, 2023",
                    "session_1": [
                        {"speaker": "Ann", "dia_id": "D1:1", "text": "The kiln cracked."},
                        {"speaker": "Bo", "dia_id": "D1:2", "text": "Every pot was lost."},
                    ],
                },
            }
        ]
    ).encode(),
    "esc": (
        json.dumps(
            {
                "doc": "d1",
                "topic": "1",
                "dct": "2013-05-01",
                "events": {
                    "1": {"type": "OCCURRENCE", "text": "quake", "sentence": "A quake hit."},
                    "2": {"type": "OCCURRENCE", "text": "fell", "sentence": "Homes fell."},
                },
                "causal_links": [{"cause": "1", "effect": "2", "relType": "PRECONDITION"}],
                "tlinks": [],
            }
        )
        + "\n"
    ).encode(),
    "beam": json.dumps(
        [
            {
                "batch_number": 1,
                "time_anchor": "March-15-2024",
                "turns": [[{"role": "user", "id": 1, "content": "Plan my week."}]],
            }
        ]
    ).encode(),
    "ingest": (json.dumps({"type": "memory", "text": "The kiln cracked"}) + "\n").encode(),
    "keys": json.dumps({"k3y-0123456789abcdef": {"namespace": "team", "role": "read"}}).encode(),
}


def _random_json(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.randrange(9 if depth < 4 else 5)
    if choice == 0:
        return None
    if choice == 1:
        return rng.choice([True, False])
    if choice == 2:
        return rng.randint(-(10**6), 10**6)
    if choice == 3:
        return rng.random() * 1e6
    if choice == 4:
        return "".join(rng.choice('ab é☃\n"{}[]') for _ in range(rng.randrange(8)))
    if choice in (5, 6):
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {
        rng.choice(["conversation", "doc", "events", "turns", "text", "namespace", "x"]): (
            _random_json(rng, depth + 1)
        )
        for _ in range(rng.randrange(4))
    }


def hostile_file(rng: random.Random) -> bytes:
    """One hostile file: a seed mutated, or something else entirely."""
    seed = rng.choice(sorted(CLI_SEEDS))
    data = CLI_SEEDS[seed]
    how = rng.randrange(11)
    if how == 0:  # bytes flipped
        raw = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        return bytes(raw)
    if how == 1:  # cut anywhere
        return data[: rng.randrange(len(data))]
    if how == 2:  # another encoding
        return (
            data.decode()
            .replace("kiln", "cafe\u0301 k\u00efln")
            .encode(rng.choice(["utf-16", "utf-32", "latin-1", "cp1252"]), errors="replace")
        )
    if how == 3:  # deep nesting
        depth = rng.choice([200, 5_000, 100_000])
        return (
            b"[" * depth + data + b"]" * depth
            if rng.random() < 0.5
            else (b'{"a":' * depth + b"1" + b"}" * depth)
        )
    if how == 4:  # numbers JSON has no room for
        token = rng.choice([b"NaN", b"Infinity", b"-Infinity", b"1e999", b"9" * 20_000])
        return data.replace(b'"', token + b', "', 1) if rng.random() < 0.3 else b"[" + token + b"]"
    if how == 5:  # an unpaired surrogate in a string
        return data.replace(b"kiln", b"\\ud800kiln").replace(b"Plan", b"\\udfffPlan")
    if how == 6:  # random JSON of the right words
        return json.dumps(_random_json(rng)).encode()
    if how == 7:  # binary
        return rng.randbytes(rng.randrange(1, 4096))
    if how == 8:  # another kind's seed, whole
        return CLI_SEEDS[rng.choice(sorted(CLI_SEEDS))]
    if how == 9:  # a field of the wrong type
        return data.replace(b'"', b"", 1).replace(b": [", b': 7, "q": [', 1)
    return b""  # empty


def cli(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """A fuzz of the command line's file inputs (see the module)."""
    rng = random.Random(args.seed)
    files = []
    for number in range(args.cli_files):
        path = root / f"hostile-{number:03}.json"
        path.write_bytes(hostile_file(rng))
        files.append(str(path))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHSVC_")}
    done = subprocess.run(
        [sys.executable, "-c", CLI_DRIVER, json.dumps(files)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the CLI driver failed: {done.stderr[-2000:]}")
    outcomes = json.loads(done.stdout.strip().splitlines()[-1])
    exits = Counter(o["exit"] for o in outcomes)
    bad = [
        o
        for o in outcomes
        if o["crashed"] or o["exit"] not in (0, 2) or (o["exit"] == 2 and o["lines"] != 1)
    ]
    failures = [
        f"{o['command']} {o['file']}: exit {o['exit']}, {o['lines']} lines"
        + (f", traceback: {o['traceback']}" if o["crashed"] else f": {o['message']}")
        for o in bad[:10]
    ]
    return {
        "files": len(files),
        "runs": len(outcomes),
        "exits": dict(sorted(exits.items())),
        "refused_in_one_line": sum(o["exit"] == 2 and o["lines"] == 1 for o in outcomes),
        "tracebacks": sum(o["crashed"] for o in outcomes),
        "other_failures": len(bad) - sum(o["crashed"] for o in outcomes),
        "example_refusal": next((o["message"] for o in outcomes if o["exit"] == 2), ""),
        "failures": failures,
    }


ATTACKS: dict[str, Callable[[Path, argparse.Namespace], dict[str, Any]]] = {
    "fanout": fanout,
    "cli": cli,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--only", choices=sorted(ATTACKS), action="append", help="attacks to run")
    parser.add_argument("--clients", type=int, default=16, help="concurrent attackers (16)")
    parser.add_argument("--seconds", type=float, default=8.0, help="fanout attack length (8)")
    parser.add_argument("--idle", type=float, default=3.0, help="idle bundle timing, s (3)")
    parser.add_argument("--memories", type=int, default=2000, help="the other key's memories")
    parser.add_argument("--cli-files", type=int, default=40, help="cli: hostile files (40)")
    parser.add_argument("--seed", type=int, default=38, help="cli: the fuzz's seed (38)")
    parser.add_argument(
        "--no-key-rate-limit",
        action="store_true",
        help="fanout: lift the per-key rate limit (GRAPHSVC_RATE_LIMIT_PER_KEY=0), so that only "
        "the cost estimate and the budget in flight bound the attacker",
    )
    parser.add_argument(
        "--ci",
        action="store_true",
        help=f"fanout: the loose bounds of a shared CI machine (/healthz <= {CI_HEALTHZ_LIMIT:g} "
        f"s, bundle p50 <= {CI_BUNDLE_RATIO_LIMIT:g}x idle) instead of the issue's "
        f"({HEALTHZ_LIMIT:g} s, {BUNDLE_RATIO_LIMIT:g}x)",
    )
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args(argv)
    chosen = args.only or list(ATTACKS)
    failed = False
    results = {}
    for name in chosen:
        with tempfile.TemporaryDirectory(prefix=f"graphsvc-attack-{name}-") as tmp:
            try:
                figures = ATTACKS[name](Path(tmp), args)
            except (RuntimeError, click.ClickException, httpx.HTTPError, OSError) as exc:
                print(f"attack_faults: {name}: could not run: {exc}", file=sys.stderr)
                return 2
        results[name] = figures
        print(f"attack_faults: {name}")
        for key, value in figures.items():
            print(f"  {key:28} {value}")
        failed = failed or bool(figures["failures"])
    if args.json:
        print(json.dumps(results))
    print("attack_faults: FAILED" if failed else "attack_faults: OK (every attack held)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
