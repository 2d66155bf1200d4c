#!/usr/bin/env bash
# The program the kubelet serving approver's timer runs as root on a control-plane node
# (render/serving_approver.py has what it approves and the sources): of each node's newest MAX_PER_NODE pending
# kubernetes.io/kubelet-serving requests, one that is, byte for byte, the request the node's kubelet makes for its own
# name and address in the inventory is approved; any other stays pending, and this log says why. Exits 1 when it
# could not list or approve.
set -euo pipefail
umask 077
#@ inputs CONFIG_DIR PKI_DIR ADMIN_CONF IDENTITY SIGNER VALIDITY_DAYS RENEW_DAYS TEMPLATE REQUEST_TIMEOUT MAX_PER_NODE
#@ include lib/client-identity.sh

inventory="$CONFIG_DIR/nodes"
kubeconfig="$CONFIG_DIR/kubeconfig"
certificate="$CONFIG_DIR/client.crt"
issued_for="$CONFIG_DIR/issued-for"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
## kubectl keeps its discovery cache under $HOME/.kube; the service may write only its own directories.
export HOME="$work"

declare -A address=()
[[ -r $inventory ]] || { echo "no node inventory at $inventory" >&2; exit 1; }
while read -r node ip; do
  [[ -n ${node:-} ]] && address[$node]="$ip"
done <"$inventory"

## The identity: a client certificate from the cluster CA, as kubeadm issues admin.conf's, issued again ahead of its
## end and whenever the API server's address or the CA is not the one it was issued for. Written to the side and
## renamed, so a stopped run leaves the previous identity whole.
server="$(kubectl --kubeconfig "$ADMIN_CONF" config view --raw -o 'jsonpath={.clusters[0].cluster.server}')"
[[ $server == https://* ]] || { echo "no API server address in $ADMIN_CONF" >&2; exit 1; }
ca_digest="$(sha256sum <"$PKI_DIR/ca.crt")"
wanted="$server ${ca_digest%% *}"
if [[ ! -s $kubeconfig || ! -s $certificate || "$(cat "$issued_for" 2>/dev/null)" != "$wanted" ]] \
  || ! openssl x509 -in "$certificate" -noout -checkend $((RENEW_DAYS * 86400)) >/dev/null; then
  issue_client_kubeconfig "$work" "$IDENTITY" "$VALIDITY_DAYS" "$server" approver
  install -m 0600 "$work/kubeconfig" "$CONFIG_DIR/.kubeconfig.new"
  install -m 0644 "$work/client.crt" "$CONFIG_DIR/.client.crt.new"
  mv -f "$CONFIG_DIR/.kubeconfig.new" "$kubeconfig"
  mv -f "$CONFIG_DIR/.client.crt.new" "$certificate"
  printf '%s\n' "$wanted" >"$issued_for"
  echo "issued this approver's identity $IDENTITY for $server until $(openssl x509 -in "$certificate" -noout -enddate | cut -d= -f2)"
fi

## hex < bytes: lower-case hex digits, one line. der TAG HEX: one DER element, its length in the short or the long
## form (X.690 8.1.3).
hex() { od -An -tx1 -v | tr -d ' \n'; }
der() {
  local length=$((${#2} / 2))
  if ((length < 128)); then
    printf '%s%02x%s' "$1" "$length" "$2"
  elif ((length < 256)); then
    printf '%s81%02x%s' "$1" "$length" "$2"
  else
    printf '%s82%04x%s' "$1" "$length" "$2"
  fi
}

## kubelet_request NODE IP SPKI: echoes, as hex, each CertificationRequestInfo the node's kubelet may send with the
## public key SPKI (DER, hex): what Go's x509.CreateCertificateRequest writes for the kubelet's template (its
## subject's O, then its CN, PrintableStrings; one extensionRequest attribute holding one non-critical
## subjectAltName: the DNS name, then the IPv4 address, or one of them; render/serving_approver.py). Nothing else is
## approved: the decision is on the bytes kube-controller-manager signs, not on a printout of them.
kubelet_request() {
  local o cn dns ip names attributes
  o="$(der 31 "$(der 30 "060355040a$(der 13 "$(printf '%s' system:nodes | hex)")")")"
  cn="$(der 31 "$(der 30 "0603550403$(der 13 "$(printf '%s' "system:node:$1" | hex)")")")"
  dns="$(der 82 "$(printf '%s' "$1" | hex)")"
  # shellcheck disable=SC2086 # the address's four numbers, one argument each
  ip="$(der 87 "$(IFS=. && printf '%02x' $2)")"
  for names in "$dns$ip" "$dns" "$ip"; do
    attributes="$(der a0 "$(der 30 "06092a864886f70d01090e$(der 31 "$(der 30 "$(der 30 "0603551d11$(der 04 "$(der 30 "$names")")")")")")")"
    der 30 "020100$(der 30 "$o$cn")$3$attributes"
    echo
  done
}

## review NODE USAGES REQUEST: returns 0 for a request of NODE (a node of the inventory) to approve, and echoes why
## not otherwise. Every step that can fail on hostile input is checked here, so one request never stops the run.
review() {
  local node=$1 usages=$2 request=$3 ip usage_set pem der spki header length expected
  ip="${address[$node]}"
  ## The two sets kube-controller-manager signs for this signer (ValidateKubeletServingCSR); any other it would fail.
  usage_set="$(printf '%s' "$usages" | tr "$RS" '\n' | sort -u | paste -sd, -)" || usage_set=""
  case "$usage_set" in
    '"digital signature","server auth"' | '"digital signature","key encipherment","server auth"') ;;
    *)
      echo "usages ${usages//$RS/ } are not a kubelet serving certificate's"
      return 1
      ;;
  esac
  ## Exactly one PEM block, as the API server and kube-controller-manager read only the first (Go's pem.Decode), and
  ## no NUL byte, which bash would drop from what it compares.
  if ! printf '%s' "$request" | base64 -d >"$work/request.pem" 2>/dev/null \
    || [[ "$(tr -d '\000' <"$work/request.pem" | wc -c)" != "$(wc -c <"$work/request.pem")" ]]; then
    echo "the request is not one PEM certificate request"
    return 1
  fi
  pem="$(cat "$work/request.pem")"
  if [[ ! $pem =~ $PEM_REQUEST ]] || ! printf '%s' "${BASH_REMATCH[1]}" | base64 -d >"$work/request.der" 2>/dev/null; then
    echo "the request is not one PEM certificate request"
    return 1
  fi
  der="$(hex <"$work/request.der")"
  if [[ -z $der ]] || ! openssl req -inform DER -in "$work/request.der" -noout -verify >/dev/null 2>&1; then
    echo "the request does not parse or its signature does not verify"
    return 1
  fi
  spki="$(openssl req -inform DER -in "$work/request.der" -noout -pubkey 2>/dev/null \
    | openssl pkey -pubin -outform DER 2>/dev/null | hex)" || spki=""
  ## One DER SEQUENCE of definite length that is all of the request (Go refuses anything else).
  case "${der:0:4}" in
    3081) header=6 length=$((16#${der:4:2})) ;;
    3082) header=8 length=$((16#${der:4:4})) ;;
    30[0-7]?) header=4 length=$((16#${der:2:2})) ;;
    *) header=0 length=-1 ;;
  esac
  if ((header == 0 || header + 2 * length != ${#der})); then
    echo "the request is not one DER sequence"
    return 1
  fi
  while read -r expected; do
    if [[ -n $spki && ${der:header:${#expected}} == "$expected" ]]; then
      return 0
    fi
  done < <(kubelet_request "$node" "$ip" "$spki")
  echo "it is not the request a kubelet makes for $node (CN system:node:$node, O system:nodes, names $node and $ip, nothing else)"
  return 1
}

## One line per request, as TEMPLATE prints them (render/serving_approver.py): fields end at US, list items at RS, and
## every field is Go-quoted, so no character of any (a request's name included, which the API server hardly
## restricts) can start another line or field. Newest first: a node's kubelet waits on its newest request.
US=$'\x1f'
RS=$'\x1e'
PEM_REQUEST=$'^-----BEGIN CERTIFICATE REQUEST-----\n([A-Za-z0-9+/=\n]+)-----END CERTIFICATE REQUEST-----\n?$'
kubectl --kubeconfig "$kubeconfig" --request-timeout="$REQUEST_TIMEOUT" get certificatesigningrequests \
  --field-selector "spec.signerName=$SIGNER" -o "go-template=$TEMPLATE" >"$work/listing"
LC_ALL=C sort -s -t "$US" -k4,4r "$work/listing" >"$work/requests"

failed=0
declare -A reviewed=() passed_over=()
while IFS="$US" read -r name uid version created signer user groups usages conditions request; do
  [[ $signer == "\"$SIGNER\"" && -z $conditions ]] || continue
  if [[ ! $name =~ ^\"([a-z0-9]([-a-z0-9.]*[a-z0-9])?)\"$ ]]; then
    echo "a request left pending: its name is not a DNS subdomain"
    continue
  fi
  name="${BASH_REMATCH[1]}"
  if [[ ! $uid =~ ^\"([0-9a-f-]{36})\"$ ]]; then
    echo "$name: left pending: its uid is not what the API server writes"
    continue
  fi
  uid="${BASH_REMATCH[1]}"
  if [[ ! $version =~ ^\"([0-9]+)\"$ || ! $created =~ ^\"[0-9TZ:.+-]+\"$ || ! $request =~ ^\"([A-Za-z0-9+/=]+)\"$ ]]; then
    echo "$name: left pending: its resourceVersion, creation time or request is not what the API server writes"
    continue
  fi
  request="${BASH_REMATCH[1]}"
  version="${version//\"/}"
  if [[ ! $user =~ ^\"system:node:([a-z0-9]([-a-z0-9]*[a-z0-9])?)\"$ ]]; then
    echo "$name: left pending: requested by $user, not by a node"
    continue
  fi
  node="${BASH_REMATCH[1]}"
  if [[ -z ${address[$node]:-} ]]; then
    echo "$name: left pending: $node is not a node of the inventory"
    continue
  fi
  if [[ "$RS$groups" != *"${RS}\"system:nodes\"$RS"* ]]; then
    echo "$name: left pending: the requester is not in the group system:nodes"
    continue
  fi
  ## A node's newest few only: one that makes requests by the thousand cannot hold up the others' (each costs openssl).
  reviewed[$node]=$((${reviewed[$node]:-0} + 1))
  if ((reviewed[$node] > MAX_PER_NODE)); then
    passed_over[$node]=$((${passed_over[$node]:-0} + 1))
    continue
  fi
  if ! why="$(review "$node" "$usages" "$request")"; then
    echo "$name: left pending: $why"
    continue
  fi
  ## The approval names the request read, by its uid (a precondition) and resourceVersion (a conflict if it changed),
  ## not whatever has the name by then: kubectl certificate approve reads it again. The approval subresource keeps
  ## the stored spec and takes only the conditions (strategy.go), so the body carries no spec.
  printf '{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"%s","uid":"%s","resourceVersion":"%s"},"status":{"conditions":[{"type":"Approved","status":"True","reason":"NodeNameAndAddress","message":"%s"}]}}\n' \
    "$name" "$uid" "$version" "the kubelet serving approver: $node's own name and address" >"$work/approval.json"
  if kubectl --kubeconfig "$kubeconfig" --request-timeout="$REQUEST_TIMEOUT" replace --raw \
    "/apis/certificates.k8s.io/v1/certificatesigningrequests/$name/approval" -f "$work/approval.json" \
    >/dev/null 2>"$work/error"; then
    echo "$name: approved for $node ($node, ${address[$node]})"
  elif grep -q '(Conflict)' "$work/error"; then
    echo "$name: changed since it was read (another control-plane node approved it, or it was made again); the next run reads it again"
  else
    echo "$name: could not approve for $node: $(head -c 500 "$work/error")" >&2
    failed=1
  fi
done <"$work/requests"
for node in "${!passed_over[@]}"; do
  echo "$node has ${passed_over[$node]} more pending requests than the newest $MAX_PER_NODE; they were not read"
done
exit "$failed"
