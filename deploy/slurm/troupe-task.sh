#!/usr/bin/env bash
# One Troupe node of a Slurm job (started by troupe.sbatch through srun): "gateway" (gateway and
# trainer, the seed node, on the first node) or "worker" (one model replica on this task's GPU).
# Reads TROUPE_HEAD, TROUPE_REPLICAS, TROUPE_MODEL, TROUPE_DATA and Slurm's SLURM_LOCALID,
# SLURM_JOB_ID; optional TROUPE_DEVICE (cpu: replicas on the CPU), TROUPE_PORT (API, 8000),
# TROUPE_CLUSTER_PORT (the seed's, 25520; worker i: +1+i), TROUPE_MANAGEMENT_PORT (7626; worker i:
# +1+i), TROUPE_SHUTDOWN_TIMEOUT, TROUPE_JAVA_OPTS, TROUPE_DB_URL. TROUPE_DRY_RUN=1 prints the
# environment it sets and the command instead of running it, each line tagged role/host/local id
# (lines of several tasks interleave in the job's output).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
role="${1:?usage: troupe-task.sh gateway|worker}"
: "${TROUPE_HEAD:?}" "${TROUPE_REPLICAS:?}" "${TROUPE_MODEL:?}" "${TROUPE_DATA:?}"
model="${TROUPE_MODEL%%=*}"
# The name other nodes reach this one at: Slurm's name for the node, as TROUPE_HEAD (the seed's
# address) is; hostname may differ from it (a fully qualified name), and Pekko drops messages
# addressed to a name that is not its own.
host="${TROUPE_HOST:-${SLURMD_NODENAME:-$(hostname)}}"
local_id="${SLURM_LOCALID:-0}"
cluster_port="${TROUPE_CLUSTER_PORT:-25520}"
management_port="${TROUPE_MANAGEMENT_PORT:-7626}"
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
    flags=(--roles gateway,trainer --port "${TROUPE_PORT:-8000}" --cluster-port "$cluster_port"
      --management-port "$management_port" --data-dir "$TROUPE_DATA/head" --metrics-without-auth)
    ;;
  worker)
    # Several workers per machine: ports and data directories by local task id. A task that sees
    # a single GPU (Slurm bound one to it) uses that one; otherwise the one at its local id.
    gpus="${CUDA_VISIBLE_DEVICES:-}"
    if [[ -n "$gpus" && "$gpus" != *,* ]]; then device="cuda:0"; else device="cuda:$local_id"; fi
    flags=(--roles worker --device "${TROUPE_DEVICE:-$device}"
      --cluster-port $((cluster_port + 1 + local_id))
      --management-port $((management_port + 1 + local_id))
      --seed-nodes "$TROUPE_HEAD:$cluster_port" --data-dir "$TROUPE_DATA/$host-$local_id")
    ;;
  *)
    echo "troupe-task.sh: unknown role $role (gateway or worker)" >&2
    exit 2
    ;;
esac

if [[ "${TROUPE_DRY_RUN:-}" == 1 ]]; then
  tag="$role/$host/$local_id"
  for e in "${env_out[@]}"; do printf '%s env %s\n' "$tag" "$e"; done
  for a in "$ROOT/troupe" serve "${base[@]}" "${flags[@]}"; do printf '%s arg %s\n' "$tag" "$a"; done
  exit 0
fi
export "${env_out[@]}"
# The launcher execs java: Slurm's SIGTERM reaches the JVM, which drains and exits 0.
exec "$ROOT/troupe" serve "${base[@]}" "${flags[@]}"
