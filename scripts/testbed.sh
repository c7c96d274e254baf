#!/usr/bin/env bash
# A cluster of separate hosts on this computer: one network namespace per host, joined by a
# bridge in a "switch" namespace, each with its own sshd, /dev/shm, workspace and host name.
#
#   testbed.sh up N [--rate R] [--names address|127.0.1.1|127.0.0.1]
#   testbed.sh exec I CMD...      run CMD on host I (1-based) in its namespaces
#   testbed.sh cut I | heal I     unplug / replug host I's cable at the switch
#   testbed.sh shape R|none       reshape every link of the running testbed to rate R (or unshape)
#   testbed.sh idle I [SECONDS]   wait (default 30 s) until host I runs nothing but its sshd
#   testbed.sh down               stop every host and remove the namespaces (also a killed run's)
#   testbed.sh check              exit 0 when this computer can run a testbed, else say why
#   testbed.sh env                print the testbed's paths as shell variables
#
# Host I has the address 198.51.100.I (TEST-NET-2: it exists only inside these namespaces)
# and the name hostI. --rate shapes every link in both directions with tbf (e.g. 1gbit,
# 2500mbit). --names says where a host's own name resolves: its address (default) or a
# loopback address, as Debian's installer writes it (127.0.1.1 <hostname>). Everything the
# testbed makes lives under $TESTBED_DIR (default /tmp/distgraph-testbed) and in namespaces
# named $TESTBED_PREFIX-* (default dgtb); docs/RUNTIME.md, "A cluster on one computer".
set -euo pipefail

dir=${TESTBED_DIR:-/tmp/distgraph-testbed}
prefix=${TESTBED_PREFIX:-dgtb}
subnet=198.51.100
switch_ns=$prefix-switch
sshd_bin=/usr/sbin/sshd

die() {
  echo "testbed: $*" >&2
  exit 1
}

host_ns() { echo "$prefix-h$1"; }
host_pid() {
  local f="$dir/host$1/sshd.pid"
  [[ -s $f ]] || die "host $1 is not up (no $f); run: $0 up N"
  cat "$f"
}

# One line saying why this computer cannot run a testbed, or nothing.
why_unavailable() {
  if [[ $(id -u) -ne 0 ]]; then echo "needs root (network namespaces, sshd on port 22)"; return; fi
  local tool
  for tool in ip tc nsenter unshare ssh ssh-keygen rsync; do
    command -v "$tool" >/dev/null 2>&1 || { echo "'$tool' not found (scripts/setup.sh installs it)"; return; }
  done
  [[ -x $sshd_bin ]] || { echo "$sshd_bin not found (package openssh-server)"; return; }
  unshare -n -m -u true 2>/dev/null || { echo "cannot create namespaces (unshare -n -m -u failed)"; return; }
  ip netns add "$prefix-probe" 2>/dev/null || { echo "cannot create a named network namespace (ip netns add)"; return; }
  ip netns del "$prefix-probe" 2>/dev/null || true
}

require() {
  local why
  why=$(why_unavailable)
  [[ -z $why ]] || die "unavailable: $why"
}

# Kills every process in the testbed's namespaces (sshds and whatever they started, and the
# launcher of a run that was killed) and deletes the namespaces; safe to run any time.
down() {
  local ns pids round
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$prefix-(h[0-9]+|switch|probe)$" || true); do
    for round in 1 2 3 4 5 6 7 8 9 10; do
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      [[ -n $pids ]] || break
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
      sleep 0.1
    done
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$dir"/host[0-9]* "$dir/hosts"
}

# The keys and ssh configuration every host shares (one host key: the hosts are ours).
make_keys() {
  mkdir -p "$dir"
  chmod 700 "$dir"
  [[ -s $dir/id_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -C distgraph-testbed -f "$dir/id_ed25519"
  [[ -s $dir/host_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -C distgraph-testbed-host -f "$dir/host_ed25519"
  cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
  echo "$subnet.* $(cut -d' ' -f1,2 "$dir/host_ed25519.pub")" > "$dir/known_hosts"
  # No ServerAlive/ClientAlive here: noticing a silent host is the launcher's job (it passes
  # its own ServerAlive options and runs a lease on every remote host), and a test on this
  # testbed must show that it does.
  cat > "$dir/ssh_config" <<EOF
Host host* $subnet.*
  User root
  IdentityFile $dir/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  CheckHostIP no
  BatchMode yes
  ConnectTimeout 5
  LogLevel ERROR
EOF
  for i in $(seq 1 "$1"); do printf 'Host host%d\n  HostName %s.%d\n' "$i" "$subnet" "$i"; done >> "$dir/ssh_config"
  printf '#!/bin/sh\n# ssh into the testbed hosts (distgraph launch --ssh, copy --ssh)\nexec ssh -F %s "$@"\n' \
    "$dir/ssh_config" > "$dir/ssh"
  printf '#!/bin/sh\n# rsync to the testbed hosts (distgraph copy --rsync)\nexec rsync -e "ssh -F %s" "$@"\n' \
    "$dir/ssh_config" > "$dir/rsync"
  chmod 755 "$dir/ssh" "$dir/rsync"
  cat > "$dir/sshd_config" <<EOF
HostKey $dir/host_ed25519
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
AcceptEnv no
MaxStartups 100
MaxSessions 100
Subsystem sftp internal-sftp
EOF
}

# tbf on `dev` in namespace `ns` at `rate`, with a burst of 10 ms of traffic (>= 64 KiB).
shape() {
  local ns=$1 dev=$2 rate=$3 bits burst
  bits=$(tc_rate_bits "$rate")
  burst=$((bits / 8 / 100))
  ((burst >= 65536)) || burst=65536
  ip netns exec "$ns" tc qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" latency 50ms
}

# Every link of hosts 1..n, both directions, at `rate`; "none" removes the shaping.
shape_all() {
  local n=$1 rate=$2 i
  for i in $(seq 1 "$n"); do
    if [[ $rate == none ]]; then
      ip netns exec "$(host_ns "$i")" tc qdisc del dev eth0 root 2>/dev/null || true
      ip netns exec "$switch_ns" tc qdisc del dev "p$i" root 2>/dev/null || true
    else
      shape "$(host_ns "$i")" eth0 "$rate"
      shape "$switch_ns" "p$i" "$rate"
    fi
  done
}

# A tc rate ("1gbit", "2500mbit", "100mbit", "10gbit", "500kbit") in bit/s.
tc_rate_bits() {
  local r=${1,,} n unit
  [[ $r =~ ^([0-9]+(\.[0-9]+)?)(kbit|mbit|gbit|bit)$ ]] || die "--rate '$1'; expected e.g. 1gbit, 2500mbit, 10gbit"
  n=${BASH_REMATCH[1]}
  unit=${BASH_REMATCH[3]}
  case $unit in
    bit) awk -v n="$n" 'BEGIN{printf "%d", n}' ;;
    kbit) awk -v n="$n" 'BEGIN{printf "%d", n*1e3}' ;;
    mbit) awk -v n="$n" 'BEGIN{printf "%d", n*1e6}' ;;
    gbit) awk -v n="$n" 'BEGIN{printf "%d", n*1e9}' ;;
  esac
}

# Host i's /etc/hosts: every host by address; its own name where --names says.
hosts_file() {
  local i=$1 n=$2 names=$3 j
  echo "127.0.0.1 localhost"
  [[ $names == address ]] || echo "$names host$i"
  for j in $(seq 1 "$n"); do
    [[ $j -eq $i && $names != address ]] && continue
    echo "$subnet.$j host$j"
  done
}

# Starts host i: namespace, cable into the switch, and an sshd in fresh mount and UTS
# namespaces with its own /dev/shm, workspace and /etc/hosts. Waits until sshd listens.
start_host() {
  local i=$1 n=$2 names=$3 ns hd
  ns=$(host_ns "$i")
  hd=$dir/host$i
  mkdir -p "$hd"
  hosts_file "$i" "$n" "$names" > "$hd/hosts"
  ip netns add "$ns"
  ip -n "$switch_ns" link add "p$i" type veth peer name eth0 netns "$ns"
  ip -n "$switch_ns" link set "p$i" master br0 up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$subnet.$i/24" dev eth0
  ip -n "$ns" link set eth0 up
  # ip netns exec and unshare exec (no fork), so $! is sshd's pid: the host's anchor.
  setsid ip netns exec "$ns" unshare -m -u --propagation private sh -c '
      mount -t tmpfs -o mode=1777 tmpfs /dev/shm &&
      mount -t tmpfs -o mode=755 tmpfs "$1" &&
      mount --bind "$2/hosts" /etc/hosts &&
      hostname "host$3" && mkdir -p /run/sshd &&
      exec "$4" -D -e -f "$5/sshd_config" -o ListenAddress="$6"' \
    sh "$dir/workspace" "$hd" "$i" "$sshd_bin" "$dir" "$subnet.$i" \
    > "$hd/sshd.log" 2>&1 < /dev/null &
  echo $! > "$hd/sshd.pid"
}

# Waits (at most 10 s) until every sshd printed that it listens; fails naming a host that
# did not, with its log.
wait_listening() {
  local n=$1 i t
  for i in $(seq 1 "$n"); do
    for t in $(seq 1 100); do
      grep -q "Server listening" "$dir/host$i/sshd.log" 2>/dev/null && continue 2
      kill -0 "$(cat "$dir/host$i/sshd.pid")" 2>/dev/null || break
      sleep 0.1
    done
    die "host $i: sshd did not start: $(tr '\n' ' ' < "$dir/host$i/sshd.log")"
  done
}

up() {
  local n="" rate="" names=address
  while (($#)); do
    case $1 in
      --rate) rate=${2:?--rate needs a value}; shift 2 ;;
      --names) names=${2:?--names needs a value}; shift 2 ;;
      *) [[ -z $n ]] || die "up: unexpected '$1'"; n=$1; shift ;;
    esac
  done
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 200)) || die "up: host count '$n'; expected 1-200"
  case $names in address | 127.0.1.1 | 127.0.0.1) ;; *) die "--names '$names'; expected address, 127.0.1.1 or 127.0.0.1" ;; esac
  [[ -z $rate ]] || tc_rate_bits "$rate" >/dev/null
  require
  down
  make_keys "$n"
  mkdir -p "$dir/workspace"
  ip netns add "$switch_ns"
  ip -n "$switch_ns" link add br0 type bridge
  ip -n "$switch_ns" link set br0 up
  for i in $(seq 1 "$n"); do start_host "$i" "$n" "$names"; done
  [[ -z $rate ]] || shape_all "$n" "$rate"
  wait_listening "$n"
  # A real login to every host from host 1, the way the launcher will make it.
  for i in $(seq 1 "$n"); do
    nsenter -t "$(host_pid 1)" -n -m -u -- "$dir/ssh" "host$i" true ||
      die "host 1 cannot ssh into host$i ($subnet.$i)"
  done
  echo "$n" > "$dir/hosts"
  echo "testbed: $n host(s) up: host1..host$n = $subnet.1..$subnet.$n${rate:+, links shaped to $rate}, names resolve to ${names}"
  echo "testbed: ssh $dir/ssh, rsync $dir/rsync, workspace $dir/workspace (a tmpfs of its own on each host)"
}

case ${1:-} in
  up) shift; up "$@" ;;
  exec)
    [[ ${2:-} =~ ^[0-9]+$ ]] || die "exec: expected a host number, then a command"
    i=$2
    shift 2
    (($#)) || die "exec: no command"
    exec nsenter -t "$(host_pid "$i")" -n -m -u --wd="$PWD" -- "$@"
    ;;
  cut | heal)
    [[ ${2:-} =~ ^[0-9]+$ ]] || die "$1: expected a host number"
    host_pid "$2" >/dev/null
    ip -n "$switch_ns" link set "p$2" "$([[ $1 == cut ]] && echo down || echo up)"
    ;;
  shape)
    [[ -n ${2:-} ]] || die "shape: expected a rate (1gbit, 2500mbit, 10gbit) or none"
    [[ $2 == none ]] || tc_rate_bits "$2" >/dev/null
    [[ -s $dir/hosts ]] || die "no testbed is up (no $dir/hosts); run: $0 up N"
    shape_all "$(cat "$dir/hosts")" "$2"
    if [[ $2 == none ]]; then echo "testbed: links unshaped"; else echo "testbed: links shaped to $2"; fi
    ;;
  idle)
    [[ ${2:-} =~ ^[0-9]+$ ]] || die "idle: expected a host number, then at most how many seconds to wait"
    [[ ${3:-30} =~ ^[0-9]+$ ]] || die "idle: '${3}' seconds; expected a whole number"
    host_pid "$2" >/dev/null
    for ((t = 0; t <= ${3:-30} * 10; t++)); do
      busy=""
      for p in $(ip netns pids "$(host_ns "$2")" 2>/dev/null); do
        [[ $(cat "/proc/$p/comm" 2>/dev/null) == sshd ]] || busy+=" $p"
      done
      [[ -n $busy ]] || exit 0
      sleep 0.1
    done
    die "host $2 still runs$busy after ${3:-30} s"
    ;;
  down)
    [[ $(id -u) -eq 0 ]] || die "unavailable: needs root (network namespaces, sshd on port 22)"
    down
    ;;
  check)
    why=$(why_unavailable)
    [[ -z $why ]] || die "unavailable: $why"
    ;;
  env)
    echo "TESTBED_DIR=$dir"
    echo "TESTBED_SSH=$dir/ssh"
    echo "TESTBED_RSYNC=$dir/rsync"
    echo "TESTBED_WORKSPACE=$dir/workspace"
    echo "TESTBED_HOSTS=$(cat "$dir/hosts" 2>/dev/null || echo 0)"
    ;;
  *)
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
