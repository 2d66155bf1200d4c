#!/usr/bin/env bash
# The program the kubelet serving approver's timer runs as root on a control-plane node
# (render/serving_approver.py has what it approves and the sources): every pending kubernetes.io/kubelet-serving
# request whose requester, subject, names, address and usages are exactly a node's of the inventory is approved;
# any other stays pending, and this log says why. Exits 1 when it could not list or approve.
set -euo pipefail
umask 077
#@ inputs CONFIG_DIR PKI_DIR ADMIN_CONF IDENTITY SIGNER VALIDITY_DAYS RENEW_DAYS TEMPLATE

inventory="$CONFIG_DIR/nodes"
kubeconfig="$CONFIG_DIR/kubeconfig"
certificate="$CONFIG_DIR/client.crt"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
## kubectl keeps its discovery cache under $HOME/.kube; the service may not write /root (ProtectHome).
export HOME="$work"

declare -A address=()
[[ -r $inventory ]] || { echo "no node inventory at $inventory" >&2; exit 1; }
while read -r node ip; do
  [[ -n ${node:-} ]] && address[$node]="$ip"
done <"$inventory"

## The identity: a client certificate from the cluster CA, as kubeadm issues admin.conf's, renewed ahead of its end.
## Written to the side and renamed, so a stopped run leaves the previous identity whole.
if [[ ! -s $kubeconfig || ! -s $certificate ]] \
  || ! openssl x509 -in "$certificate" -noout -checkend $((RENEW_DAYS * 86400)) >/dev/null; then
  server="$(kubectl --kubeconfig "$ADMIN_CONF" config view --raw -o 'jsonpath={.clusters[0].cluster.server}')"
  [[ $server == https://* ]] || { echo "no API server address in $ADMIN_CONF" >&2; exit 1; }
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/client.key" 2>/dev/null
  openssl req -new -key "$work/client.key" -subj "/CN=$IDENTITY" -out "$work/client.csr"
  printf '%s\n' 'basicConstraints = critical, CA:FALSE' 'keyUsage = critical, digitalSignature' \
    'extendedKeyUsage = clientAuth' >"$work/extensions"
  openssl x509 -req -in "$work/client.csr" -CA "$PKI_DIR/ca.crt" -CAkey "$PKI_DIR/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days "$VALIDITY_DAYS" -extfile "$work/extensions" \
    -out "$work/client.crt" 2>/dev/null
  ## kubectl writes the kubeconfig, the CA and the key pair embedded in it.
  kubectl config --kubeconfig "$work/kubeconfig" set-cluster cluster --server="$server" \
    --certificate-authority="$PKI_DIR/ca.crt" --embed-certs=true >/dev/null
  kubectl config --kubeconfig "$work/kubeconfig" set-credentials approver --client-certificate="$work/client.crt" \
    --client-key="$work/client.key" --embed-certs=true >/dev/null
  kubectl config --kubeconfig "$work/kubeconfig" set-context approver --cluster=cluster --user=approver >/dev/null
  kubectl config --kubeconfig "$work/kubeconfig" use-context approver >/dev/null
  install -m 0600 "$work/kubeconfig" "$CONFIG_DIR/.kubeconfig.new"
  install -m 0644 "$work/client.crt" "$CONFIG_DIR/.client.crt.new"
  mv -f "$CONFIG_DIR/.kubeconfig.new" "$kubeconfig"
  mv -f "$CONFIG_DIR/.client.crt.new" "$certificate"
  echo "issued this approver's identity $IDENTITY until $(openssl x509 -in "$certificate" -noout -enddate | cut -d= -f2)"
fi

## One line per request, as TEMPLATE prints them (render/serving_approver.py): fields end at US, list items at RS.
US=$'\x1f'
RS=$'\x1e'
kubectl --kubeconfig "$kubeconfig" get certificatesigningrequests --field-selector "spec.signerName=$SIGNER" \
  -o "go-template=$TEMPLATE" >"$work/requests"

failed=0
pass() { echo "$name: left pending: $*"; }
while IFS="$US" read -r name uid version signer user groups usages conditions request; do
  [[ $signer == "$SIGNER" && -z $conditions ]] || continue
  if [[ ! $name =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ || ! $uid =~ ^[0-9a-f-]{36}$ || ! $version =~ ^[0-9]+$ ]]; then
    pass "its name, uid or resourceVersion is not what the API server writes"
    continue
  fi
  if [[ ! $user =~ ^system:node:([a-z0-9]([-a-z0-9]*[a-z0-9])?)$ ]]; then
    pass "requested by $user, not by a node"
    continue
  fi
  node="${BASH_REMATCH[1]}"
  ip="${address[$node]:-}"
  if [[ -z $ip ]]; then
    pass "$node is not a node of the inventory"
    continue
  fi
  if [[ "$RS$groups" != *"${RS}system:nodes$RS"* ]]; then
    pass "the requester is not in the group system:nodes"
    continue
  fi
  ## The two sets kube-controller-manager signs for this signer (ValidateKubeletServingCSR); any other it would fail.
  usage_set="$(printf '%s' "$usages" | tr "$RS" '\n' | sort -u | paste -sd, -)"
  case "$usage_set" in
    "digital signature,server auth" | "digital signature,key encipherment,server auth") ;;
    *)
      pass "usages ${usages//$RS/, } are not a kubelet serving certificate's"
      continue
      ;;
  esac
  if ! printf '%s' "$request" | base64 -d >"$work/request.pem" 2>/dev/null \
    || ! openssl req -in "$work/request.pem" -noout -verify >/dev/null 2>&1; then
    pass "the request does not parse or its signature does not verify"
    continue
  fi
  subject="$(openssl req -in "$work/request.pem" -noout -subject -nameopt RFC2253)"
  if [[ $subject != "subject=CN=system:node:$node,O=system:nodes" ]]; then
    pass "its subject is ${subject#subject=}, not CN=system:node:$node,O=system:nodes"
    continue
  fi
  ## The names as openssl prints the one extension: a value it cannot print as exactly the node's own name and
  ## address, in either order or alone, is refused (an IP address is printed from its bytes, so no name can pose as
  ## one).
  openssl req -in "$work/request.pem" -noout -text >"$work/request.txt"
  extensions="$(grep -c 'X509v3 Subject Alternative Name' "$work/request.txt" || true)"
  names="$({ grep -A1 'X509v3 Subject Alternative Name' "$work/request.txt" || true; } | sed -n 2p \
    | sed -e 's/^ *//' -e 's/ *$//')"
  case "$names" in
    "DNS:$node, IP Address:$ip" | "IP Address:$ip, DNS:$node" | "DNS:$node" | "IP Address:$ip") ;;
    *) names="" ;;
  esac
  if [[ $extensions != 1 || -z $names ]]; then
    pass "its names are not exactly $node and $ip"
    continue
  fi
  ## The approval names the request read, by its uid (a precondition) and resourceVersion (a conflict if it changed),
  ## not whatever has the name by then: kubectl certificate approve reads it again. The approval subresource keeps
  ## the stored spec and takes only the conditions (strategy.go), so the body carries no spec.
  printf '{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"%s","uid":"%s","resourceVersion":"%s"},"status":{"conditions":[{"type":"Approved","status":"True","reason":"NodeNameAndAddress","message":"%s"}]}}\n' \
    "$name" "$uid" "$version" "the kubelet serving approver: $node's own name and address" >"$work/approval.json"
  if kubectl --kubeconfig "$kubeconfig" replace --raw \
    "/apis/certificates.k8s.io/v1/certificatesigningrequests/$name/approval" -f "$work/approval.json" \
    >/dev/null 2>"$work/error"; then
    echo "$name: approved for $node ($names)"
  elif grep -q '(Conflict)' "$work/error"; then
    echo "$name: changed since it was read (another control-plane node approved it, or it was made again); the next run reads it again"
  else
    echo "$name: could not approve for $node: $(head -c 500 "$work/error")" >&2
    failed=1
  fi
done <"$work/requests"
exit "$failed"
