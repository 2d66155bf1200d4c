"""The cluster tier: kubeadm init and the joins (bootstrap.py), the control plane's settings (control_plane.py), and the
operations that roll through the nodes in waves (waves.py): the upgrade, the kubelet configuration, the VM-setting
restarts."""
