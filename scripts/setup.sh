#!/usr/bin/env bash
# Installs the Debian 12 packages distgraph needs, only those missing; quick when all are there.
# Uses sudo only when not root. Set DISTGRAPH_SKIP_APT=1 to skip (e.g. a non-Debian machine
# where you installed the dependencies yourself).
set -euo pipefail

packages=(
  g++ cmake make ninja-build pkg-config
  libboost-dev libboost-graph-dev
  libmetis-dev metis
  nlohmann-json3-dev
  libssl-dev  # TLS 1.3 on the transport
  libcli11-dev  # the distgraph program's options (tools/distgraph/cli.hpp), not the library
  catch2 libbenchmark-dev
  libtorch-dev libgloo-dev
  libopenblas0-pthread
  python3-numpy
  openmpi-bin python3-torch  # mpirun and torchrun: tests/integration/test_schedulers.cpp
  libopenmpi-dev libptscotch-dev  # distgraph partition --distributed: PT-Scotch over MPI
  libtrilinos-zoltan-dev  # partition --distributed --partitioner zoltan: Zoltan's PHG over MPI
  openssh-server openssh-client rsync iproute2 util-linux  # scripts/testbed.sh: hosts in namespaces
  strace  # tests/integration/test_durable_writes.cpp: the fsync and rename order
  ccache  # CMakeLists.txt: a rebuild, or a fresh clone at the same path, reuses compiled objects
)

if [[ "${DISTGRAPH_SKIP_APT:-0}" == 1 ]]; then
  exit 0
fi
if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "setup: no dpkg: install these packages yourself: ${packages[*]}" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# apt's lists may be stale or absent on a fresh machine; one retry covers a transient mirror error.
for attempt in 1 2; do
  if "${sudo[@]}" apt-get update -qq && \
     "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    exit 0
  fi
  echo "setup: apt-get failed (attempt $attempt)" >&2
  sleep 5
done
exit 1
