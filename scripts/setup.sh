#!/usr/bin/env bash
# Installs what swift needs to build, idempotently: Debian packages, then LibTorch (PyPI's torch in a
# project-local virtual environment) unless the build is pointed at an existing one.
#   scripts/setup.sh            build dependencies
#   scripts/setup.sh --tests    also the Python references the tests compare against (transformers, ...)
# Environment: SWIFT_VENV (default .venv), SWIFT_TORCH_PREFIX (an existing LibTorch / torch cmake prefix:
# skips the PyPI install), SWIFT_SKIP_APT=1 (air-gapped: dependencies already installed or in a prefix).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SWIFT_VENV:-$ROOT/.venv}"
WITH_TESTS=0
for a in "$@"; do
  case "$a" in
    --tests) WITH_TESTS=1 ;;
    *) echo "error: unknown option '$a'"; echo "hint: scripts/setup.sh [--tests]"; exit 2 ;;
  esac
done

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

APT_PACKAGES=(build-essential cmake ninja-build ccache pkg-config python3-venv python3-dev
  nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev
  libsentencepiece-dev libpcre2-dev libutf8proc-dev libboost-dev libyaml-cpp-dev libjemalloc-dev libcairo2-dev libgloo-dev
  libcurl4-openssl-dev libssl-dev  # hub downloads (docs/hub.md)
  libsnappy-dev libzstd-dev zlib1g-dev libbrotli-dev liblz4-dev)  # Parquet datasets' page codecs
# --tests: curl (the deploy suites wait for /health with it), clang and libFuzzer (scripts/fuzz.sh)
if [ "$WITH_TESTS" = 1 ]; then APT_PACKAGES+=(curl clang libfuzzer-14-dev); fi

if [ "${SWIFT_SKIP_APT:-0}" != 1 ] && command -v dpkg-query >/dev/null; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then missing+=("$p"); fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: Debian packages present (${#APT_PACKAGES[@]})"
  fi
fi

if [ -n "${SWIFT_TORCH_PREFIX:-}" ]; then
  echo "setup: using existing LibTorch at $SWIFT_TORCH_PREFIX"
else
  PY="${PYTHON:-python3}"
  if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating virtual environment $VENV"
    "$PY" -m venv "$VENV"
  fi
  if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
    echo "setup: installing torch from PyPI into $VENV (several GB, once)"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q "torch>=2.4"
  else
    echo "setup: torch $("$VENV/bin/python" -c 'import torch;print(torch.__version__)') present"
  fi
  if [ "$WITH_TESTS" = 1 ]; then
    if ! "$VENV/bin/python" -c 'import transformers, safetensors, numpy, tokenizers, sentencepiece, tensorboard, PIL, peft, bitsandbytes, trl, swift.rlhf_trainers, swift.rlhf_trainers.grpo_trainer, math_verify, galore_torch, megatron.core' 2>/dev/null; then
      echo "setup: installing test references (transformers, safetensors, numpy, tokenizers, sentencepiece, tensorboard, pillow, peft, bitsandbytes, trl, ms-swift with msgspec for its GRPO trainer, math-verify, galore-torch, megatron-core)"
      "$VENV/bin/pip" install -q transformers safetensors numpy tokenizers sentencepiece peft tensorboard pillow bitsandbytes trl ms-swift msgspec math-verify galore-torch megatron-core
    else
      echo "setup: test references present"
    fi
  fi
fi
