# On the Proxmox node that stores a Linux node's cloud-init snippet (render/host_keys.py): make the snippet readable
# by root only, since it holds the node's private SSH host key. The provider uploads it over SFTP with the SSH
# server's default mode (0644 under the usual umask); Proxmox reads it as root when it builds the VM's cloud-init
# drive. `pvesm path` names the file of a storage volume.
#@ include lib/strict.sh
#@ inputs VOLUME

command -v pvesm >/dev/null || die "pvesm not found: this step runs on a Proxmox node"
path="$(pvesm path "$VOLUME")" || die "no volume $VOLUME on $(hostname)"
[[ -f $path ]] || die "$VOLUME ($path) is not a file"
chmod 0600 "$path"
echo "$VOLUME: root only ($path)"
