#!/usr/bin/env bash
# Disaggregated prefill/decode vs aggregated on the local cluster (issue 28): the same three nodes
# (deploy/local-cluster.sh: a gateway node and two worker nodes, demo model, 2 replicas) run
# PdBench twice: first with every replica "both" (aggregated: cache-aware routing over both
# replicas), then with node 2's replicas "--kv-role demo=prefill" and node 3's "decode" (the
# gateway splits long prompts). One table row per run.
#
#   bench/pd-bench.sh [PdBench options: --streams 16 --long 8 --long-min 2048 --long-max 3500 ...]
#
# Builds deploy (troupe.jar) and bench offline (never installs). Ports from PD_BENCH_BASE_PORT
# (default 18000: HTTP 18000, cluster 18001-18003, management 18011-18013); output in
# ${PD_OUT:-/tmp/pd-bench}; JVM options of the nodes from TROUPE_JAVA_OPTS (default here: 4 GiB
# heap, 4096 KV blocks per replica so 16 streams and a few 3.5k-token prompts fit).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE=${PD_BENCH_BASE_PORT:-18000}
OUT=${PD_OUT:-/tmp/pd-bench}
KEY=sk-pd-bench
URL="http://127.0.0.1:$BASE"
mkdir -p "$OUT"
export TROUPE_API_KEYS=$KEY
export TROUPE_JAVA_OPTS=${TROUPE_JAVA_OPTS:--Xmx4g -Dtroupe.worker.engine.num-blocks=4096}

(cd "$ROOT" && mvn -B -o -q -pl deploy,bench -am -DskipTests package dependency:build-classpath \
  -DexcludeGroupIds=dev.troupe -Dmdep.outputFile="$OUT/deps.txt" >/dev/null)
CP="$(ls "$ROOT"/{protocol,api-gateway,cluster-node,deploy,bench}/target/troupe-*-SNAPSHOT.jar \
  | paste -sd:):$(cat "$OUT/deps.txt")"

cluster() { "$ROOT/deploy/local-cluster.sh" --base-port "$BASE" "$@"; }

# Waits until both replicas serve and, for a P/D run, one prefills and the other decodes.
ready() {
  local want=$1
  for _ in $(seq 1 180); do
    if curl -sf -H "Authorization: Bearer $KEY" "$URL/v1/cluster" 2>/dev/null | python3 -c '
import json, sys
want = sys.argv[1]
rs = [r for r in json.load(sys.stdin)["replicas"] if r["state"] == "ready"]
roles = sorted(r.get("kv_role") or "-" for r in rs)
ok = len(rs) == 2 and (roles == ["decode", "prefill"] if want == "pd" else roles == ["both", "both"])
sys.exit(0 if ok else 1)' "$want" 2>/dev/null; then return 0; fi
    sleep 1
  done
  echo "the cluster did not become ready ($want)" >&2
  return 1
}

run() {
  local mode=$1; shift
  echo "== $mode  $(date -u +%H:%M:%S)  load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  if [[ $mode == pd ]]; then
    export TROUPE_NODE2_FLAGS="--kv-role demo=prefill" TROUPE_NODE3_FLAGS="--kv-role demo=decode"
  else
    unset TROUPE_NODE2_FLAGS TROUPE_NODE3_FLAGS
  fi
  cluster start --replicas demo=2 >"$OUT/$mode-cluster.txt"
  trap 'cluster stop' EXIT
  ready "$mode"
  java -Xmx1g -cp "$CP" dev.troupe.bench.gateway.PdBench --url "$URL" --key "$KEY" \
    --label "$mode" "$@" | tee "$OUT/$mode.txt"
  cluster stop
  trap - EXIT
}

run aggregated "$@"
run pd "$@"
{ grep -h '^|' "$OUT/aggregated.txt" "$OUT/pd.txt" | awk '!seen[$0]++'; } | tee "$OUT/summary.md"
