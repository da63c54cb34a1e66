#!/usr/bin/env bash
# One Troupe node of a Slurm job (started by troupe.sbatch through srun): "gateway" (gateway and
# trainer, the seed node, on the first node) or "worker" (one model replica on this task's GPU).
# Reads TROUPE_HEAD, TROUPE_REPLICAS, TROUPE_MODEL, TROUPE_DATA and Slurm's SLURM_LOCALID,
# SLURM_JOB_ID. TROUPE_DRY_RUN=1 prints the environment it sets and the command instead of
# running it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
role="${1:?usage: troupe-task.sh gateway|worker}"
: "${TROUPE_HEAD:?}" "${TROUPE_REPLICAS:?}" "${TROUPE_MODEL:?}" "${TROUPE_DATA:?}"
model="${TROUPE_MODEL%%=*}"
host="${TROUPE_HOST:-$(hostname)}" # the name other nodes reach this one at
local_id="${SLURM_LOCALID:-0}"
base=(--host "$host" --bind 0.0.0.0 --model "$TROUPE_MODEL" --replicas "$model=$TROUPE_REPLICAS"
  --shutdown-timeout "${TROUPE_SHUTDOWN_TIMEOUT:-60}")

# Sharding places replicas once every worker has joined: one replica per worker, per GPU.
java_opts="${TROUPE_JAVA_OPTS:--Xmx8g} -Dpekko.cluster.role.worker.min-nr-of-members=$TROUPE_REPLICAS"
env_out=(TROUPE_JAVA_OPTS="$java_opts")
if [[ -n "${TROUPE_DB_URL:-}" ]]; then
  env_out+=(TROUPE_DB_BACKEND=postgres) # every node's journal on the shared PostgreSQL
fi

case "$role" in
  gateway)
    # The seed: the others join it. Its data directory holds the H2 journal (without PostgreSQL).
    flags=(--roles gateway,trainer --port "${TROUPE_PORT:-8000}" --cluster-port 25520
      --management-port 7626 --data-dir "$TROUPE_DATA/head" --metrics-without-auth)
    ;;
  worker)
    # Several workers per machine: ports and data directories by local task id. A task that sees
    # a single GPU (Slurm bound one to it) uses that one; otherwise the one at its local id.
    gpus="${CUDA_VISIBLE_DEVICES:-}"
    if [[ -n "$gpus" && "$gpus" != *,* ]]; then device="cuda:0"; else device="cuda:$local_id"; fi
    flags=(--roles worker --device "${TROUPE_DEVICE:-$device}"
      --cluster-port $((25521 + local_id)) --management-port $((7627 + local_id))
      --seed-nodes "$TROUPE_HEAD:25520" --data-dir "$TROUPE_DATA/$host-$local_id")
    ;;
  *)
    echo "troupe-task.sh: unknown role $role (gateway or worker)" >&2
    exit 2
    ;;
esac

if [[ "${TROUPE_DRY_RUN:-}" == 1 ]]; then
  printf 'env %s\n' "${env_out[@]}"
  printf '%s\n' "$ROOT/troupe" serve "${base[@]}" "${flags[@]}"
  exit 0
fi
export "${env_out[@]}"
# The launcher execs java: Slurm's SIGTERM reaches the JVM, which drains and exits 0.
exec "$ROOT/troupe" serve "${base[@]}" "${flags[@]}"
