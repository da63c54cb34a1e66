#!/usr/bin/env bash
# Run ON the GPU machine (device tool), in the repository root with gpu-bundle/ carried along:
#   1. a JDK: java 17+ from the machine, else the carried jlinked one;
#   2. the CUDA runner tests on the real GPU (the same tests CI runs on the emulator);
#   3. random-weight models shaped like Qwen3-1.7B and Llama-3.1-8B, generated here from a seed;
#   4. CudaBench (Troupe) and hf_generate.py (PyTorch + transformers) on each, same GPU.
# Arguments choose the parts (default all): tests, qwen3-1.7b, llama-3.1-8b — e.g. one device call
# per part to stay inside the 600 s limit of a call. Everything is also written under $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/troupe-gpu-out}; mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
JAVA=java
if ! java -version 2>&1 | grep -qE 'version "(1[7-9]|[2-9][0-9])'; then
  tar -C /tmp -xJf gpu-bundle/jdk.tar.xz && JAVA=/tmp/jdk/bin/java
fi
$JAVA -version 2>&1 | head -1
CP="gpu-bundle/classes:$(ls gpu-bundle/lib/*.jar | grep -v console-standalone | paste -sd:)"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done
PARTS=("$@"); [ ${#PARTS[@]} -eq 0 ] && PARTS=(tests qwen3-1.7b llama-3.1-8b)
for m in "${PARTS[@]}"; do
  if [ "$m" = tests ]; then
    # the three test classes with a CUDA variant; the CPU runner (compared against in
    # DeviceSamplingEngineTest) wants the Vector API module. Full tree in $OUT/gpu-tests.log.
    echo "== GPU tests (CUDA = the real GPU, EMULATED = the CPU emulation of the same kernels, skipped without g++)"
    $JAVA -Xmx16g --add-modules jdk.incubator.vector -Dtroupe.cuda.cacheDir=/tmp/troupe-cuda \
      -jar gpu-bundle/lib/junit-platform-console-standalone-*.jar execute -cp "$CP" \
      --select-class dev.troupe.engine.cuda.CudaModelRunnerTest \
      --select-class dev.troupe.engine.cuda.DeviceSamplerTest \
      --select-class dev.troupe.engine.cuda.DeviceSamplingEngineTest \
      --disable-ansi-colors --details=tree --reports-dir "$OUT/junit" >"$OUT/gpu-tests.log" 2>&1
    echo "JUnit exit status $?"
    grep -E '✘|\[SKIPPED\]|=> ' "$OUT/gpu-tests.log" | head -60
    tail -16 "$OUT/gpu-tests.log"
    continue
  fi
  echo "== $m"
  python3 bench/gpu/make_random_model.py "$m" "/tmp/$m" || continue
  $JAVA -Xmx16g -Dtroupe.cuda.cacheDir=/tmp/troupe-cuda -cp "$CP" dev.troupe.bench.cuda.CudaBench "/tmp/$m" 128 32
  python3 bench/gpu/hf_generate.py "/tmp/$m" 128 32
  rm -rf "/tmp/$m"
done
