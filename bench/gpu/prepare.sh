#!/usr/bin/env bash
# Run HERE (the dev machine, with Maven): builds what a GPU machine needs into gpu-bundle/ (git-ignored,
# well under the device tool's 64 MiB): the compiled classes, the few jars the CUDA path needs (no
# nd4j-native, no Pekko), the JUnit console launcher, and a jlinked JDK as .tar.xz in case the GPU
# machine has no Java 17+. Then carry it: device run with carry ["gpu-bundle"] and command
# "bash bench/gpu/run.sh".
set -euo pipefail
cd "$(dirname "$0")/../.."
mvn -B -q -pl bench -am test-compile dependency:build-classpath -Dmdep.outputFile=target/gpu-cp.txt -Dmdep.includeScope=test
rm -rf gpu-bundle && mkdir -p gpu-bundle/lib gpu-bundle/classes
for m in protocol cluster-node bench; do cp -r $m/target/classes/. gpu-bundle/classes/; done
cp -r cluster-node/target/test-classes/. gpu-bundle/classes/
tr ':' '\n' <cluster-node/target/gpu-cp.txt | grep -E '/(javacpp|cuda|jackson-[a-z]+|slf4j-api|logback-[a-z]+|config|junit-[a-z-]+|opentest4j|apiguardian-api)[-/][^/]*\.jar$' \
  | grep -v -E 'nd4j|openblas' | xargs -I{} cp {} gpu-bundle/lib/
mvn -B -q -N dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:1.10.2 -DoutputDirectory=gpu-bundle/lib >/dev/null
jlink --add-modules java.base,java.logging,java.management,java.naming,java.xml,java.sql,jdk.unsupported,jdk.crypto.ec \
  --strip-debug --no-header-files --no-man-pages --compress=2 --output /tmp/troupe-jdk-$$
tar -C /tmp -cJf gpu-bundle/jdk.tar.xz --transform "s,^troupe-jdk-$$,jdk," troupe-jdk-$$
rm -rf /tmp/troupe-jdk-$$
du -sh gpu-bundle
