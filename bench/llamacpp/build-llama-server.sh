#!/usr/bin/env bash
# Builds native llama.cpp (llama-server, llama-quantize) for this machine's CPU, as a user on it
# would: -DGGML_NATIVE=ON, so ggml uses every instruction set the CPU has (AVX-512, AVX512_BF16,
# VNNI on Zen 4). The source is the git bundle the npm package node-llama-cpp ships
# (llama/gitRelease.bundle): the registry is reachable from the dev machines where GitHub is not.
# Everything goes to a cache folder outside the repository; nothing of llama.cpp is committed.
#
#   bash bench/llamacpp/build-llama-server.sh          # prints the folder holding the binaries
#
# Environment: TROUPE_LLAMA_CACHE (default ~/.cache/troupe/llama.cpp), NODE_LLAMA_CPP_VERSION
# (default 3.22.1), JOBS (default: the core count). A finished build is reused (its stamp names
# the package version); delete the folder to rebuild.
set -euo pipefail

version="${NODE_LLAMA_CPP_VERSION:-3.22.1}"
cache="${TROUPE_LLAMA_CACHE:-$HOME/.cache/troupe/llama.cpp}"
jobs="${JOBS:-$(nproc)}"
bin="$cache/build/bin"
stamp="$cache/build/troupe-built-$version"

if [[ -f "$stamp" && -x "$bin/llama-server" && -x "$bin/llama-quantize" ]]; then
  echo "$bin"
  exit 0
fi
for tool in npm tar git cmake c++; do
  command -v "$tool" >/dev/null || { echo "build-llama-server.sh: needs $tool" >&2; exit 2; }
done

mkdir -p "$cache"
cd "$cache"
if [[ ! -f "package-$version/llama/gitRelease.bundle" ]]; then
  rm -rf "package-$version" package node-llama-cpp-*.tgz
  npm pack --silent "node-llama-cpp@$version" >/dev/null
  tar xzf "node-llama-cpp-$version.tgz" package/llama/gitRelease.bundle
  mv package "package-$version"
  rm -f "node-llama-cpp-$version.tgz"
fi
rm -rf src build
git clone --quiet "package-$version/llama/gitRelease.bundle" src
echo "llama.cpp $(git -C src describe --tags --always 2>/dev/null || git -C src rev-parse --short HEAD) from node-llama-cpp $version" >&2

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S src -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >&2
cmake --build build -j "$jobs" --target llama-server llama-quantize >&2
git -C src rev-parse HEAD >"$stamp"
echo "$bin"
