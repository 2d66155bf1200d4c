# kubectl acts with the cluster admin's kubeconfig, which kubeadm init writes on the first control-plane
# node (render/linux_bootstrap.py ADMIN_CONF).
export KUBECONFIG="$ROOT/etc/kubernetes/admin.conf"
