#!/usr/bin/env bash
# A three-node Troupe cluster on loopback, from the same jar:
#   node 1: gateway only   HTTP :8000, cluster :25520 (seed), management :7626
#   node 2: worker+trainer            cluster :25521,        management :7627
#   node 3: worker                    cluster :25522,        management :7628
# Model workers run on nodes 2 and 3 (the demo model, 2 replicas, unless flags say otherwise);
# the gateway reaches them through Cluster Sharding. Stop node 2 or 3 and its replicas come back
# on the other.
#
#   deploy/local-cluster.sh start [extra flags for every node, e.g. --model m=/path --replicas m=2]
#   deploy/local-cluster.sh stop
#   deploy/local-cluster.sh status
# Logs and data: data/local-cluster/node{1,2,3}/ ; API key: TROUPE_API_KEYS or the generated one
# in data/local-cluster/node1/api-key.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/data/local-cluster"
SEED="127.0.0.1:25520"

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
    start_node 1 --roles gateway --port 8000 --cluster-port 25520 --management-port 7626 "${extra[@]}"
    sleep 3
    start_node 2 --roles worker,trainer --cluster-port 25521 --management-port 7627 "${extra[@]}"
    start_node 3 --roles worker --cluster-port 25522 --management-port 7628 "${extra[@]}"
    echo "members: curl -s localhost:7626/cluster/members ; API on http://localhost:8000/v1"
    ;;
  stop)
    for n in 3 2 1; do
      if [[ -f "$DIR/node$n/pid" ]]; then
        kill "$(cat "$DIR/node$n/pid")" 2>/dev/null || true
        rm -f "$DIR/node$n/pid"
      fi
    done
    ;;
  status)
    curl -s localhost:7626/cluster/members || echo "node 1 is not answering"
    echo
    ;;
  *) echo "usage: $0 start [flags] | stop | status" >&2; exit 2 ;;
esac
