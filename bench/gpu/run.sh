#!/usr/bin/env bash
# The GPU run, ON the GPU machine (device tool), from the repository root with gpu-bundle/ carried
# (built here by bench/gpu/prepare.sh). One bounded command, docs/benchmarks.md "GPU":
#
#   bash bench/gpu/run.sh            # = tests qwen3-1.7b llama-3.1-8b, at most 540 s in all
#
# 1. prints the GPU, the driver and the CUDA 13 libraries this machine has, and what the runner's
#    probe makes of them (which folder each library is loaded from);
# 2. tests: the CUDA runner's tests on the real GPU only (-Dtroupe.gpu.backends=CUDA; CI runs the
#    emulated variants), with CUDA-graph decode steps against eager ones (CudaGraphsTest), the
#    decode kernels spread over blocks (DecodeKernelsTest), training on a serving runner's weights
#    (SharedTrainingTest) and the training mode's loss, optimizer and attention
#    (CudaTrainerLossTest, TrainingAttentionTest; the training tests that compare with the CPU trainer need ND4J, which the bundle leaves out). FAILS if any test failed, was skipped or aborted, or the JVM crashed;
#    the benchmarks are then skipped;
# 3. per shape: a random-weight model written to /dev/shm (make_random_model.py); CudaBench
#    (Troupe's speed; decode with CUDA graphs and eagerly, --enforce-eager, side by side, so a
#    regression of either shows in one table); KernelCensus (the decode step's GPU time call by
#    call, batch 1 and 256; seconds); CudaVersusCpu (the GPU runner against the CPU runner on the same BF16
#    weights: greedy continuations of 64 tokens, teacher-forced logits); hf_generate.py
#    (transformers' speed); for qwen3-1.7b also training (at most 2 minutes more):
#    CudaTrainBench (the training mode's gradient check row dumped, then training tokens/s of one
#    step, LoRA r 8 on all projections, a row of 2048 tokens) and hf_train.py (the gradient check
#    against PyTorch in FP32, then PEFT + transformers' tokens/s of the same step); then the model
#    deleted.
# Each part, and each step in it, runs under `timeout`; nothing starts past the overall budget.
# $OUT (the device tool's folder; else /tmp/troupe-gpu-out) gets at most 8 files: run.log (all of
# stdout), tests.log (the JUnit tree), junit.tar.gz (the XML reports), and a JVM crash log
# hs_err-<step>.log per crashed JVM (8 JVMs; more than 5 crash logs go into one hs_err.tar.gz).
# Exit status 0 only when every part passed.
#
# Budgets in seconds (environment): TROUPE_GPU_BUDGET_S=540 overall; caps per part, which bind only
# when a part hangs (a part gets at most what is left): TROUPE_GPU_TESTS_S=120,
# TROUPE_GPU_QWEN_S=290 (170 + 120 for training), TROUPE_GPU_LLAMA_S=300.
set -uo pipefail
cd "$(dirname "$0")/../.."
START=$SECONDS
BUDGET=${TROUPE_GPU_BUDGET_S:-540}
OUT=${OUT:-/tmp/troupe-gpu-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
PARTS=("$@")
[ ${#PARTS[@]} -eq 0 ] && PARTS=(tests qwen3-1.7b llama-3.1-8b)
for p in "${PARTS[@]}"; do
  case $p in tests | qwen3-1.7b | llama-3.1-8b | census) ;; *) echo "run.sh: unknown part $p (tests, qwen3-1.7b, llama-3.1-8b, census)" >&2; exit 2 ;; esac
done
[ -f gpu-bundle/classes.tar.xz ] || { echo "run.sh: no gpu-bundle/ (bash bench/gpu/prepare.sh, then carry it)" >&2; exit 2; }
CLASSES=/tmp/troupe-gpu-classes
rm -rf "$CLASSES" && mkdir -p "$CLASSES" && tar -C "$CLASSES" -xJf gpu-bundle/classes.tar.xz

# seconds left of the overall budget, less a margin for the summary
left() { echo $((BUDGET - (SECONDS - START) - 5)); }
# seconds a step may take: its cap, cut to what is left of its part and of the run
allow() {
  local t=$1 part=$(($2 - SECONDS)) all
  all=$(left)
  [ "$part" -lt "$t" ] && t=$part
  [ "$all" -lt "$t" ] && t=$all
  echo "$t"
}
# step NAME SECONDS CMD...: runs CMD under timeout (its output to $STEP_LOG when set), says how it
# ended; returns its status
step() {
  local name=$1 t=$2 rc
  shift 2
  if [ "$t" -lt 5 ]; then
    echo "!! $name: not started, no time left of the budget"
    return 124
  fi
  echo "-- $name (timeout ${t}s)"
  local t0=$SECONDS
  if [ -n "${STEP_LOG:-}" ]; then
    timeout -k 10 "$t" "$@" >"$STEP_LOG" 2>&1
  else
    timeout -k 10 "$t" "$@"
  fi
  rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "!! $name: TIMEOUT after ${t}s"
  elif [ $rc -ne 0 ]; then
    echo "!! $name: FAILED, exit status $rc"
  fi
  echo "-- $name: $((SECONDS - t0))s"
  return $rc
}

echo "== environment"
date -u
timeout 30 nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv 2>&1 ||
  echo "!! nvidia-smi failed or is missing: no NVIDIA driver here"
echo "ld.so cache:"
ldconfig -p 2>/dev/null | grep -E 'libcuda\.so\.1|libcudart\.so\.13|libcublas(Lt)?\.so\.13|libnvrtc\.so\.13' ||
  echo "  (no CUDA 13 library in the ld.so cache)"
# pip's CUDA 13 wheels (PyTorch's): cuBLAS and NVRTC may be only there
PIP=$(
  {
    ls -d /opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib 2>/dev/null
    timeout 20 python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null |
      sed 's|$|/nvidia/cu13/lib|'
  } | sort -u | while read -r d; do [ -d "$d" ] && echo "$d"; done
)
# the Java steps get these folders on LD_LIBRARY_PATH (the probe searches them too); Python keeps
# its own environment, so PyTorch loads the CUDA libraries it was built with
CUDA_LD=${LD_LIBRARY_PATH:-}
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib $PIP; do
  [ -d "$d" ] || continue
  echo "$d: $(ls "$d" | grep -E '^lib(cudart|cublas|cublasLt|nvrtc|nvrtc-builtins)\.so\.13' | tr '\n' ' ')"
  CUDA_LD="${CUDA_LD:+$CUDA_LD:}$d"
done
echo "LD_LIBRARY_PATH for Java: $CUDA_LD"
JAVA=java
if ! java -version 2>&1 | grep -qE 'version "(1[7-9]|[2-9][0-9])'; then
  tar -C /tmp -xJf gpu-bundle/jdk.tar.xz && JAVA=/tmp/jdk/bin/java
fi
$JAVA -version 2>&1 | head -1
JAVA=(env LD_LIBRARY_PATH="$CUDA_LD" "$JAVA")
# the large resources travel once, as tracked files (prepare.sh leaves their copies out of the bundle)
CP="$CLASSES/classes:cluster-node/src/main/resources:cluster-node/src/test/resources:$(ls gpu-bundle/lib/*.jar | grep -v console-standalone | paste -sd:)"
JVM=(-Xmx16g --add-modules jdk.incubator.vector -XX:PerMethodTrapLimit=1000 -Dtroupe.worker.compute.cuda-kernel-cache=/tmp/troupe-cuda)
timeout 60 "${JAVA[@]}" "${JVM[@]}" -cp "$CP" dev.troupe.bench.cuda.CudaBench --probe 2>&1 | grep -v '^WARNING: Using incubator'
[ "${PIPESTATUS[0]}" -eq 0 ] || echo "!! the probe found no usable GPU (above): every CUDA test will abort"

declare -A RESULT
SHM=/dev/shm
trap 'rm -rf "$SHM"/troupe-model-*' EXIT

tests() {
  local end=$((SECONDS + ${TROUPE_GPU_TESTS_S:-120})) rc n bad what
  rm -rf /tmp/troupe-junit
  STEP_LOG="$OUT/tests.log" step "JUnit, CUDA variants" "$(allow 100000 $end)" \
    "${JAVA[@]}" "${JVM[@]}" -Dtroupe.gpu.backends=CUDA -XX:ErrorFile="$OUT/hs_err-tests.log" \
    -jar gpu-bundle/lib/junit-platform-console-standalone-*.jar execute -cp "$CP" \
    --select-class dev.troupe.engine.cuda.CudaModelRunnerTest \
    --select-class dev.troupe.engine.cuda.CudaGraphsTest \
    --select-class dev.troupe.engine.cuda.DeviceSamplerTest \
    --select-class dev.troupe.engine.cuda.DeviceSamplingEngineTest \
    --select-class dev.troupe.engine.cuda.CudaTrainerLossTest \
    --select-class dev.troupe.engine.cuda.TrainingAttentionTest \
    --select-class dev.troupe.engine.cuda.DecodeKernelsTest \
    --select-class dev.troupe.engine.cuda.SharedTrainingTest \
    --disable-banner --disable-ansi-colors --details=tree --fail-if-no-tests \
    --reports-dir /tmp/troupe-junit
  rc=$?
  [ -d /tmp/troupe-junit ] && tar -C /tmp -czf "$OUT/junit.tar.gz" troupe-junit
  grep -E '✘|\[SKIPPED\]' "$OUT/tests.log" | head -40
  grep -E '^\[ *[0-9]+ (containers|tests) ' "$OUT/tests.log"
  # the console exits 0 on aborted (assumption-failed) tests: count them
  bad=0
  for what in skipped aborted failed; do
    n=$(grep -E "^\[ *[0-9]+ (containers|tests) $what" "$OUT/tests.log" | awk '{s += $2} END {print s + 0}')
    [ "$n" -gt 0 ] && { echo "!! tests: $n $what"; bad=1; }
  done
  n=$(grep -E '^\[ *[0-9]+ tests successful' "$OUT/tests.log" | awk '{print $2}')
  [ "${n:-0}" -gt 0 ] || { echo "!! tests: none passed (crashed, killed or not run)"; bad=1; }
  [ -f "$OUT/hs_err-tests.log" ] && { echo "!! tests: the JVM crashed, $OUT/hs_err-tests.log"; bad=1; }
  [ $rc -ne 0 ] && bad=1
  return $bad
}

shape() {
  local m=$1 cap gen bench check need end dir avail
  case $m in
    qwen3-1.7b) cap=${TROUPE_GPU_QWEN_S:-290} gen=60 bench=90 check=40 need=5 ;;
    llama-3.1-8b) cap=${TROUPE_GPU_LLAMA_S:-300} gen=120 bench=100 check=90 need=18 ;;
  esac
  end=$((SECONDS + cap))
  # random weights in memory when /dev/shm has room (GB), else on disk
  avail=$(df -BG --output=avail "$SHM" 2>/dev/null | tail -1 | tr -dc 0-9)
  [ "${avail:-0}" -ge "$need" ] || { SHM=/tmp; echo "(/dev/shm has ${avail:-0} GB free: model in /tmp)"; }
  dir="$SHM/troupe-model-$m"
  rm -rf "$dir"
  step "$m: random model" "$(allow $gen $end)" python3 bench/gpu/make_random_model.py "$m" "$dir" || return 1
  local rc=0
  [ -n "${TROUPE_GPU_CHECK_ONLY:-}" ] || step "$m: CudaBench (Troupe)" "$(allow $bench $end)" \
    "${JAVA[@]}" "${JVM[@]}" -XX:ErrorFile="$OUT/hs_err-$m.log" -cp "$CP" dev.troupe.bench.cuda.CudaBench "$dir" 128 32
  rc=$?
  # where the decode step's GPU time goes, call by call (seconds; docs/benchmarks.md)
  [ -n "${TROUPE_GPU_CHECK_ONLY:-}" ] || step "$m: KernelCensus" "$(allow 40 $end)" \
    "${JAVA[@]}" "${JVM[@]}" -XX:ErrorFile="$OUT/hs_err-$m-census.log" -cp "$CP" \
    dev.troupe.bench.cuda.KernelCensus "$dir" 160 1 256 || rc=1
  # and at batch 1 on a 4,000-token context (attention split over blocks, 16 partitions)
  [ -n "${TROUPE_GPU_CHECK_ONLY:-}" ] || step "$m: KernelCensus, long context" "$(allow 40 $end)" \
    "${JAVA[@]}" "${JVM[@]}" -XX:ErrorFile="$OUT/hs_err-$m-census.log" -cp "$CP" \
    dev.troupe.bench.cuda.KernelCensus "$dir" 4000 1 || rc=1
  # the CPU runner holds the BF16 weights on the heap
  # then both runners against PyTorch FP32 (and PyTorch BF16's own error) on the same tokens
  local logits="$SHM/troupe-model-logits-$m"
  step "$m: GPU runner vs CPU runner" "$(allow $check $end)" \
    "${JAVA[@]}" "${JVM[@]}" -Xmx40g -XX:ErrorFile="$OUT/hs_err-$m-check.log" -cp "$CP" \
    dev.troupe.bench.cuda.CudaVersusCpu "$dir" 16 64 "$logits"
  local same=$?
  if [ $same -eq 0 ]; then
    step "$m: both runners vs PyTorch FP32" "$(allow 90 $end)" python3 bench/gpu/hf_logits.py "$dir" "$logits"
    same=$?
  fi
  rm -rf "$logits"
  if [ -n "${TROUPE_GPU_CHECK_ONLY:-}" ]; then rm -rf "$dir"; return $same; fi
  # the Qwen part keeps its last 130 s for training
  local hfend=$end
  [ "$m" = qwen3-1.7b ] && hfend=$((end - 130))
  step "$m: transformers generate()" "$(allow 100000 $hfend)" python3 bench/gpu/hf_generate.py "$dir" 128 32
  local hf=$?
  local train=0
  if [ "$m" = qwen3-1.7b ]; then
    # training on the same weights: Troupe's step and gradient dump, then PyTorch's check and step
    local dump="$SHM/troupe-model-train-dump"
    step "$m: CudaTrainBench (Troupe training)" "$(allow 60 $end)" \
      "${JAVA[@]}" "${JVM[@]}" -XX:ErrorFile="$OUT/hs_err-$m-train.log" -cp "$CP" \
      dev.troupe.bench.cuda.CudaTrainBench "$dir" "$dump" 2048 5 256
    train=$?
    if [ $train -eq 0 ]; then
      step "$m: gradient check and PEFT + transformers training" "$(allow 70 $end)" \
        python3 bench/gpu/hf_train.py "$dir" "$dump" 2048 5
      train=$?
    fi
    rm -rf "$dump"
  fi
  rm -rf "$dir"
  [ $rc -eq 0 ] && [ $same -eq 0 ] && [ $hf -eq 0 ] && [ $train -eq 0 ]
}

# where a decode step's GPU time goes (KernelCensus), batch 1 and 256, on both shapes, alone (the
# shape parts run it too, after CudaBench): bash bench/gpu/run.sh census, about 90 s
census() {
  local m dir rc=0
  for m in qwen3-1.7b llama-3.1-8b; do
    dir="$SHM/troupe-model-$m"
    rm -rf "$dir"
    step "$m: random model" "$(allow 120 $((SECONDS + 120)))" python3 bench/gpu/make_random_model.py "$m" "$dir" || return 1
    step "$m: KernelCensus" "$(allow 90 $((SECONDS + 90)))" \
      "${JAVA[@]}" "${JVM[@]}" -XX:ErrorFile="$OUT/hs_err-$m-census.log" -cp "$CP" \
      dev.troupe.bench.cuda.KernelCensus "$dir" 160 1 256 || rc=1
    rm -rf "$dir"
  done
  return $rc
}

status=0
for p in "${PARTS[@]}"; do
  echo "== $p ($(left)s of the budget left)"
  if [ "$p" != tests ] && [ "${RESULT[tests]:-}" = FAIL ]; then
    RESULT[$p]=SKIPPED
    echo "!! $p: skipped, the tests failed"
    continue
  fi
  case $p in tests) tests ;; census) census ;; *) shape "$p" ;; esac
  if [ $? -eq 0 ]; then RESULT[$p]=PASS; else RESULT[$p]=FAIL; status=1; fi
done
# at most 8 files come back: more than 5 crash logs travel as one archive
if [ "$(ls "$OUT"/hs_err-*.log 2>/dev/null | wc -l)" -gt 5 ]; then
  tar -C "$OUT" -czf "$OUT/hs_err.tar.gz" $(cd "$OUT" && ls hs_err-*.log) && rm -f "$OUT"/hs_err-*.log
fi
echo "== summary after $((SECONDS - START))s"
for p in "${PARTS[@]}"; do echo "$p: ${RESULT[$p]}"; done
echo "files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
exit $status
