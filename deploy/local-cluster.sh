#!/usr/bin/env bash
# A three-node Troupe cluster on loopback, from the same jar:
#   node 1: gateway only   HTTP :8000, cluster :25520 (seed), management :7626
#   node 2: worker+trainer            cluster :25521,        management :7627
#   node 3: worker                    cluster :25522,        management :7628
# Model workers run on nodes 2 and 3 (the demo model, 2 replicas, unless flags say otherwise);
# the gateway reaches them through Cluster Sharding. Stop node 2 or 3 and its replicas come back
# on the other.
#
#   deploy/local-cluster.sh [--base-port N] start [extra flags for every node, e.g. --model m=/path --replicas m=2]
#   deploy/local-cluster.sh [--base-port N] stop
#   deploy/local-cluster.sh [--base-port N] status
#
# --base-port N (or TROUPE_BASE_PORT=N) moves every port, so that several clusters (or a cluster
# beside ./troupe serve) can run at once: HTTP N, cluster N+1..N+3, management N+11..N+13; its
# logs and data are then under data/local-cluster-N/. Without it the ports above are used.
# Logs and data: data/local-cluster/node{1,2,3}/ ; API key: TROUPE_API_KEYS or the generated one
# in data/local-cluster/node1/api-key.
# TROUPE_NODE2_FLAGS / TROUPE_NODE3_FLAGS add flags to one worker node only, e.g. roles for
# disaggregated prefill/decode: TROUPE_NODE2_FLAGS="--kv-role demo=prefill"
# TROUPE_NODE3_FLAGS="--kv-role demo=decode" (bench/pd-bench.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE="${TROUPE_BASE_PORT:-}"
if [[ "${1:-}" == "--base-port" ]]; then
  [[ $# -ge 2 ]] || { echo "--base-port needs a port" >&2; exit 2; }
  BASE="$2"
  shift 2
elif [[ "${1:-}" == --base-port=* ]]; then
  BASE="${1#--base-port=}"
  shift
fi

if [[ -n "$BASE" ]]; then
  if ! [[ "$BASE" =~ ^[0-9]+$ ]] || ((BASE < 1024 || BASE > 65522)); then
    echo "--base-port must be a number from 1024 to 65522, got '$BASE'" >&2
    exit 2
  fi
  HTTP=$BASE
  CLUSTER=($((BASE + 1)) $((BASE + 2)) $((BASE + 3)))
  MANAGEMENT=($((BASE + 11)) $((BASE + 12)) $((BASE + 13)))
  DIR="$ROOT/data/local-cluster-$BASE"
else
  HTTP=8000
  CLUSTER=(25520 25521 25522)
  MANAGEMENT=(7626 7627 7628)
  DIR="$ROOT/data/local-cluster"
fi
SEED="127.0.0.1:${CLUSTER[0]}"

start_node() {
  local n="$1"; shift
  mkdir -p "$DIR/node$n"
  "$ROOT/troupe" serve --data-dir "$DIR/node$n" --seed-nodes "$SEED" "$@" \
    >"$DIR/node$n/node.log" 2>&1 &
  echo $! >"$DIR/node$n/pid"
  echo "node $n: pid $(cat "$DIR/node$n/pid"), log $DIR/node$n/node.log"
}

case "${1:-start}" in
  start)
    shift || true
    [[ -f "$ROOT/deploy/target/troupe.jar" ]] || "$ROOT/troupe" build
    extra=("$@")
    [[ ${#extra[@]} -eq 0 ]] && extra=(--replicas demo=2)
    start_node 1 --roles gateway --port "$HTTP" --cluster-port "${CLUSTER[0]}" \
      --management-port "${MANAGEMENT[0]}" "${extra[@]}"
    sleep 3
    # shellcheck disable=SC2086 # the per-node flags are words
    start_node 2 --roles worker,trainer --cluster-port "${CLUSTER[1]}" \
      --management-port "${MANAGEMENT[1]}" "${extra[@]}" ${TROUPE_NODE2_FLAGS:-}
    # shellcheck disable=SC2086
    start_node 3 --roles worker --cluster-port "${CLUSTER[2]}" \
      --management-port "${MANAGEMENT[2]}" "${extra[@]}" ${TROUPE_NODE3_FLAGS:-}
    echo "members: $0 status ; API on http://localhost:$HTTP/v1"
    ;;
  stop)
    # Waits for the nodes to exit (coordinated shutdown takes seconds), so that a start right after
    # finds the ports free and no old node still writing into the logs.
    pids=()
    for n in 3 2 1; do
      if [[ -f "$DIR/node$n/pid" ]]; then
        pid="$(cat "$DIR/node$n/pid")"
        kill "$pid" 2>/dev/null && pids+=("$pid")
        rm -f "$DIR/node$n/pid"
      fi
    done
    for pid in "${pids[@]}"; do
      for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      if kill -0 "$pid" 2>/dev/null; then
        echo "node pid $pid still running after 60 s: killing it" >&2
        kill -9 "$pid"
      fi
    done
    ;;
  status)
    # The cluster routes need node 1's API key: the first of TROUPE_API_KEYS, or its generated one.
    key="${TROUPE_API_KEYS:-}"
    key="${key%%,*}"
    [[ -z "$key" && -f "$DIR/node1/api-key" ]] && key="$(tr -d '[:space:]' <"$DIR/node1/api-key")"
    curl -s -H "Authorization: Bearer $key" "localhost:${MANAGEMENT[0]}/cluster/members" \
      || echo "node 1 is not answering"
    echo
    ;;
  *) echo "usage: $0 [--base-port N] start [flags] | stop | status" >&2; exit 2 ;;
esac
