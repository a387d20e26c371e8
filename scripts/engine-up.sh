#!/usr/bin/env bash
# Installs (Debian) and starts a Docker engine when none answers, registers gVisor's
# runsc under one runtime name per network posture (../shared/environment.md: runsc's
# own netstack fails on bridged networks with this engine), with --oci-seccomp so gVisor
# applies each container's derived seccomp filter too, and waits for the socket.
set -euo pipefail

SOCK=/var/run/docker.sock
answers() { curl -sf --max-time 3 --unix-socket "$SOCK" http://localhost/_ping >/dev/null 2>&1; }

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "engine-up: no Docker engine answers at $SOCK and installing one needs root" >&2
    exit 1
  fi
}

apt_updated=0
apt_install() {
  need_root
  if [ "$apt_updated" -eq 0 ]; then apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if [ "$(id -u)" -eq 0 ]; then
  command -v curl >/dev/null 2>&1 || apt_install curl ca-certificates
  command -v dockerd >/dev/null 2>&1 || apt_install docker.io
  command -v runsc >/dev/null 2>&1 || apt_install runsc || echo "engine-up: runsc unavailable; gVisor profiles will be refused" >&2
  command -v mmdebstrap >/dev/null 2>&1 || apt_install mmdebstrap
  # The tests watch cfh's system calls (AH-LIFE-2: the order of its fsyncs).
  command -v strace >/dev/null 2>&1 || apt_install strace
  getent group docker >/dev/null || groupadd -r docker
fi

register_runsc() {
  command -v runsc >/dev/null 2>&1 || return 0
  mkdir -p /etc/docker
  local want
  want=$(cat <<JSON
{
  "runtimes": {
    "runsc": { "path": "$(command -v runsc)", "runtimeArgs": ["--network=none", "--oci-seccomp"] },
    "runsc-host": { "path": "$(command -v runsc)", "runtimeArgs": ["--network=host", "--oci-seccomp"] }
  }
}
JSON
)
  if [ ! -f /etc/docker/daemon.json ] || ! grep -q -- '--oci-seccomp' /etc/docker/daemon.json; then
    # Ours from an earlier cfh (runsc registered without --oci-seccomp): replace it.
    if [ -f /etc/docker/daemon.json ] && [ -s /etc/docker/daemon.json ] && ! grep -q '"runsc-host"' /etc/docker/daemon.json; then
      echo "engine-up: /etc/docker/daemon.json exists without cfh's runsc runtimes; leaving it alone" >&2
      return 0
    fi
    printf '%s\n' "$want" > /etc/docker/daemon.json
    return 1 # changed
  fi
  return 0
}

changed=0
if [ "$(id -u)" -eq 0 ]; then register_runsc || changed=1; fi

if answers; then
  if [ "$changed" -eq 1 ] && pid=$(pidof dockerd); then kill -HUP $pid; sleep 1; fi
  echo "engine-up: engine answers at $SOCK"
  exit 0
fi

need_root
mkdir -p /var/log
# cgroup v1 and no systemd here: cgroupfs driver, run in the background.
nohup dockerd --exec-opt native.cgroupdriver=cgroupfs >/var/log/cfh-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
  if answers; then echo "engine-up: engine started"; exit 0; fi
  sleep 1
done
echo "engine-up: dockerd did not answer within 60 s; see /var/log/cfh-dockerd.log" >&2
tail -n 20 /var/log/cfh-dockerd.log >&2 || true
exit 1
