"""The preflight's checks of the Proxmox VE site through its API, with the stack's token. Every call is an HTTP GET
(read-only by the API's own definition), bounded by a timeout; the Proxmox nodes are read in parallel.

The API's shapes and permission rules, with their sources (proxmox/pve-docs api-viewer apidata.js at 9.1.3, the Perl
API of pve-manager, pve-access-control, qemu-server and pve-storage; the notes of #41):

* Every answer is `{"data": ...}` (a node's network listing adds `changes` while /etc/network/interfaces.new is
  pending); a refused parameter is a 400 with `errors` by parameter; booleans come as 0/1 (Perl), some numbers as
  strings (`memory`); an API token goes in `Authorization: PVEAPIToken=USER@REALM!TOKENID=UUID` (pveum.adoc), and a
  refused token is a 401.
* `GET /access/permissions?path=P` without `userid` answers the token's own effective privileges on P (for a
  privilege-separated token, the intersection of its user's and its own): a privilege is granted when its key is
  there, whatever its value (the value is the propagate flag).
* Listings leave out what the token may not see (cluster/resources without VM.Audit, a node's storages without
  Datastore.Audit, its bridges without SDN.Use or SDN.Audit): "missing" says so.
* A template is `template: 1` in its config, its guest agent is the `agent` property string's `enabled` (its default
  key), and its cloud-init drive is an ide/sata/scsi drive whose volume matches qemu-server's drive_is_cloudinit
  (`[:/](vm-N-)?cloudinit(.fmt)?$`) with `media=cdrom`.
* PVE 9 replaced VM.Monitor by VM.GuestAgent.* (pve-access-control 9.0.2): the guest agent's addresses need
  VM.GuestAgent.Audit there, VM.Monitor before.
"""
from __future__ import annotations

import json
import re
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from config.model import StackSpec
from tools.preflight.results import FAIL, PASS, WARN, Result

TIMEOUT_SECONDS = 15          # per call; a refused token answers after the server's 3 s delay
GIB = 1024 ** 3
# The privileges the program's resources use on each kind of path (the bpg provider's calls for a full clone,
# configuration, resize, power, the guest agent's addresses and snippet uploads; the notes of #41, 9b).
VM_PRIVILEGES = ("VM.Audit", "VM.Clone", "VM.Allocate", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Disk",
                 "VM.Config.Network", "VM.Config.Cloudinit", "VM.Config.CDROM", "VM.Config.Options",
                 "VM.Config.HWType", "VM.PowerMgmt")
DISK_PRIVILEGES = ("Datastore.Audit", "Datastore.AllocateSpace")
SNIPPET_PRIVILEGES = ("Datastore.Audit", "Datastore.Allocate")     # the provider reads GET /storage/{id} for its path
# Storage types that keep files, where snippets can live (pve-storage: the plugins whose content types include
# snippets: dir, nfs, cifs, cephfs, glusterfs, btrfs).
SNIPPET_STORAGE_TYPES = ("dir", "nfs", "cifs", "cephfs", "glusterfs", "btrfs")
BRIDGE_PRIVILEGES = ("SDN.Use",)
NODE_PRIVILEGES = ("Sys.Audit",)
_CLOUDINIT = re.compile(r"[:/](?:vm-\d+-)?cloudinit(?:\.(?:raw|qcow2|vmdk))?$")
_DRIVE_KEY = re.compile(r"^(?:ide|sata|scsi)\d+$")


class ApiError(Exception):
    def __init__(self, status: int | None, message: str):
        super().__init__(message)
        self.status = status


class ProxmoxApi:
    """GET requests to the Proxmox VE API with an API token; TLS checked against the system's CAs (or `ca_file`)
    unless `insecure`, as the provider checks it."""

    def __init__(self, endpoint: str, token: str, insecure: bool = False, ca_file: str | None = None,
                 timeout: float = TIMEOUT_SECONDS):
        self.base = endpoint.rstrip("/") + "/api2/json"
        self.token = token
        self.timeout = timeout
        self.context = ssl.create_default_context(cafile=ca_file)
        if insecure:
            self.context.check_hostname = False
            self.context.verify_mode = ssl.CERT_NONE

    def get(self, resource: str, **params: str) -> Any:
        return self.get_body(resource, **params)["data"]

    def get_body(self, resource: str, **params: str) -> dict[str, Any]:
        """The whole answer, `data` and what comes beside it (a node's network listing says `changes`)."""
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        request = urllib.request.Request(self.base + resource + query, method="GET",
                                         headers={"Authorization": f"PVEAPIToken={self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.context) as response:
                body: dict[str, Any] = json.loads(response.read())
                return body
        except urllib.error.HTTPError as error:
            text = error.read().decode(errors="replace")
            try:
                body = json.loads(text)
                message = "; ".join(str(v) for v in (body.get("errors") or {}).values()) or body.get("message") \
                    or error.reason
            except ValueError:
                message = error.reason
            raise ApiError(error.code, f"HTTP {error.code}: {str(message).strip()}") from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise ApiError(None, f"{self.base}: {getattr(error, 'reason', error)}") from None


def _true(value: Any) -> bool:
    """A Proxmox boolean: 0/1 from Perl, or 1/on/yes/true in property strings (pve-common parse_boolean)."""
    return str(value).strip().lower() in ("1", "on", "yes", "true")


def agent_enabled(value: Any) -> bool:
    """The `agent` property string's `enabled` (its default key): "1", "enabled=1", "1,fstrim_cloned_disks=1"."""
    for item in str(value or "").split(","):
        key, sep, val = item.partition("=")
        if not sep:
            return _true(key)
        if key.strip() == "enabled":
            return _true(val)
    return False


def cloudinit_drive(config: dict[str, Any]) -> str | None:
    """The config key of the template's cloud-init drive, or None."""
    for key, value in sorted(config.items()):
        if _DRIVE_KEY.match(key) and isinstance(value, str):
            volume, *options = value.split(",")
            if _CLOUDINIT.search(volume) and "media=cdrom" in options:
                return key
    return None


def _role_fix(path: str, privileges: Iterable[str], token: str) -> str:
    user = token.split("!", 1)[0]
    privs = " ".join(privileges)
    # An ACL on a deeper path replaces what the user inherits there (pveum.adoc), so the fix adds to the role that
    # already reaches the path rather than granting a role of the missing privileges alone.
    return (f"add {privs} to the role the user {user} (and a privilege-separated token) has on {path} or above it: "
            f"`pveum role modify <role> --append 1 --privs \"{privs}\"` (`pveum user token permissions {user} "
            f"{token.split('=', 1)[0].split('!', 1)[-1]} --path {path}` shows what it has)")


def api_host(spec: StackSpec) -> str:
    return f"Proxmox API {urllib.parse.urlparse(spec.proxmox.endpoint).netloc}"


def used_nodes(spec: StackSpec) -> list[str]:
    used = {n.proxmox_node for n in spec.linux_nodes} | {t.node for t in spec.proxmox.templates}
    return [n.name for n in spec.proxmox.nodes if n.name in used]


def check_api(spec: StackSpec, api: ProxmoxApi) -> tuple[list[Result], int | None]:
    """The API answers the token; the release's major version (None when it does not)."""
    host = api_host(spec)
    try:
        version = api.get("/version")
    except ApiError as error:
        fix = ("check proxmoxApiToken (USER@REALM!TOKENID=UUID; `pveum user token list <user>` on a node)"
               if error.status == 401 else
               "check proxmox.endpoint and that this machine reaches it (and its certificate: proxmox.insecure only "
               "for one you cannot replace)")
        return [Result(host, "API and token", FAIL, str(error), fix)], None
    release = str(version.get("release") or version.get("version") or "")
    major = int(release.split(".")[0]) if release.split(".")[0].isdigit() else None
    return [Result(host, "API and token", PASS, f"Proxmox VE {release}, token accepted")], major


def wanted_privileges(spec: StackSpec) -> dict[str, tuple[str, ...]]:
    """Each path Proxmox checks for the program's calls, and the privileges it checks there: the template's and each
    new VM's own path (a clone is checked on both, `/vms/<id>`, where inheritance and a deeper ACL decide), each
    datastore, each bridge, or its VLAN where the NIC is tagged (`/sdn/zones/localnetwork/<bridge>/<tag>`), and
    each node."""
    wanted: dict[str, tuple[str, ...]] = {}
    for template in spec.proxmox.templates:
        wanted[f"/vms/{template.vm_id}"] = ("VM.Audit", "VM.Clone")
    for node in spec.linux_nodes:
        wanted[f"/vms/{node.vm_id}"] = VM_PRIVILEGES
    d = spec.proxmox.datastores
    for store in (d.vm_disks, d.cloud_init):
        wanted[f"/storage/{store}"] = DISK_PRIVILEGES
    wanted[f"/storage/{d.snippets}"] = tuple(sorted({*wanted.get(f"/storage/{d.snippets}", ()), *SNIPPET_PRIVILEGES}))
    networks = [spec.network.nodes]
    if spec.network.management is not None and any(n.management_ip for n in spec.linux_nodes):
        networks.append(spec.network.management)
    for vlan in networks:
        if vlan.proxmox_bridge is not None:
            tag = f"/{vlan.vlan_id}" if vlan.proxmox_vlan_aware and vlan.vlan_id is not None else ""
            wanted[f"/sdn/zones/localnetwork/{vlan.proxmox_bridge}{tag}"] = BRIDGE_PRIVILEGES
    for node_name in used_nodes(spec):
        wanted[f"/nodes/{node_name}"] = NODE_PRIVILEGES
    return wanted


def check_privileges(spec: StackSpec, api: ProxmoxApi, token: str, major: int | None) -> list[Result]:
    host = api_host(spec)
    # Reading the guest agent's addresses: VM.Monitor before PVE 9; there VM.GuestAgent.Audit or .Unrestricted.
    agent = ("VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted") if (major or 0) >= 9 else ("VM.Monitor",)
    new_vms = {f"/vms/{n.vm_id}" for n in spec.linux_nodes}
    results = []
    for path, privileges in wanted_privileges(spec).items():
        try:
            granted = api.get("/access/permissions", path=path).get(path) or {}
        except ApiError as error:
            results.append(Result(host, f"privileges on {path}", FAIL, str(error), "check the token"))
            continue
        missing = [p for p in privileges if p not in granted]
        if path in new_vms and not any(p in granted for p in agent):
            missing.append(agent[0])
        if missing:
            results.append(Result(host, f"privileges on {path}", FAIL, f"the token lacks {', '.join(missing)}",
                                  _role_fix(path, missing, token)))
        else:
            results.append(Result(host, f"privileges on {path}", PASS, "granted"))
    return results


def visible_vms(api: ProxmoxApi) -> dict[int, dict[str, Any]]:
    """The cluster's VMs the token may see, by id (none when it may not list them)."""
    try:
        return {int(r["vmid"]): r for r in api.get("/cluster/resources", type="vm") if "vmid" in r}
    except ApiError:
        return {}


def check_vm_ids(spec: StackSpec, api: ProxmoxApi, visible: dict[int, dict[str, Any]]) -> list[Result]:
    """Each VM id free in the whole cluster (`GET /cluster/nextid?vmid=N`, which reads the cluster's VM list whatever
    the token may see: pve-manager PVE/API2/Cluster.pm nextid, "VM N already exists"), or this stack's VM of that
    name, which needs the token to see it (cluster/resources leaves out VMs without VM.Audit)."""
    host = api_host(spec)
    results = []
    for node in spec.linux_nodes:
        check = f"VM id {node.vm_id} ({node.name})"
        try:
            api.get("/cluster/nextid", vmid=str(node.vm_id))
            results.append(Result(host, check, PASS, "free"))
            continue
        except ApiError as error:
            if error.status != 400:
                results.append(Result(host, check, FAIL, str(error), "check the token"))
                continue
        found = visible.get(node.vm_id)
        if found is None:
            results.append(Result(host, check, FAIL, "taken by a VM the token cannot see",
                                  f"give {node.name} another vmId in the stack, or find VM {node.vm_id} "
                                  "(`qm list` on each node) and remove it"))
        elif found.get("name") == node.name and found.get("type") == "qemu" and not _true(found.get("template", 0)):
            results.append(Result(host, check, PASS, f"already this stack's VM {node.name} on {found.get('node')}"))
        elif not found.get("name"):
            results.append(Result(host, check, WARN, f"taken by a VM whose name is not known yet, on "
                                                     f"{found.get('node', '?')}",
                                  f"if it is not {node.name}, give {node.name} another vmId"))
        else:
            what = "template" if _true(found.get("template", 0)) else found.get("type", "VM")
            results.append(Result(host, check, FAIL, f"taken by {what} {found['name']} on {found.get('node', '?')}",
                                  f"give {node.name} another vmId in the stack, or remove that VM"))
    return results


def check_node(spec: StackSpec, api: ProxmoxApi, node: str, online: dict[str, str], existing: set[int]) -> list[Result]:
    """One Proxmox node: online, its templates, its datastores and bridges."""
    status = online.get(node)
    if status != "online":
        return [Result(node, "online", FAIL, f"the cluster lists it as {status or 'missing'}",
                       "check `pvecm nodes` and the node name in proxmox.nodes (as `pvecm nodes` prints it)")]
    results = [Result(node, "online", PASS, "online")]
    results += _templates(spec, api, node)
    results += _datastores(spec, api, node, existing)
    results += _bridges(spec, api, node)
    return results


def _templates(spec: StackSpec, api: ProxmoxApi, node: str) -> list[Result]:
    results = []
    for template in (t for t in spec.proxmox.templates if t.node == node):
        check = f"template {template.vm_id} ({template.distro})"
        try:
            config = api.get(f"/nodes/{node}/qemu/{template.vm_id}/config")
        except ApiError as error:
            results.append(Result(node, check, FAIL, f"not readable on {node}: {error}",
                                  f"make the {template.distro} cloud-init template on {node} (docs/images.md), or "
                                  "fix proxmox.templates[].vmId and node"))
            continue
        if not _true(config.get("template", 0)):
            results.append(Result(node, check, FAIL, "is not a template", f"qm template {template.vm_id}"))
            continue
        # The provider turns the agent on and makes the cloud-init drive on every clone, so a template without them
        # still clones; the agent's setting says the image was made for it (docs/images.md installs the agent).
        problems, fixes = [], []
        if not agent_enabled(config.get("agent")):
            problems.append("has the QEMU guest agent option off (is the agent in the image?)")
            fixes.append(f"qm set {template.vm_id} --agent enabled=1, with qemu-guest-agent installed in the image")
        if cloudinit_drive(config) is None:
            problems.append("has no cloud-init drive (the clones get one)")
            fixes.append(f"qm set {template.vm_id} --ide2 {spec.proxmox.datastores.cloud_init}:cloudinit")
        if problems:
            results.append(Result(node, check, WARN, ", ".join(problems), "; ".join(fixes)))
        else:
            results.append(Result(node, check, PASS, f"a template with the guest agent and {cloudinit_drive(config)} "
                                                      "as its cloud-init drive"))
    return results


def _datastores(spec: StackSpec, api: ProxmoxApi, node: str, existing: set[int]) -> list[Result]:
    d = spec.proxmox.datastores
    try:
        stores = {s["storage"]: s for s in api.get(f"/nodes/{node}/storage")}
    except ApiError as error:
        return [Result(node, "datastores", FAIL, str(error), "grant Datastore.Audit on /storage")]
    wanted_gb = sum(n.disk_gb for n in spec.linux_nodes if n.proxmox_node == node and n.vm_id not in existing)
    results: list[Result] = []
    for store, content, need in ((d.vm_disks, "images", wanted_gb), (d.cloud_init, "images", 0), (d.snippets, "snippets", 0)):
        check = f"datastore {store} ({content})"
        if any(r.check == check for r in results):
            continue
        info = stores.get(store)
        if info is None:
            results.append(Result(node, check, FAIL, f"{store} is not a storage of {node} that the token can see",
                                  f"check proxmox.datastores and `pvesm status` on {node}; grant Datastore.Audit on "
                                  f"/storage/{store}"))
            continue
        contents = {c.strip() for c in str(info.get("content", "")).split(",") if c.strip()} - {"none"}
        kind = str(info.get("type", ""))
        if not (_true(info.get("active", 0)) and _true(info.get("enabled", 1))):
            results.append(Result(node, check, FAIL, f"{store} is not active on {node}",
                                  f"`pvesm status` on {node} says why: disabled (`pvesm set {store} --disable 0`), "
                                  "limited to other nodes (its `nodes`), or failing to activate"))
        elif content not in contents and content == "snippets" and kind not in SNIPPET_STORAGE_TYPES:
            results.append(Result(node, check, FAIL, f"{store} is a {kind} storage, which cannot hold snippets",
                                  f"set proxmox.datastores.snippets to a {'/'.join(SNIPPET_STORAGE_TYPES)} storage "
                                  "(e.g. local)"))
        elif content not in contents:
            listed = ",".join(sorted(contents | {content}))
            results.append(Result(node, check, FAIL, f"{store} does not hold {content} (its content: "
                                                     f"{','.join(sorted(contents)) or 'none'})",
                                  f"pvesm set {store} --content {listed}"))
        elif need and int(info.get("avail", 0)) < need * GIB:
            # A warning: thin pools over-commit by design, and a shared store's free space serves every node.
            results.append(Result(node, check, WARN, f"{int(info.get('avail', 0)) // GIB} GiB free, the new VMs' disks "
                                                     f"on {node} are {need} GiB in all"
                                                     + (" (shared: other nodes' too)" if _true(info.get("shared", 0))
                                                        else ""),
                                  f"free space on {store} if it is not thin-provisioned, or move nodes"))
        else:
            free = f", {int(info.get('avail', 0)) // GIB} GiB free" if need else ""
            results.append(Result(node, check, PASS, f"holds {content}{free}"))
    return results


def _bridges(spec: StackSpec, api: ProxmoxApi, node: str) -> list[Result]:
    wanted = [("nodes", spec.network.nodes)]
    if spec.network.management is not None and any(n.management_ip for n in spec.linux_nodes if n.proxmox_node == node):
        wanted.append(("management", spec.network.management))
    if not any(n.proxmox_node == node for n in spec.linux_nodes):
        return []
    try:
        body = api.get_body(f"/nodes/{node}/network", type="any_bridge")
    except ApiError as error:
        return [Result(node, "bridges", FAIL, str(error), "grant SDN.Use on /sdn/zones/localnetwork")]
    bridges = {b["iface"]: b for b in body.get("data") or []}
    results: list[Result] = []
    # The listing reads /etc/network/interfaces.new while changes are pending: a bridge there is not up yet.
    if body.get("changes"):
        results.append(Result(node, "network changes", WARN, "pending, not applied: a bridge listed may not exist yet",
                              f"apply them: `ifreload -a` on {node} (or Apply Configuration in its Network view)"))
    for key, vlan in wanted:
        bridge = vlan.proxmox_bridge
        check = f"bridge {bridge} (network.{key})"
        found = bridges.get(bridge or "")
        if found is None:
            results.append(Result(node, check, FAIL, f"{bridge} is not a bridge of {node} that the token can see",
                                  f"make {bridge} in {node}'s /etc/network/interfaces (or fix network.{key}."
                                  f"proxmoxBridge); grant SDN.Use on /sdn/zones/localnetwork/{bridge}"))
        elif vlan.proxmox_vlan_aware and found.get("type") != "OVSBridge" and not _true(found.get("bridge_vlan_aware", 0)):
            results.append(Result(node, check, FAIL, f"{bridge} is not VLAN-aware, and network.{key}.proxmoxVlanAware "
                                                     f"tags the NICs with VLAN {vlan.vlan_id}",
                                  f"add `bridge-vlan-aware yes` to {bridge} in /etc/network/interfaces and "
                                  "`ifreload -a`, or set proxmoxVlanAware: false with a bridge on the VLAN"))
        else:
            results.append(Result(node, check, PASS, "present" + (", VLAN-aware" if vlan.proxmox_vlan_aware else "")))
    return results


@dataclass
class ApiFindings:
    """The API's results, and what the other checks need from it: the stack's VMs that exist, by name."""
    results: list[Result]
    existing_vms: set[str] = field(default_factory=set)


def run(spec: StackSpec, token: str, ca_file: str | None = None) -> ApiFindings:
    """Every API check, the Proxmox nodes in parallel; read-only."""
    api = ProxmoxApi(spec.proxmox.endpoint, token, insecure=spec.proxmox.insecure, ca_file=ca_file)
    results, major = check_api(spec, api)
    if major is None and results[0].status == FAIL:
        return ApiFindings(results)
    try:
        online = {n["node"]: str(n.get("status", "unknown")) for n in api.get("/nodes")}
    except ApiError as error:
        return ApiFindings([*results, Result(api_host(spec), "nodes", FAIL, str(error), "check the token")])
    results += check_privileges(spec, api, token, major)
    visible = visible_vms(api)
    results += check_vm_ids(spec, api, visible)
    nodes = used_nodes(spec)
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(nodes)))) as pool:
        for found in pool.map(lambda n: check_node(spec, api, n, online, set(visible)), nodes):
            results += found
    names = {str(v.get("name")) for v in visible.values() if v.get("type") == "qemu" and not _true(v.get("template", 0))}
    return ApiFindings(results, {n.name for n in spec.linux_nodes if n.name in names})
