#!/usr/bin/env bash
# Soak run (outside CI): produce and consume through kadmit for SOAK_SECONDS (default 1800)
# with a policy change every SOAK_POLICY_EVERY seconds, recording kadmit's RSS and open fds.
# See docs/soak.md. Exit 0 when every produced record was consumed and kadmit is still up.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec python3 "$here/soak.py" "$@"
