#!/usr/bin/env bash
# Start/stop a real Neo4j 5.26 Community server for graphsvc development and CI, without Docker.
# The server is tools/neo4j (a small launcher built with Maven from Maven Central artifacts).
#
#   scripts/neo4j.sh start|stop|status|restart
#   scripts/neo4j.sh import DIR [--replace]
#       Offline bulk import (Neo4j's batch importer, what `neo4j-admin database import full` runs) of
#       the files `graphsvc bulk-export` wrote to DIR. It REPLACES the whole database `neo4j` of the
#       home: it is for the FIRST load of a fresh server. Refused while the server of that home is
#       running, and refused when the database already holds nodes unless --replace is given.
#
# Environment (all optional):
#   GRAPHSVC_NEO4J_HOME       home/data directory           (default: <repo>/.neo4j)
#   GRAPHSVC_NEO4J_HOST       listen host, loopback only    (default: 127.0.0.1)
#   GRAPHSVC_NEO4J_BOLT_PORT  Bolt port                     (default: 7687)
#   GRAPHSVC_NEO4J_HTTP_PORT  HTTP/Browser port             (default: 7474)
#   GRAPHSVC_NEO4J_PAGECACHE  page cache size               (default: 256m)
#   GRAPHSVC_NEO4J_HEAP       JVM heap, -Xms and -Xmx       (default: 1g)
#   GRAPHSVC_NEO4J_JAVA_OPTS  extra JVM options             (default: none)
#   GRAPHSVC_NEO4J_START_TIMEOUT / GRAPHSVC_NEO4J_STOP_TIMEOUT  seconds (default: 180 / 60)
#   JAVA_HOME                 Java 17 to use (else `java` on PATH, else /usr/lib/jvm/*17*)
# Exit codes: 0 ok (status: running), 1 error, 3 status: stopped (import: refused).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOL_DIR="$REPO_ROOT/tools/neo4j"
TARGET_DIR="$TOOL_DIR/target"
JAR="$TARGET_DIR/graphsvc-neo4j.jar"
LIB_DIR="$TARGET_DIR/lib"
BUILD_STAMP="$TARGET_DIR/.build-stamp"

NEO4J_HOME_DIR="${GRAPHSVC_NEO4J_HOME:-$REPO_ROOT/.neo4j}"
HOST="${GRAPHSVC_NEO4J_HOST:-127.0.0.1}"
BOLT_PORT="${GRAPHSVC_NEO4J_BOLT_PORT:-7687}"
HTTP_PORT="${GRAPHSVC_NEO4J_HTTP_PORT:-7474}"
PAGECACHE="${GRAPHSVC_NEO4J_PAGECACHE:-256m}"
HEAP="${GRAPHSVC_NEO4J_HEAP:-1g}"
START_TIMEOUT="${GRAPHSVC_NEO4J_START_TIMEOUT:-180}"
STOP_TIMEOUT="${GRAPHSVC_NEO4J_STOP_TIMEOUT:-60}"

PID_FILE="$NEO4J_HOME_DIR/neo4j.pid"
LOG_FILE="$NEO4J_HOME_DIR/launcher.log"
READY_MARKER="graphsvc-neo4j: ready"

say() { echo "neo4j.sh: $*"; }
die() { echo "neo4j.sh: error: $*" >&2; exit 1; }

# --- process helpers -------------------------------------------------------

# Prints the pid if the pid file names a live launcher process (not a recycled pid).
running_pid() {
    [[ -f "$PID_FILE" ]] || return 1
    local pid
    pid="$(tr -dc '0-9' < "$PID_FILE")"
    [[ -n "$pid" ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    if [[ -r "/proc/$pid/cmdline" ]]; then
        tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q 'graphsvc-neo4j.jar' || return 1
    fi
    echo "$pid"
}

port_open() {
    timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null
}

ready_line() {
    [[ -f "$LOG_FILE" ]] && grep -m1 "$READY_MARKER" "$LOG_FILE"
}

print_uri() {
    echo "export GRAPHSVC_NEO4J_URI=bolt://$HOST:$BOLT_PORT"
}

# --- java ------------------------------------------------------------------

java_major() {
    "$1" -XshowSettings:properties -version 2>&1 \
        | awk -F'= ' '/java.specification.version/ {print $2; exit}'
}

# Neo4j 5.26 needs Java 17: JAVA_HOME if set, else java on PATH, else a JDK 17 under /usr/lib/jvm.
find_java() {
    local candidates=() c
    [[ -n "${JAVA_HOME:-}" ]] && candidates+=("$JAVA_HOME/bin/java")
    c="$(command -v java || true)"
    [[ -n "$c" ]] && candidates+=("$c")
    for c in /usr/lib/jvm/*17*/bin/java; do
        [[ -x "$c" ]] && candidates+=("$c")
    done
    for c in "${candidates[@]}"; do
        [[ -x "$c" ]] || continue
        if [[ "$(java_major "$c")" == "17" ]]; then
            echo "$c"
            return 0
        fi
        echo "neo4j.sh: skipping $c (Java $(java_major "$c"), Neo4j 5.26 here needs Java 17)" >&2
    done
    return 1
}

# --- build -----------------------------------------------------------------

build_is_fresh() {
    [[ -f "$BUILD_STAMP" && -f "$JAR" && -d "$LIB_DIR" ]] || return 1
    [[ -z "$(find "$TOOL_DIR/pom.xml" "$TOOL_DIR/src" -newer "$BUILD_STAMP" -print -quit)" ]]
}

build() {
    local java_home="$1"
    if build_is_fresh; then
        return 0
    fi
    command -v mvn >/dev/null || die "mvn not found (Maven is needed to build tools/neo4j)"
    say "building tools/neo4j (first build downloads Neo4j from Maven Central)"
    local build_log="$TARGET_DIR/build.log" t0=$SECONDS
    rm -rf "$LIB_DIR" "$BUILD_STAMP"
    mkdir -p "$TARGET_DIR"
    # dependency:copy-dependencies (runtime scope, into target/lib) is bound to `package` in the pom.
    if ! JAVA_HOME="$java_home" MAVEN_OPTS="${MAVEN_OPTS:-} -Dstyle.color=never" \
            mvn -q -B -f "$TOOL_DIR/pom.xml" package > "$build_log" 2>&1; then
        tail -n 40 "$build_log" >&2
        die "build failed (full log: $build_log)"
    fi
    touch "$BUILD_STAMP"
    say "built in $((SECONDS - t0))s"
}

# --- commands --------------------------------------------------------------

check_host() {
    # Auth is disabled, so only loopback addresses are allowed (the launcher enforces this too).
    case "$HOST" in
        127.*|localhost|::1) ;;
        *) die "GRAPHSVC_NEO4J_HOST must be a loopback address (auth is disabled), got: $HOST" ;;
    esac
}

cmd_start() {
    check_host
    mkdir -p "$NEO4J_HOME_DIR"
    # Serialize concurrent start/stop calls on the same home.
    exec 9> "$NEO4J_HOME_DIR/.lock"
    flock -w "$((START_TIMEOUT + 60))" 9 || die "could not lock $NEO4J_HOME_DIR/.lock"

    local pid
    if pid="$(running_pid)"; then
        say "already running (pid $pid)"
        print_uri
        return 0
    fi
    rm -f "$PID_FILE"

    local java java_home
    java="$(find_java)" || die "no Java 17 found (set JAVA_HOME to a JDK 17)"
    java_home="$(dirname "$(dirname "$(readlink -f "$java")")")"
    say "java: $java ($("$java" -version 2>&1 | head -n1))"

    build "$java_home"

    if port_open "$HOST" "$BOLT_PORT"; then
        die "port $HOST:$BOLT_PORT is already in use by another process"
    fi
    if port_open "$HOST" "$HTTP_PORT"; then
        die "port $HOST:$HTTP_PORT is already in use by another process"
    fi

    [[ -f "$LOG_FILE" ]] && mv -f "$LOG_FILE" "$LOG_FILE.prev"
    local opts=(
        "-Xms$HEAP" "-Xmx$HEAP"
        -XX:+UseG1GC -XX:-OmitStackTraceInFastThrow -XX:+ExitOnOutOfMemoryError
        --add-opens=java.base/java.nio=ALL-UNNAMED
        --add-opens=java.base/java.io=ALL-UNNAMED
        --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
        --add-opens=java.base/java.lang=ALL-UNNAMED
        --enable-native-access=ALL-UNNAMED
        -Dio.netty.tryReflectionSetAccessible=true
        -Dlog4j2.disable.jmx=true
    )
    # shellcheck disable=SC2206  # word splitting of user-supplied extra options is intended
    [[ -n "${GRAPHSVC_NEO4J_JAVA_OPTS:-}" ]] && opts+=(${GRAPHSVC_NEO4J_JAVA_OPTS})

    say "starting Neo4j (home $NEO4J_HOME_DIR, heap $HEAP, page cache $PAGECACHE)"
    local t0=$SECONDS
    nohup "$java" "${opts[@]}" -jar "$JAR" \
        --home "$NEO4J_HOME_DIR" --host "$HOST" \
        --bolt-port "$BOLT_PORT" --http-port "$HTTP_PORT" --pagecache "$PAGECACHE" \
        > "$LOG_FILE" 2>&1 < /dev/null 9>&- &
    pid=$!
    echo "$pid" > "$PID_FILE"

    while (( SECONDS - t0 < START_TIMEOUT )); do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "----- tail of $LOG_FILE -----" >&2
            tail -n 40 "$LOG_FILE" >&2 || true
            rm -f "$PID_FILE"
            die "Neo4j exited during startup (Neo4j logs: $NEO4J_HOME_DIR/logs/debug.log)"
        fi
        if ready_line >/dev/null && port_open "$HOST" "$BOLT_PORT"; then
            say "started in $((SECONDS - t0))s (pid $pid): bolt://$HOST:$BOLT_PORT http://$HOST:$HTTP_PORT/browser/"
            say "logs: $LOG_FILE, $NEO4J_HOME_DIR/logs/debug.log"
            print_uri
            return 0
        fi
        sleep 1
    done

    echo "----- tail of $LOG_FILE -----" >&2
    tail -n 40 "$LOG_FILE" >&2 || true
    echo "----- tail of $NEO4J_HOME_DIR/logs/debug.log -----" >&2
    tail -n 20 "$NEO4J_HOME_DIR/logs/debug.log" 2>/dev/null >&2 || true
    say "not ready after ${START_TIMEOUT}s, stopping it" >&2
    stop_pid "$pid"
    die "Neo4j did not become ready within ${START_TIMEOUT}s"
}

stop_pid() {
    local pid="$1" t0=$SECONDS
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do
        if (( SECONDS - t0 >= STOP_TIMEOUT )); then
            echo "neo4j.sh: warning: pid $pid still alive after ${STOP_TIMEOUT}s, sending SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null || true
            sleep 1
            break
        fi
        sleep 0.5
    done
    rm -f "$PID_FILE"
}

cmd_stop() {
    local pid
    if ! pid="$(running_pid)"; then
        rm -f "$PID_FILE"
        say "not running"
        return 0
    fi
    say "stopping pid $pid"
    local t0=$SECONDS
    stop_pid "$pid"
    say "stopped in $((SECONDS - t0))s"
}

cmd_status() {
    local pid line
    if pid="$(running_pid)"; then
        line="$(ready_line || true)"
        if [[ -n "$line" ]]; then
            say "running (pid $pid) ${line#"$READY_MARKER" }"
        else
            say "starting (pid $pid), not ready yet"
        fi
        print_uri
        return 0
    fi
    say "stopped (home $NEO4J_HOME_DIR)"
    return 3
}

cmd_import() {
    local dir="${1:-}" replace=false
    [[ -n "$dir" ]] || { echo "usage: $0 import DIR [--replace]" >&2; exit 2; }
    case "${2:-}" in
        "") ;;
        --replace) replace=true ;;
        *) echo "usage: $0 import DIR [--replace]" >&2; exit 2 ;;
    esac
    [[ -f "$dir/import.args" ]] || die "$dir/import.args not found: write the files with \`graphsvc bulk-export FILE $dir\` first"
    mkdir -p "$NEO4J_HOME_DIR"
    # The same lock as start/stop: no server of this home starts while the import runs.
    exec 9> "$NEO4J_HOME_DIR/.lock"
    flock -w "$((START_TIMEOUT + 60))" 9 || die "could not lock $NEO4J_HOME_DIR/.lock"
    local pid
    if pid="$(running_pid)"; then
        echo "neo4j.sh: error: refused: the server of $NEO4J_HOME_DIR is running (pid $pid);" \
            "the bulk import writes the store offline: stop it first (scripts/neo4j.sh stop)" >&2
        exit 3
    fi

    local java java_home
    java="$(find_java)" || die "no Java 17 found (set JAVA_HOME to a JDK 17)"
    java_home="$(dirname "$(dirname "$(readlink -f "$java")")")"
    build "$java_home"

    say "bulk import of $dir into $NEO4J_HOME_DIR (REPLACES the database 'neo4j')"
    local t0=$SECONDS status=0
    "$java" "-Xms$HEAP" "-Xmx$HEAP" -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError \
        --add-opens=java.base/java.nio=ALL-UNNAMED \
        --add-opens=java.base/java.io=ALL-UNNAMED \
        --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
        --add-opens=java.base/java.lang=ALL-UNNAMED \
        --enable-native-access=ALL-UNNAMED \
        -Dlog4j2.disable.jmx=true \
        -jar "$JAR" import --home "$NEO4J_HOME_DIR" --from "$dir" --replace "$replace" 9>&- \
        || status=$?
    case "$status" in
        0) say "imported in $((SECONDS - t0))s; start the server: scripts/neo4j.sh start" ;;
        3) exit 3 ;;
        *) die "the bulk import failed (exit $status)" ;;
    esac
}

case "${1:-}" in
    start)   cmd_start ;;
    stop)    cmd_stop ;;
    status)  cmd_status ;;
    restart) cmd_stop; cmd_start ;;
    import)  shift; cmd_import "$@" ;;
    *)       echo "usage: $0 start|stop|status|restart|import DIR [--replace]" >&2; exit 2 ;;
esac
