#!/usr/bin/env bash
# Soak test (issue 9): a 3-node Troupe cluster on loopback under load for 10 minutes while a worker
# node is killed with SIGKILL and restarted every 2 minutes.
#   node 1: gateway + trainer (the trajectory log's store; never killed)  HTTP BASE, cluster BASE+1
#   node 2: worker                                                        cluster BASE+2
#   node 3: worker                                                        cluster BASE+3
# The demo model runs 2 replicas. The load (dev.troupe.bench.gateway.SoakDriver): 64 concurrent
# streaming chat clients, 8 non-streaming ones and 4 trajectory-log writers, closed loop; every chat
# request is one of 8 seeded variants whose failure-free token ids are taken before the first kill.
# Every request must complete (token-identical to its reference) or end with a clear error; none may
# hang; every acknowledged log write must be stored exactly once. Kills alternate between nodes 2
# and 3: the first KILL_FIRST s after the load starts, then every KILL_EVERY s (none later than
# DOWN_FOR s before the end); the killed node restarts DOWN_FOR s later with the same data
# directory. Results and method: docs/soak.md.
#
#   deploy/soak.sh                                               # the full run: 600 s, 5 kills
#   SECONDS_TOTAL=120 KILL_FIRST=30 KILL_EVERY=40 deploy/soak.sh  # a short one: 2 kills
# Environment: TROUPE_SOAK_BASE_PORT (default 19400), SECONDS_TOTAL (600), KILL_FIRST (60),
# KILL_EVERY (120), DOWN_FOR (30), STREAMS (64), WHOLE (8), WRITERS (4), MAX_TOKENS (48),
# NODE_HEAP (1g). Loopback only; everything lives under data/soak-BASE/ (logs, events.log,
# result.json). Exit status 0 when the run passed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE="${TROUPE_SOAK_BASE_PORT:-19400}"
TOTAL="${SECONDS_TOTAL:-600}"
KILL_FIRST="${KILL_FIRST:-60}"
KILL_EVERY="${KILL_EVERY:-120}"
DOWN_FOR="${DOWN_FOR:-30}"
DIR="$ROOT/data/soak-$BASE"
JAR="$ROOT/deploy/target/troupe.jar"
KEY="sk-soak"
JAVA="${JAVA:-java}"

for port in "$BASE" $((BASE + 1)) $((BASE + 2)) $((BASE + 3)); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "soak: port $port is in use; set TROUPE_SOAK_BASE_PORT" >&2
    exit 2
  fi
done
[[ -f "$JAR" && -d "$ROOT/bench/target/classes/dev/troupe/bench/gateway" ]] ||
  (cd "$ROOT" && mvn -B -q -DskipTests package)

rm -rf "$DIR"
mkdir -p "$DIR"
declare -A PID

node_flags() {
  local n="$1"
  local common=(--data-dir "$DIR/node$n" --seed-nodes "127.0.0.1:$((BASE + 1))" --api-key "$KEY"
    --replicas demo=2 --cluster-port $((BASE + n)) --management-port -1)
  case "$n" in
    1) echo "${common[@]}" --roles gateway,trainer --port "$BASE" ;;
    *) echo "${common[@]}" --roles worker ;;
  esac
}

now_ms() { date +%s%3N; }

start_node() {
  local n="$1"
  # The launcher execs the JVM, so $! is the JVM's pid (the one kill -9 hits).
  # shellcheck disable=SC2046
  TROUPE_JAVA_OPTS="-Xmx${NODE_HEAP:-1g}" JAVA="$JAVA" "$ROOT/troupe" serve $(node_flags "$n") \
    >>"$DIR/node$n.log" 2>&1 &
  PID[$n]=$!
  echo "$(now_ms) start node$n pid ${PID[$n]}" >>"$DIR/events.log"
}

stop_all() {
  for n in 3 2 1; do
    [[ -n "${PID[$n]:-}" ]] && kill "${PID[$n]}" 2>/dev/null || true
  done
  wait 2>/dev/null || true
}
trap stop_all EXIT

start_node 1
sleep 5
start_node 2
start_node 3
echo "soak: waiting for the cluster (logs in $DIR)"
for _ in $(seq 1 180); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$BASE/health" || true)
  [[ "$code" == 200 ]] && break
  sleep 1
done
[[ "$code" == 200 ]] || { echo "soak: the cluster did not become healthy" >&2; exit 1; }
uptime | tee -a "$DIR/events.log"

"$JAVA" -Xmx1g -cp "$JAR:$ROOT/bench/target/classes" dev.troupe.bench.gateway.SoakDriver \
  --url "http://127.0.0.1:$BASE" --key "$KEY" --seconds "$TOTAL" \
  --streams "${STREAMS:-64}" --whole "${WHOLE:-8}" --writers "${WRITERS:-4}" \
  --max-tokens "${MAX_TOKENS:-48}" --out "$DIR/result.json" --events "$DIR/events.log" \
  >"$DIR/driver.log" 2>&1 &
DRIVER=$!

# The kills, timed from the start of the load (after the driver's reference runs): nodes 2 and 3
# in turn, each back DOWN_FOR seconds later.
while ! grep -q '^soak: load started' "$DIR/driver.log" 2>/dev/null; do
  kill -0 "$DRIVER" 2>/dev/null || break
  sleep 1
done
start=$(date +%s)
next=$((start + KILL_FIRST))
victim=2
while kill -0 "$DRIVER" 2>/dev/null; do
  now=$(date +%s)
  if ((now >= next && now + DOWN_FOR < start + TOTAL)); then
    kill -9 "${PID[$victim]}" 2>/dev/null || true
    echo "$(now_ms) kill -9 node$victim pid ${PID[$victim]} (load: $(cut -d' ' -f1-3 /proc/loadavg))" \
      | tee -a "$DIR/events.log"
    sleep "$DOWN_FOR"
    start_node "$victim"
    victim=$((5 - victim))
    next=$((next + KILL_EVERY))
  fi
  sleep 1
done
status=0
wait "$DRIVER" || status=$?
uptime | tee -a "$DIR/events.log"
cat "$DIR/result.json" 2>/dev/null || tail -20 "$DIR/driver.log"
# The gateway logs each move of a request ("request R continues on E (attempt A, ...)").
moves=$(grep -c ' continues on ' "$DIR/node1.log" || true)
moved=$(grep -o 'request [^ ]* continues on' "$DIR/node1.log" | sort -u | wc -l || true)
echo "migrations logged by the gateway: $moves moves of $moved requests"
exit "$status"
