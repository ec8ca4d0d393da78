#!/usr/bin/env bash
# Air-gapped builds: carry swift's Debian dependencies as .deb files and unpack them into a prefix, no root
# and no network needed on the target machine.
#   scripts/offline_deps.sh download DIR        (on a machine with apt access: fetch the .debs into DIR)
#   scripts/offline_deps.sh extract DIR PREFIX  (on the target: unpack every .deb in DIR into PREFIX)
# Then build against the prefix and an existing PyTorch's LibTorch (build.sh points the compiler, linker,
# pkg-config and the loader at the prefix; pkgconf comes along for machines without pkg-config):
#   SWIFT_SKIP_APT=1 SWIFT_DEPS_PREFIX=PREFIX \
#   SWIFT_TORCH_PREFIX="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')" bash scripts/build.sh
set -euo pipefail
PACKAGES=(nlohmann-json3-dev libcli11-dev libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libgtest-dev libgmock-dev
  libyaml-cpp-dev libyaml-cpp0.7 libpcre2-dev libpcre2-8-0 libutf8proc-dev libutf8proc2 libsentencepiece-dev
  libsentencepiece0 libboost1.74-dev libjemalloc-dev libjemalloc2 pkgconf pkgconf-bin libpkgconf3
  libgloo-dev   # headers only: libboost1.74-dev for the deploy server (Beast), libgloo-dev for c10d's Gloo
  # Cairo (the run folder's pictures): its headers and library, and the runtime libraries it loads, with a font.
  libcairo2-dev libcairo2 libpixman-1-0 libfontconfig1 fontconfig-config fonts-dejavu-core libfreetype6
  libpng16-16 libbrotli1 libexpat1 libx11-6 libx11-data libxcb1 libxcb-render0 libxcb-shm0 libxau6 libxdmcp6
  libbsd0 libmd0 libxext6 libxrender1
  # Hub downloads (src/hub/, docs/hub.md): libcurl with OpenSSL, and the libraries libcurl4 loads beyond Debian's base.
  libcurl4-openssl-dev libcurl4 libssl-dev libssl3 libnghttp2-14 libpsl5 librtmp1 libssh2-1 libldap-2.5-0
  libsasl2-2 libsasl2-modules-db libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libkeyutils1
  # Parquet datasets' page codecs (src/parquet/): zstd, zlib and LZ4's runtime libraries are in Debian's base.
  libsnappy-dev libsnappy1v5 libzstd-dev zlib1g-dev libbrotli-dev liblz4-dev
  # What libcurl4 loads through libpsl5 that other distributions lack at these sonames (Ubuntu 24.04: libunistring5).
  libidn2-0 libunistring2)
case "${1:-}" in
  download)
    dir="${2:?usage: offline_deps.sh download DIR}"
    mkdir -p "$dir"
    (cd "$dir" && apt-get download "${PACKAGES[@]}")
    echo "offline_deps: $(ls "$dir"/*.deb | wc -l) packages in $dir"
    ;;
  extract)
    dir="${2:?usage: offline_deps.sh extract DIR PREFIX}"
    prefix="${3:?usage: offline_deps.sh extract DIR PREFIX}"
    mkdir -p "$prefix"
    for deb in "$dir"/*.deb; do dpkg -x "$deb" "$prefix"; done
    echo "offline_deps: unpacked into $prefix (use SWIFT_DEPS_PREFIX=$prefix)"
    ;;
  *)
    echo "usage: offline_deps.sh download DIR | extract DIR PREFIX" >&2
    exit 2
    ;;
esac
