#!/usr/bin/env bash
# Run HERE (the dev machine, with Maven): builds what a GPU machine needs into gpu-bundle/ (git-ignored,
# ~48 MB: with the tracked files ~57 MiB, under the device tool's 64 MiB): the compiled classes, the
# jars the GPU tests and CudaBench need (the JavaCPP CUDA bindings; OpenBLAS's JavaCPP jar, 20 MB,
# for the CPU runner that DeviceSamplingEngineTest compares against; no nd4j-native, no Pekko), the
# JUnit console launcher, and a jlinked JDK as .tar.xz in case the GPU machine has no Java 17+.
# Then carry it: one device run with carry ["gpu-bundle"] and command "bash bench/gpu/run.sh"
# (tests, then the qwen3-1.7b and llama-3.1-8b shapes, at most 540 s: docs/benchmarks.md "GPU").
set -euo pipefail
cd "$(dirname "$0")/../.."
mvn -B -q -pl bench -am test-compile dependency:build-classpath -Dmdep.outputFile=target/gpu-cp.txt -Dmdep.includeScope=test
rm -rf gpu-bundle && mkdir -p gpu-bundle/lib gpu-bundle/classes
for m in protocol cluster-node bench; do cp -r $m/target/classes/. gpu-bundle/classes/; done
cp -r cluster-node/target/test-classes/. gpu-bundle/classes/
# the large resources are tracked files that travel anyway: run.sh puts cluster-node/src/*/resources on
# the class path instead of carrying them twice
rm -rf gpu-bundle/classes/tokenizers gpu-bundle/classes/golden gpu-bundle/classes/dev/troupe/engine/demo/tokenizer.json.gz
tr ':' '\n' <cluster-node/target/gpu-cp.txt | grep -E '/(javacpp|cuda|jackson-[a-z]+|slf4j-api|logback-[a-z]+|config|junit-[a-z-]+|opentest4j|apiguardian-api|openblas)[-/][^/]*\.jar$' \
  | grep -v -E 'nd4j|cuda-redist' | xargs -I{} cp {} gpu-bundle/lib/
# cuda-redist (NVRTC for the GPU-less CI tests, 380 MB) must never travel: the GPU machine's own CUDA is used
if ls gpu-bundle/lib | grep -q redist; then echo "prepare.sh: a redist jar got into the bundle" >&2; exit 1; fi
mvn -B -q -N dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:1.10.2 -DoutputDirectory=gpu-bundle/lib >/dev/null
jlink --add-modules java.base,java.logging,java.management,java.naming,java.xml,java.sql,jdk.unsupported,jdk.crypto.ec,jdk.incubator.vector \
  --strip-debug --no-header-files --no-man-pages --compress=0 --output /tmp/troupe-jdk-$$
# uncompressed modules + xz -9: 13 MB (jlink's own compression, then xz: 21 MB)
tar -C /tmp -cf - --transform "s,^troupe-jdk-$$,jdk," troupe-jdk-$$ | xz -9 >gpu-bundle/jdk.tar.xz
rm -rf /tmp/troupe-jdk-$$
# the classes as .tar.xz: 8.1 MB of class files travel as 1.3 MB (2026-11-27), which keeps ~7 MiB of the
# 64 MiB free; run.sh unpacks them
tar -C gpu-bundle -cf - classes | xz -9 >gpu-bundle/classes.tar.xz && rm -rf gpu-bundle/classes
bundle=$(du -sb gpu-bundle | cut -f1)
tracked=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
echo "gpu-bundle: $bundle bytes, tracked files: $tracked bytes, together $(((bundle + tracked) >> 20)) MiB (the device tool carries at most 64 MiB)"
[ $((bundle + tracked)) -lt $((64 << 20)) ] || { echo "prepare.sh: over 64 MiB" >&2; exit 1; }
