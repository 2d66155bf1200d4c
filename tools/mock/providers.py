"""What each provider this program uses answers the engine, as far as the program depends on it: the id a create
assigns (new_id) and the values it generates (new_mac, new_host_key, new_private_key), which input changes it can
only make by replacing the resource (replaces, matches_replace_on_changes, kubernetes_provider_replaces), and which
types behave apart (DELETE_FAILS_WHEN_GONE, CREATE_FAILS_WHEN_PRESENT, ID_KNOWN_IN_PREVIEW). tools/mock/engine.py
asks these questions. The answers come from the providers' source: each provider's pin is at its type constant, each
fact at the code that models it.
"""
from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Iterable
from typing import Any

import yaml

# pulumi-command v1.2.1 (pulumi/pulumi-command 7f3eb6f3, provider/pkg/provider/remote/commandController.go): Update
# runs `update` (or `create` when `update` is unset) and keeps the id; Delete runs the `delete` and `connection` stored
# in the state, and nothing at all (no dial) when `delete` is unset. In a preview of an update every output that does
# not mirror an input is unknown (pulumi-go-provider v1.3.0 infer/resource.go markComputed: "If a dependency is
# computed or has changed, we mark this field as computed").
COMMAND = "command:remote:Command"
# bpg/terraform-provider-proxmox v0.111.1 (b22fe919; pulumi-proxmoxve 8.6.0 bridges v0.112 or later, whose VM and file
# code did not change these parts).
VM = "proxmoxve:index/vmLegacy:VmLegacy"
# Types whose delete fails when the object is already gone outside Pulumi: bpg's vmDelete (proxmoxtf/resource/vm/
# vm.go at v0.111.1) reads the status first, `status, err := vmAPI.GetVMStatus(ctx)` / `if err != nil { return
# diag.FromErr(err) }`, and Proxmox answers that read for a missing VM with "Configuration file ... does not exist";
# only its later DELETE call treats ErrResourceDoesNotExist as done, and the bridge's Delete adds no not-found
# handling. (Its vmRead clears the id of a missing VM, so `pulumi refresh` drops one from the state.) A command's
# delete runs its script, which decides for itself.
DELETE_FAILS_WHEN_GONE = frozenset({VM})
# Types whose create fails when an object of the same identity already exists outside the state: a VM's id is the
# fixed VMID the program gives (vmCreateClone clones to it), and Proxmox refuses a clone to a VMID in use.
CREATE_FAILS_WHEN_PRESENT = frozenset({VM})
# Types whose provider assigns the id in a preview too: the engine calls Create with Preview=true (step.go
# CreateStep.Apply) and pulumi-command's Create makes the id before it looks at the flag (provider/pkg/provider/
# remote/commandController.go at v1.2.1: `id, err := resource.NewUniqueHex(name, 8, 0)` ... `if preview { return
# infer.CreateResponse[CommandOutputs]{ID: id, ...} }`), so the program sees a known id. The bridged providers
# (Proxmox, TLS) and the Kubernetes provider leave it unknown. A real preview's id is random and differs from the
# one the `up` makes; the model gives both the same.
ID_KNOWN_IN_PREVIEW = frozenset({COMMAND})
# bpg's file resource, same pin as VM (proxmoxtf/resource/file.go): `fileUpdate` does nothing.
FILE = "proxmoxve:index/fileLegacy:FileLegacy"
# pulumi-kubernetes v4.32.0 (a03ff6ba), for the provider (kubernetes_provider_replaces) and its objects (new_id,
# _K8S_REPLACE).
K8S_PROVIDER = "pulumi:providers:kubernetes"
# pulumi-tls 5.6.2 (pulumi/pulumi-tls f7db93b2 provider/go.mod bridges hashicorp/terraform-provider-tls 609226f5; read
# at v4.2.1). The SDK marks `privateKeyOpenssh` (and the PEM forms) additionalSecretOutputs.
TLS_KEY = "tls:index/privateKey:PrivateKey"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"

# Input paths (dotted, list items as [i]) whose change the provider can make only by replacing. pulumi-command has no
# such path: its schema marks only `triggers` replaceOnChanges, and the SDK registers `replace_on_changes=["triggers[*]"]`
# (sdk/python/pulumi_command/remote/command.py), so any trigger change replaces (matches_replace_on_changes) and
# `connection`, `stdin`, `create`, `update`, `delete` and the rest are updates.
# VM, ForceNew in bpg's proxmoxtf/resource/vm/vm.go: `vm_id` (CustomizeDiff), `node_name` (unless `migrate`), every
# `clone` field, `initialization.*_data_file_id` and `initialization.type`, `disk.file_id`.
_VM_REPLACE = re.compile(r"^(vmId|nodeName|clone(\..*)?|initialization\.(userDataFileId|vendorDataFileId|"
                         r"networkDataFileId|metaDataFileId|type)|disks\[\d+\]\.fileId|amdSev(\..*)?)$")
# File (proxmoxtf/resource/file.go): every input but `timeout_upload` is ForceNew.
_FILE_REPLACE = re.compile(r"^(contentType|datastoreId|nodeName|fileMode|sourceFile(\..*)?|sourceRaw(\..*)?)$")
# A Kubernetes object: `.metadata.name` and `.metadata.namespace` force a replacement.
_K8S_REPLACE = re.compile(r"^metadata(\.(name|namespace))?$")
_RELEASE_REPLACE = re.compile(r"^(name|namespace)$")
# PrivateKey: `algorithm`, `rsa_bits` and `ecdsa_curve` are RequiresReplace (resource_private_key.go).
_TLS_KEY_REPLACE = re.compile(r"^(algorithm|rsaBits|ecdsaCurve)$")


def _stable_hex(*parts: object, length: int) -> str:
    """Random-looking and different for every create, yet the same in every run of the same history, so
    synth outputs and tests stay reproducible."""
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:length]


def new_id(type_: str, name: str, urn: str, inputs: dict[str, Any], generation: int, nonce: str = "") -> str:
    """The id the provider assigns to the `generation`-th instance of this resource; `nonce` stands for the
    randomness of a real provider (tools/mock/engine.py derives it from the state the run starts from)."""
    if type_ == VM:
        # bpg `vmCreateClone` calls `d.SetId(strconv.Itoa(vmID))`: the VMID, the same for every instance.
        return str(int(inputs["vmId"]))  # protobuf carries numbers as doubles
    if type_ == FILE:
        # `<datastore>:<content type>/<file name>` (proxmoxtf/resource/file.go).
        raw = inputs.get("sourceRaw") or {}
        return f"{inputs['datastoreId']}:{inputs.get('contentType', 'snippets')}/{raw.get('fileName', '')}"
    if type_ == COMMAND:
        # Create assigns `resource.NewUniqueHex(name, 8, 0)`: the name and 8 random hex digits, new on every create.
        return name + _stable_hex(urn, generation, nonce, length=8)
    if type_ == HELM_RELEASE:
        return f"{inputs.get('namespace') or 'default'}/{inputs.get('name') or name}"
    if type_ == TLS_KEY:
        # The SHA-1 hex of the public key's PKIX DER (terraform-provider-tls internal/provider/common_key.go,
        # `hashForState`), new with every create; here of the stand-in key line.
        return hashlib.sha1(new_host_key(urn, generation, nonce).encode(), usedforsecurity=False).hexdigest()
    if type_.startswith("kubernetes:"):
        # `namespace/name` (pulumi-kubernetes fqObjName).
        meta = inputs.get("metadata") or {}
        if isinstance(meta, dict) and isinstance(meta.get("name"), str):
            return f"{meta['namespace']}/{meta['name']}" if isinstance(meta.get("namespace"), str) else meta["name"]
    # Providers and everything else: a fresh identity per instance.
    return _stable_hex(urn, generation, nonce, length=32)


def new_mac(urn: str, generation: int, nic: int, nonce: str = "") -> str:
    """A MAC in Proxmox's own prefix (BC:24:11, PVE 8.1 and later), new for every clone. bpg's
    `network_device.mac_address` is Optional+Computed (vm/network/schema.go) and Proxmox gives a cloned NIC a new random
    MAC, so the MAC is what changes with each instance; an update sends the stored MAC back (vm/network/network.go).
    `mac_addresses`, by contrast, comes from the QEMU agent's interface list when the agent is on, loopback first."""
    tail = _stable_hex(urn, generation, nic, nonce, length=6)
    return "BC:24:11:" + ":".join(tail[i:i + 2] for i in range(0, 6, 2)).upper()


def new_host_key(urn: str, generation: int, nonce: str = "") -> str:
    """An ed25519 public key line (RFC 8709 section 4: the type string, then the 32-byte key), new for every
    instance of the key resource, as the TLS provider generates one on each create."""
    key = bytes.fromhex(_stable_hex(urn, generation, "host-key", nonce, length=64))
    blob = len(b"ssh-ed25519").to_bytes(4, "big") + b"ssh-ed25519" + len(key).to_bytes(4, "big") + key
    return "ssh-ed25519 " + base64.b64encode(blob).decode()


def new_private_key(urn: str, generation: int, nonce: str = "") -> str:
    """A stand-in of the matching private key in OpenSSH's format (obviously fake: its body is not a key)."""
    body = base64.b64encode(f"FAKE-openssh-private-key {urn} {generation} {nonce}".encode()).decode()
    lines = "\n".join(body[i:i + 70] for i in range(0, len(body), 70))
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{lines}\n-----END OPENSSH PRIVATE KEY-----\n"


def replaces(type_: str, paths: Iterable[str]) -> list[str]:
    """The changed input paths that the provider of `type_` can only apply by replacing the resource."""
    pattern = {VM: _VM_REPLACE, FILE: _FILE_REPLACE, HELM_RELEASE: _RELEASE_REPLACE, TLS_KEY: _TLS_KEY_REPLACE}.get(type_)
    if pattern is None and type_.startswith("kubernetes:") and not type_.startswith("kubernetes:helm.sh/"):
        pattern = _K8S_REPLACE
    if pattern is None:
        return []
    return [p for p in paths if pattern.match(p)]


def matches_replace_on_changes(path: str, patterns: Iterable[str]) -> bool:
    """The engine's replaceOnChanges match: `triggers[*]` covers `triggers` and every element under it."""
    for pattern in patterns:
        regex = re.escape(pattern).replace(r"\[\*\]", r"\[\d+\]").replace(r"\*", r"[^.]+")
        if re.match(f"^{regex}($|[.\\[])", path) or re.match(f"^{re.escape(pattern.split('[')[0])}$", path):
            return True
    return False


def _active_cluster(kubeconfig: Any) -> Any:
    try:
        document = yaml.safe_load(kubeconfig)
        context_name = document.get("current-context")
        context = next(c["context"] for c in document["contexts"] if c["name"] == context_name)
        return next(c["cluster"] for c in document["clusters"] if c["name"] == context["cluster"])
    except Exception:
        return None


def kubernetes_provider_replaces(old: dict[str, Any], new: dict[str, Any], unknown: Callable[[Any], bool],
                                 unwrap: Callable[[Any], Any]) -> list[str]:
    """pulumi-kubernetes DiffConfig (provider/pkg/provider/provider.go): which provider config keys force a replacement
    of the provider. It replaces the provider when `kubeconfig` is unknown or points at another cluster, unless
    `clusterIdentifier` is set and unchanged ("the provider will _only_ be replaced when clusterIdentifier changes")."""
    old_id, new_id_ = old.get("clusterIdentifier"), new.get("clusterIdentifier")
    if old_id is not None and new_id_ is not None and (unknown(new_id_) or old_id != new_id_):
        return ["clusterIdentifier"]
    keep = old_id is not None and new_id_ is not None and old_id == new_id_
    replace: list[str] = []
    for key in ("kubeconfig", "context", "cluster"):
        if key not in new:
            continue
        if unknown(new[key]):
            replace = [key]
            break
        if key == "kubeconfig" and key in old and not unknown(old[key]):
            before, after = _active_cluster(unwrap(old[key])), _active_cluster(unwrap(new[key]))
            if before is not None and after is not None and before != after:
                replace.append(key)
    return [] if keep else replace
