#!/usr/bin/env bash
# Build llama.cpp's native server (llama-server, and llama-batched-bench for evals.bench) from
# the llama.cpp tree that the llama-cpp-python sdist vendors, and install both beside
# ${PYTHON:-python} (.venv/bin). Portable CPU flags: the default native build uses AVX512/AMX
# where the build machine has them and then crashes on CPUs that lack them. No web UI, so no npm
# and no download at build time. Idempotent: does nothing when this version is installed.
set -euo pipefail

PYTHON="${PYTHON:-python}"
VERSION="0.3.36"
SOURCE="llama-cpp-python-$VERSION"
BIN_DIR="$("$PYTHON" -c 'import pathlib, sys; print(pathlib.Path(sys.executable).parent)')"
STAMP="$BIN_DIR/llama-server.source"

if [[ -x "$BIN_DIR/llama-server" && "$(cat "$STAMP" 2>/dev/null || true)" == "$SOURCE" ]]; then
  echo "llama-server from $SOURCE already installed in $BIN_DIR"
  exit 0
fi

if ! command -v cmake >/dev/null; then
  "$PYTHON" -m pip install -q cmake ninja
  export PATH="$BIN_DIR:$PATH"
fi
GENERATOR=()
command -v ninja >/dev/null && GENERATOR=(-G Ninja)

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
echo "building llama-server from $SOURCE (a few minutes)"
"$PYTHON" -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$WORK"
tar xzf "$WORK/llama_cpp_python-$VERSION.tar.gz" -C "$WORK"
cmake -S "$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp" -B "$WORK/build" "${GENERATOR[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
  -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
  >"$WORK/cmake.log" || { tail -40 "$WORK/cmake.log" >&2; exit 1; }
cmake --build "$WORK/build" --target llama-server llama-batched-bench -j "$(nproc)" \
  >"$WORK/build.log" || { tail -40 "$WORK/build.log" >&2; exit 1; }

install -m 755 "$WORK/build/bin/llama-server" "$WORK/build/bin/llama-batched-bench" "$BIN_DIR/"
echo "$SOURCE" >"$STAMP"
"$BIN_DIR/llama-server" --version 2>&1 | grep -i version || {
  echo "llama-server did not run after the build" >&2
  exit 1
}
echo "llama-server installed in $BIN_DIR"
