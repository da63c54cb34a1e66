#!/usr/bin/env bash
# LoadBench on two trees of this repository (e.g. before and after a refactor), alternating whole
# JVM runs in one session (A B, B A, A B, ...) so drifting machine load hits both alike; then the
# median over runs of each tree and the median of the per-pair ratios (B / A).
#
#   bench/loadbench-ab.sh TREE_A TREE_B PAIRS [LoadBench arguments...]
#
# Each tree must already be built with `mvn -B -q -DskipTests package` (never install); its
# classpath is its own module jars plus its bench module's dependencies, resolved offline from the
# local repository. Runs and the summary are written to ${AB_OUT:-/tmp/loadbench-ab}. A run that
# fails or exceeds ${AB_RUN_TIMEOUT:-900} s (LoadBench's JVM stays up after an exception in main:
# Pekko's threads) is reported and its pair left out of the summary.
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 TREE_A TREE_B PAIRS [LoadBench arguments...]" >&2
  exit 2
fi
A=$(cd "$1" && pwd); B=$(cd "$2" && pwd); PAIRS=$3; shift 3
OUT=${AB_OUT:-/tmp/loadbench-ab}; mkdir -p "$OUT"
JVM=(-Xmx3g -XX:+UseG1GC --add-modules jdk.incubator.vector -XX:PerMethodTrapLimit=1000
  --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED)

classpath() { # label tree: the tree's module jars (copied, so a rebuild meanwhile changes
  # nothing here) + its bench module's dependencies (not our own modules)
  local label=$1 t=$2
  (cd "$t" && mvn -B -o -q -pl bench -am -DskipTests package dependency:build-classpath \
    -DexcludeGroupIds=dev.troupe -Dmdep.outputFile="$OUT/$label-deps.txt" >/dev/null)
  rm -rf "${OUT:?}/$label-jars"; mkdir -p "$OUT/$label-jars"
  cp "$t"/{protocol,api-gateway,cluster-node,deploy,bench}/target/troupe-*-SNAPSHOT.jar "$OUT/$label-jars/"
  echo "$(ls "$OUT/$label-jars"/*.jar | paste -sd:):$(cat "$OUT/$label-deps.txt")"
}
CP_A=$(classpath A "$A"); CP_B=$(classpath B "$B")
echo "A=$A ($(git -C "$A" rev-parse --short HEAD))  B=$B ($(git -C "$B" rev-parse --short HEAD))" \
  | tee "$OUT/trees.txt"

run() { # tree-label pair-index classpath args...
  local label=$1 i=$2 cp=$3; shift 3
  echo "== pair $i $label  $(date -u +%H:%M:%S)  load $(cut -d' ' -f1-3 /proc/loadavg)"
  if ! OMP_WAIT_POLICY=PASSIVE timeout "${AB_RUN_TIMEOUT:-900}" java "${JVM[@]}" -cp "$cp" \
    dev.troupe.bench.gateway.LoadBench "$@" >"$OUT/$label-$i.txt" 2>"$OUT/$label-$i.err"; then
    echo "run $label $i failed (see $OUT/$label-$i.err)"
    mv "$OUT/$label-$i.txt" "$OUT/$label-$i.failed.txt"
    return 0
  fi
  grep '^| [0-9]' "$OUT/$label-$i.txt"
}
for ((i = 0; i < PAIRS; i++)); do
  if ((i % 2 == 0)); then run A "$i" "$CP_A" "$@"; run B "$i" "$CP_B" "$@"
  else run B "$i" "$CP_B" "$@"; run A "$i" "$CP_A" "$@"; fi
done

python3 - "$OUT" "$PAIRS" <<'EOF' | tee "$OUT/summary.md"
import statistics as st, sys
out, pairs = sys.argv[1], int(sys.argv[2])
# LoadBench's table: | c | requests | gw tok/s | engine tok/s | gw/engine | CPU gw (server) |
#   CPU engine | TTFT p50 | TTFT p99 | engine TTFT p50 | ITL p50 | ITL p99 |
cols = {"gateway tok/s": 2, "gateway/engine %": 4, "TTFT p50 ms": 7, "engine TTFT p50 ms": 9,
        "ITL p50 ms": 10, "ITL p99 ms": 11}
def rows(label, i):
    r = {}
    try:
        lines = open(f"{out}/{label}-{i}.txt").readlines()
    except FileNotFoundError:  # a failed run
        return r
    for line in lines:
        if line.startswith("| ") and line[2].isdigit():
            f = [x.strip() for x in line.strip().strip("|").split("|")]
            r[int(f[0])] = {k: float(f[c].rstrip("%")) for k, c in cols.items()}
    return r
done = [i for i in range(pairs) if rows("A", i) and rows("B", i)]
print(f"{len(done)} complete pairs of {pairs}\n")
runs = {l: [rows(l, i) for i in done] for l in "AB"}
print("| c | metric | A median | B median | B / A (median of pair ratios) | pair ratios |")
print("|---|---|---|---|---|---|")
for c in sorted(runs["A"][0]):
    for k in cols:
        a = [r[c][k] for r in runs["A"]]; b = [r[c][k] for r in runs["B"]]
        ratios = [y / x for x, y in zip(a, b)]
        print(f"| {c} | {k} | {st.median(a):.1f} | {st.median(b):.1f} | {st.median(ratios):.2f} "
              f"| {' '.join(f'{x:.2f}' for x in ratios)} |")
EOF
