#!/usr/bin/env bash
# Builds distgraph and runs its test suite against Debian 13's libtorch 2.x (2.6 in trixie)
# and GCC 14, in a Debian 13 chroot made with debootstrap: the check that the train/ layer
# builds and trains on a libtorch newer than Debian 12's 1.13. Not part of CI (it downloads
# about 1 GB and builds everything once more: 30-40 minutes on 2 cores).
#
# Usage (root, on a Debian machine that reaches Debian's mirrors):
#   bash scripts/check_libtorch2.sh [ROOT] [-- CTEST_ARGS...]
#     ROOT        the chroot's folder (default /srv/distgraph-trixie; made once, reused)
#     CTEST_ARGS  passed to ctest, e.g. -R train
# Environment: MIRROR (default http://deb.debian.org/debian), JOBS (default nproc),
# BUILD_DIR (inside the chroot's clone, default build).
#
# The repository's committed HEAD is checked out in ROOT/work/main (uncommitted changes are
# not tested); ../shared beside this checkout, where present, is bind-mounted read-only beside
# it so the dataset tests run. Trixie ships Catch2 v3 only: Debian 12's catch2 (v2) package
# is unpacked into ROOT/opt/catch2 for the tests. Mounts are undone on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
root=/srv/distgraph-trixie
if [[ $# -gt 0 && $1 != -- ]]; then
  root=$1
  shift
fi
[[ ${1:-} == -- ]] && shift
mirror=${MIRROR:-http://deb.debian.org/debian}
jobs=${JOBS:-$(nproc)}
build_dir=${BUILD_DIR:-build}

if [[ $(id -u) -ne 0 ]]; then
  echo "check_libtorch2: needs root (debootstrap, chroot, mount)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
for tool in debootstrap git; do
  command -v "$tool" >/dev/null 2>&1 || apt-get install -y -qq "$tool" >/dev/null
done

# The packages scripts/setup.sh installs, as trixie names them (Catch2 comes separately).
packages=g++,cmake,ninja-build,make,pkg-config,git,ca-certificates,libboost-dev,\
libboost-graph-dev,libmetis-dev,metis,nlohmann-json3-dev,libcli11-dev,libbenchmark-dev,\
libtorch-dev,libgloo-dev,libopenblas0-pthread,python3-numpy
if [[ ! -x $root/usr/bin/g++ || ! -f $root/usr/include/torch/script.h ]]; then
  echo "check_libtorch2: making a Debian 13 chroot in $root (a few minutes)"
  debootstrap --variant=minbase --include="$packages" trixie "$root" "$mirror"
fi
if [[ ! -f $root/opt/catch2/usr/lib/cmake/Catch2/Catch2Config.cmake ]]; then
  deb_dir=$(mktemp -d)
  (cd "$deb_dir" && apt-get download catch2 >/dev/null)  # this machine's: Debian 12's v2
  mkdir -p "$root/opt/catch2"
  dpkg -x "$deb_dir"/catch2_*.deb "$root/opt/catch2"
  rm -rf "$deb_dir"
fi
# A chroot made before the distgraph program used CLI11: its header-only package unpacked in.
if [[ ! -d $root/usr/share/cmake/CLI11 && ! -d $root/usr/lib/cmake/CLI11 ]]; then
  deb_dir=$(mktemp -d)
  (cd "$deb_dir" && apt-get download libcli11-dev >/dev/null)
  dpkg -x "$deb_dir"/libcli11-dev_*.deb "$root"
  rm -rf "$deb_dir"
fi

mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
mount_once() {  # mount_once TARGET ARGS...: mounts unless something is mounted there
  local target=$1
  shift
  mountpoint -q "$target" && return 0
  mount "$@" "$target"
  mounted+=("$target")
}
mount_once "$root/proc" -t proc proc
mount_once "$root/dev" --rbind /dev
mount_once "$root/sys" --rbind /sys
if [[ -d $repo/../shared ]]; then
  mkdir -p "$root/work/shared"
  mount_once "$root/work/shared" --bind -o ro "$repo/../shared"
fi

# The chroot's clone follows this checkout's HEAD; files that did not change keep their
# times, so a second run rebuilds only what changed.
if [[ -d $root/work/main/.git ]]; then
  git -C "$root/work/main" fetch -q "$repo" HEAD
  git -C "$root/work/main" reset -q --hard FETCH_HEAD
else
  git clone -q "$repo" "$root/work/main"
fi
echo "check_libtorch2: testing $(git -C "$repo" log --oneline -1)"
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DISTGRAPH_SKIP_APT=1 \
  bash -c 'set -euo pipefail
    cd /work/main
    g++ --version | head -1
    cmake -S . -B '"$build_dir"' -G Ninja -DCMAKE_BUILD_TYPE=Release -Wno-dev \
          -DCatch2_DIR=/opt/catch2/usr/lib/cmake/Catch2 | grep "distgraph:"
    cmake --build '"$build_dir"' -j '"$jobs"'
    cd '"$build_dir"'
    ctest --output-on-failure -j '"$jobs"' --timeout 600 "$@"' check "$@"
