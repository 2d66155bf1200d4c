# Preflight, on one Proxmox node as proxmox.sshUser: can the provider's snippet upload write there? Reads only; prints
# key=value lines for tools/preflight to judge, and exits 0 unless bash itself fails.
## What the upload does (bpg/terraform-provider-proxmox v0.111.1, proxmox/ssh/client.go, the notes of #41): it writes
## <the storage's path>/snippets/<file> with `tee`, through `sudo -n` when the user is not root and `sudo -n pvesm
## apiinfo` answers (probeSudo); it makes no directory in that mode. pvesm refuses a user other than root ("please run
## as root": pve-common RESTEnvironment.pm), so a non-root user reads through the same sudo.
## `sudo -n -l CMD` lists CMD and exits 0 when the policy allows it without a password, 1 when it does not (sudo(8)).
#@ include lib/strict.sh
#@ inputs STORE FILE
uid=$(id -u)
echo "uid=$uid"
if [ "$uid" = 0 ]; then
  as_root=()
else
  as_root=(sudo -n)
fi
if out=$("${as_root[@]}" /usr/sbin/pvesm apiinfo 2>&1); then
  echo "pvesm=ok"
else
  echo "pvesm=refused $(printf '%s' "$out" | head -n 1)"
fi
if path=$("${as_root[@]}" /usr/sbin/pvesm path "$STORE:snippets/$FILE" 2>&1); then
  echo "path=$path"
  dir=$(dirname -- "$path")
  if [ -d "$dir" ]; then echo "dir=present"; else echo "dir=missing"; fi
  if [ "$uid" = 0 ]; then
    if [ -w "$dir" ]; then echo "write=ok"; else echo "write=refused"; fi
  elif sudo -n -l /usr/bin/tee "$dir/$FILE" >/dev/null 2>&1; then
    echo "write=ok"
    ## `sudo -l CMD` lists a command a rule allows only with a password too, when another rule is NOPASSWD: the rules
    ## themselves, for the tool to read their tags.
    sudo -n -l 2>/dev/null | sed 's/^/sudo_list=/' || true
  else
    echo "write=refused"
  fi
else
  echo "path=error $(printf '%s' "$path" | head -n 1)"
fi
