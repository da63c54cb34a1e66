#!/usr/bin/env bash
# The whole server-level comparison of docs/benchmarks.md ("CPU engine against native llama.cpp")
# in one command: builds llama-server for this CPU (cached), the Troupe jar and the bench
# classpath, then runs VersusLlamaServer on the small and medium models (3 rounds unless told;
# --jfr on records the Troupe server with JFR for a look at a collapsed round).
# Run it from the repository root on a quiet machine:
#
#   bash bench/llamacpp/versus-llama-server.sh [--sizes small,medium] [--rounds 3] [...]
#
# Output goes to stdout and to /tmp/troupe-vs-llamacpp/versus-llama-server-<time>.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="$(bash bench/llamacpp/build-llama-server.sh)"
mvn -B -q -DskipTests package
mvn -B -o -q -pl bench -am test-compile dependency:build-classpath \
  -Dmdep.outputFile=target/cp.txt -Dmdep.includeScope=runtime
mkdir -p /tmp/troupe-vs-llamacpp
out="/tmp/troupe-vs-llamacpp/versus-llama-server-$(date -u +%Y%m%dT%H%M%SZ).txt"
java -Xmx3g --add-modules jdk.incubator.vector \
  -cp "bench/target/classes:$(cat bench/target/cp.txt)" \
  dev.troupe.bench.llamacpp.VersusLlamaServer --llama-bin "$bin" "$@" 2>&1 | tee "$out"
echo "written: $out"
