"""The machines tier: the Linux VMs on Proxmox VE and the Windows VMs on Hyper-V (nodes.py), the SSH connections
that reach them (connections.py), and what a node's lifecycle flags do to every command that dials it (lifecycle.py)."""
