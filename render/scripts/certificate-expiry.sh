# On the first control-plane node: one line per kubeadm-managed certificate and CA, NAME<TAB>EXPIRES, from
# `kubeadm certs check-expiration`'s text output, EXPIRES as it prints it (e.g. `Apr 09, 2027 09:17 UTC`).
## The text, whose columns are CERTIFICATE, EXPIRES in five words, RESIDUAL TIME, ..., is what every
## supported kubeadm prints; the structured output's flag was renamed between releases (--output in the
## 1.31 reference, --experimental-output later).
#@ include lib/strict.sh
#@ include lib/test-root.sh
ADMIN_CONF="$ROOT/etc/kubernetes/admin.conf"

[[ -s $ADMIN_CONF ]] || die "$ADMIN_CONF is missing: kubeadm init has not completed on this node"
if ! report="$(kubeadm certs check-expiration 2>&1)"; then
  echo "$report" >&2
  die "kubeadm certs check-expiration failed"
fi
lines="$(printf '%s\n' "$report" | awk '
  $1 == "CERTIFICATE" { table = 1; next }
  table && NF >= 7 && $3 ~ /^[0-9]+,$/ { printf "%s\t%s %s %s %s %s\n", $1, $2, $3, $4, $5, $6 }
  NF == 0 { table = 0 }')"
[[ -n $lines ]] || { echo "$report" >&2; die "no certificate found in the check-expiration report"; }
printf '%s\n' "$lines"
