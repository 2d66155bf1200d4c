# On the first control-plane node: the keys this program manages in the cluster's kubelet configuration (the
# "kubelet" key of the kube-system ConfigMap kubelet-config, which kubeadm uploads at init and every node downloads at
# its join and at each `kubeadm upgrade node`) made the stack's: each wanted key set, each other managed key removed,
# everything kubeadm wrote left alone (render/kubelet_config.py). kubeadm's "Reconfiguring a kubeadm cluster" edits the
# same ConfigMap, then runs `kubeadm upgrade node phase kubelet-config` and a kubelet restart on each node, which
# components/kubelet_config.py does in waves. The edit is written with a server-side apply, then checked by kubeadm
# itself (`kubeadm upgrade node phase kubelet-config --dry-run` downloads and decodes it without changing anything);
# a document kubeadm cannot read is put back as it was. The document is compared and edited as YAML data by python3
# with PyYAML, which every node has (cloud-init, which prepared it, is written in it). Idempotent.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs WANTED_JSON MANAGED_KEYS[] FIELD_MANAGER
#@ include lib/admin-kubeconfig.sh
#@ include lib/kubeadm-configmap.sh

[[ -f $KUBECONFIG ]] || die "$KUBECONFIG is missing: kubeadm init has not completed on this node"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The ConfigMap and its key are kubeadm's (constants KubeletBaseConfigurationConfigMap "kubelet-config",
# KubeletBaseConfigurationConfigMapKey "kubelet").
read_kubeadm_document kubelet-config kubelet "$work/current"
printf '%s' "$WANTED_JSON" >"$work/wanted.json"
printf '%s\n' "${MANAGED_KEYS[@]}" >"$work/managed"

# Exit status 3: the managed keys are already the stack's.
status=0
python3 - "$work/current" "$work/wanted.json" "$work/managed" "$work/wanted" <<'PY' || status=$?
import json
import sys

import yaml

with open(sys.argv[1]) as source:
    document = yaml.safe_load(source)
with open(sys.argv[2]) as source:
    wanted = json.load(source)
with open(sys.argv[3]) as source:
    managed = source.read().split()
if not isinstance(document, dict) or document.get("kind") != "KubeletConfiguration":
    sys.exit("the kubelet-config ConfigMap does not hold a KubeletConfiguration")
current = {key: document[key] for key in managed if key in document}
if current == wanted:
    sys.exit(3)
for key in managed:
    document.pop(key, None)
document.update(wanted)
with open(sys.argv[4], "w") as target:
    yaml.safe_dump(document, target, default_flow_style=False, sort_keys=True)
PY
if ((status == 3)); then
  check_kubeadm_document kubelet-config kubeadm upgrade node phase kubelet-config --dry-run
  echo "kubelet-config already has the stack's settings"
  exit 0
fi
((status == 0)) || die "could not edit the kubelet configuration (python3 exited $status)"

write_kubeadm_document kubelet-config kubelet "$work/wanted" "$work/current" "$FIELD_MANAGER" \
  kubeadm upgrade node phase kubelet-config --dry-run
echo "kubelet-config now has the stack's settings"
