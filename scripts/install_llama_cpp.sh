#!/usr/bin/env bash
# Install llama-cpp-python's OpenAI-compatible server into ${PYTHON:-python}, built from source
# with portable CPU flags: the default native build uses AVX512/AMX where the build machine has
# them and then crashes on CPUs that lack them. Idempotent: does nothing when the pinned version
# already imports.
set -euo pipefail

PYTHON="${PYTHON:-python}"
VERSION="0.3.36"

installed_version() {
  "$PYTHON" - <<'EOF' 2>/dev/null
import llama_cpp, llama_cpp.server.app
print(llama_cpp.__version__)
EOF
}

if [[ "$(installed_version || true)" == "$VERSION" ]]; then
  echo "llama-cpp-python[server]==$VERSION already installed for $PYTHON"
  exit 0
fi

export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
export FORCE_CMAKE=1
echo "building llama-cpp-python[server]==$VERSION for $PYTHON (a few minutes)"
"$PYTHON" -m pip install --no-cache-dir --no-binary llama-cpp-python \
  "llama-cpp-python[server]==$VERSION"

if [[ "$(installed_version || true)" != "$VERSION" ]]; then
  echo "llama-cpp-python[server]==$VERSION did not import after the build" >&2
  exit 1
fi
echo "llama-cpp-python[server]==$VERSION installed"
