# On the first control-plane node: the apiServer, controllerManager and scheduler sections of the cluster's
# ClusterConfiguration (the kube-system ConfigMap kubeadm-config, key ClusterConfiguration) made the stack's, every
# other section (the Kubernetes version above all, which `kubeadm upgrade apply` moves) left as kubeadm wrote it.
# kubeadm writes every control-plane node's static Pod manifests from this document: at `join --control-plane`, at
# `upgrade apply` and `upgrade node` (which fetch it from the cluster, cmd/kubeadm/app/cmd/upgrade), and at
# control-plane-node.sh's `kubeadm upgrade node phase control-plane`. kubeadm's "Reconfiguring a kubeadm cluster"
# edits the same ConfigMap. The edit is checked by kubeadm itself (`kubeadm upgrade node phase control-plane
# --dry-run` reads and defaults it, writes nothing); a document kubeadm refuses is put back as it was.
# The document is YAML; python3 with PyYAML is on every node (cloud-init, which prepared it, is written in it and
# reads YAML with it), so the sections are compared and replaced as data, not as text. Idempotent.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs COMPONENTS_JSON FIELD_MANAGER
#@ include lib/admin-kubeconfig.sh
#@ include lib/kubeadm-configmap.sh

[[ -f $KUBECONFIG ]] || die "$KUBECONFIG is missing: kubeadm init has not completed on this node"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
read_kubeadm_document kubeadm-config ClusterConfiguration "$work/current"
printf '%s' "$COMPONENTS_JSON" >"$work/components.json"

# Exit status 3: the sections are already the stack's.
status=0
python3 - "$work/current" "$work/components.json" "$work/wanted" <<'PY' || status=$?
import json
import sys

import yaml

with open(sys.argv[1]) as source:
    document = yaml.safe_load(source)
with open(sys.argv[2]) as source:
    components = json.load(source)
if not isinstance(document, dict) or document.get("kind") != "ClusterConfiguration":
    sys.exit("the kubeadm-config ConfigMap does not hold a ClusterConfiguration")
if all(document.get(key) == value for key, value in components.items()):
    sys.exit(3)
document.update(components)
with open(sys.argv[3], "w") as target:
    yaml.safe_dump(document, target, default_flow_style=False, sort_keys=True)
PY
if ((status == 3)); then
  check_kubeadm_document kubeadm-config \
    kubeadm upgrade node phase control-plane --dry-run --certificate-renewal=false --etcd-upgrade=false
  echo "the ClusterConfiguration's control-plane sections are already the stack's"
  exit 0
fi
((status == 0)) || die "could not edit the ClusterConfiguration (python3 exited $status)"

write_kubeadm_document kubeadm-config ClusterConfiguration "$work/wanted" "$work/current" "$FIELD_MANAGER" \
  kubeadm upgrade node phase control-plane --dry-run --certificate-renewal=false --etcd-upgrade=false
echo "the ClusterConfiguration's control-plane sections are now the stack's"
