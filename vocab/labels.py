"""The node labels and the Windows taint every layer schedules by: one vocabulary, one place."""

OS_LABEL = "kubernetes.io/os"                              # set by every kubelet
WINDOWS_BUILD_LABEL = "node.kubernetes.io/windows-build"   # set by the Windows kubelet (https://kubernetes.io/docs/concepts/windows/user-guide/)
ZONE_LABEL = "topology.kubernetes.io/zone"                 # registration label, render/kubeadm.py
DISTRO_LABEL = "node.os.distro"                            # registration label, render/kubeadm.py
WORKER_ROLE_LABEL = "node-role.kubernetes.io/worker"
CONTROL_PLANE_ROLE_LABEL = "node-role.kubernetes.io/control-plane"  # kubeadm sets it; the patch never does

# Windows nodes register with this taint (components/cluster/bootstrap.py, through kubeadm's
# nodeRegistration.taints to --register-with-taints), so no pod without a matching toleration - i.e.
# every Linux pod - can land on them.
WINDOWS_TAINT_KEY = "node-role.kubernetes.io/windows"
WINDOWS_TAINT_VALUE = "true"
WINDOWS_TAINT_EFFECT = "NoSchedule"

# kubeadm taints control-plane nodes with this key (NoSchedule); system components that may run there
# tolerate it.
CONTROL_PLANE_TAINT_KEY = "node-role.kubernetes.io/control-plane"
