# Strict mode and `die`: every bash script starts with this.
set -euo pipefail
umask 077

die() {
  echo "error: $*" >&2
  exit 1
}
