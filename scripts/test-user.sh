#!/usr/bin/env bash
# The integration tests also run cfh as an ordinary user in the docker group.
# When we are root, make sure that user exists.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || exit 0
getent group docker >/dev/null || groupadd -r docker
if ! id cfh-tester >/dev/null 2>&1; then
  useradd --create-home --shell /bin/bash --groups docker cfh-tester
fi
id -nG cfh-tester | grep -qw docker || usermod -aG docker cfh-tester
