#!/usr/bin/env bash
# Fuzz a running `solvi serve` from its own OpenAPI description with schemathesis.
#
# Serves the gallery's claims System (examples/claims.py) on a free loopback port,
# runs schemathesis against /openapi.json with a bounded number of examples per
# operation and a time limit, and exits non-zero on any failure. Everything stays
# on loopback: proxy settings are dropped, and nothing else is contacted. The
# server is stopped however the run ends.
#
# Usage: bash .ci/schemathesis.sh
#   SCHEMATHESIS_EXAMPLES  examples per operation (50)
#   SCHEMATHESIS_SEED      the seed of a reported run, to replay it
#   SOLVI_SERVE_TARGET     what to serve (examples/claims.py:system)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
py="$root/.venv/bin/python"
examples="${SCHEMATHESIS_EXAMPLES:-50}"
target="${SOLVI_SERVE_TARGET:-examples/claims.py:system}"

unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY
export NO_PROXY="127.0.0.1,localhost" no_proxy="127.0.0.1,localhost"

work="$(mktemp -d)"
server_pid=""
stop_server() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$server_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap stop_server EXIT

port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"

"$py" -m solvi.serve "$target" --host 127.0.0.1 --port "$port" \
    --log-level warning >"$work/server.log" 2>&1 &
server_pid=$!

# Up within 20 s, or the run fails with the server's own output.
if ! "$py" - "$port" "$server_pid" <<'EOF'
import contextlib, http.client, os, sys, time

port, pid = int(sys.argv[1]), int(sys.argv[2])
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit("solvi serve exited before it answered")
    with contextlib.suppress(OSError):  # not listening yet: try again
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        connection.request("GET", "/healthz")
        if connection.getresponse().status == 200:
            sys.exit(0)
    time.sleep(0.1)
sys.exit("solvi serve did not answer /healthz within 20 s")
EOF
then
    cat "$work/server.log" >&2
    exit 1
fi

seed=()
if [[ -n "${SCHEMATHESIS_SEED:-}" ]]; then
    seed=(--seed "$SCHEMATHESIS_SEED")
fi

status=0
(
    cd "$work"  # schemathesis keeps its state in the working directory: a throwaway one
    timeout 110 "$root/.venv/bin/schemathesis" run "$base/openapi.json" \
        --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
        --max-examples "$examples" \
        --workers 1 \
        --request-timeout 10 \
        --generation-database none \
        --no-color \
        "${seed[@]}"
) || status=$?
if [[ $status -ne 0 ]]; then
    if [[ $status -eq 124 ]]; then
        echo "schemathesis: did not finish within 110 s" >&2
    fi
    echo "== solvi serve's log" >&2
    tail -n 50 "$work/server.log" >&2
fi
exit "$status"
