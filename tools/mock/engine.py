"""A model of the Pulumi engine's step generation, for the mock runs: given the state an earlier run left and the
resources a program registers now, which resources are created, updated, replaced or deleted, in which order, with
which inputs, and what the providers answer (tools/mock/providers.py).

Callers make one Deployment per run, register() each resource in the program's registration order, then finish(): its
`plan` holds the steps, its `state` the state the run leaves (to_export / from_export: as `pulumi stack export` writes
it). It follows the engine's source where the program depends on it, pulumi/pulumi 1b594989 (paths under
pkg/resource/deploy unless named otherwise); each rule is cited at the code that models it.
"""
from __future__ import annotations

import base64
import copy
import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from tools.mock import providers


class Secret:
    """A value the program declared secret; printed only as [secret]."""

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        return "Secret([secret])"


class Unknown:
    """A value not known until the resource it comes from is created (preview)."""

    def __repr__(self) -> str:
        return "Unknown"


def contains_unknown(value: Any) -> bool:
    if isinstance(value, Unknown):
        return True
    if isinstance(value, Secret):
        return contains_unknown(value.value)
    if isinstance(value, dict):
        return any(contains_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_unknown(v) for v in value)
    return False


def unwrap(value: Any) -> Any:
    return value.value if isinstance(value, Secret) else value


@dataclass
class Declared:
    """What the program declares for a resource (a subset of RegisterResourceRequest), as the state keeps it."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    inputs: dict[str, Any]
    dependencies: list[str] = field(default_factory=list)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    provider: str = ""
    protect: bool = False
    retain_on_delete: bool = False
    delete_before_replace: bool = False
    ignore_changes: list[str] = field(default_factory=list)
    replace_on_changes: list[str] = field(default_factory=list)


@dataclass
class Registration(Declared):
    """One registration of the program: the declaration, and the URNs it may have had before (aliases)."""

    aliases: list[str] = field(default_factory=list)


@dataclass
class Entry(Declared):
    """One resource as the state holds it."""

    id: str | None = None
    outputs: dict[str, Any] = field(default_factory=dict)
    # How many times this URN has been created, in this state's history: seeds the provider's new ids.
    generation: int = 1
    # Deleted by a delete-before-replace whose create has not happened yet: the state keeps it so marked, and the
    # next run creates it without deleting it again (step.go DeleteStep pendingReplace; step_generator.go).
    pending_replacement: bool = False


@dataclass(frozen=True)
class Step:
    """One engine step. op: create, same, update, replace (create of the replacement), delete, retain (dropped
    from the state without a provider call), delete-replaced (the old resource of a replacement); `why` says
    what changed (input paths) or why a resource is replaced."""

    op: str
    urn: str
    type: str
    name: str
    why: tuple[str, ...] = ()

    @property
    def symbol(self) -> str:
        return {"create": "+", "update": "~", "replace": "+-", "delete": "-", "retain": "-",
                "delete-replaced": "-", "same": " "}[self.op]


@dataclass(frozen=True)
class PendingCreate:
    """A create the run was interrupted in (the CLI killed, the machine running it lost): the engine journals the
    operation before the provider call and clears it after, so the state keeps it with the inputs sent, and the object
    may exist outside the state (backend/snapshot.go PendingOperations; "interrupted while creating")."""
    urn: str
    type: str
    name: str
    parent: str
    provider: str
    inputs: dict[str, Any]


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Creates this run was interrupted in (it stopped there), and those an earlier run left, which an update keeps.
    pending: list[PendingCreate] = field(default_factory=list)
    # Deletes that did not run: failed ones, and what a failed delete kept from running.
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def ops(self, op: str) -> list[str]:
        return [s.name for s in self.steps if s.op == op]

    def of(self, name: str) -> list[str]:
        return [s.op for s in self.steps if s.name == name]

    @property
    def changed(self) -> set[str]:
        return {s.name for s in self.steps if s.op != "same"}


def diff_paths(old: Any, new: Any, path: str = "") -> list[str]:
    """Dotted paths (list items as [i]) where two input trees differ; an unknown value always differs."""
    if isinstance(new, Unknown) or isinstance(old, Unknown):
        return [path or "(value)"]
    if isinstance(old, Secret) or isinstance(new, Secret):
        return diff_paths(unwrap(old), unwrap(new), path)
    if isinstance(old, dict) and isinstance(new, dict):
        found: list[str] = []
        for key in sorted(old.keys() | new.keys()):
            sub = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new:
                found.append(sub)
            else:
                found += diff_paths(old[key], new[key], sub)
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [p for i, (a, b) in enumerate(zip(old, new, strict=False)) for p in diff_paths(a, b, f"{path}[{i}]")]
    return [] if old == new else [path or "(value)"]


def _split(path: str) -> list[str]:
    return [part for part in path.replace("[", ".[").split(".") if part]


def apply_ignore_changes(inputs: dict[str, Any], old_inputs: dict[str, Any], ignore: Iterable[str]) -> dict[str, Any]:
    """processIgnoreChanges: each ignored path takes its old value (and is left out when it had none)."""
    result = copy.deepcopy(inputs)
    for path in ignore:
        parts = _split(path)
        old_node: Any = old_inputs
        for part in parts:
            old_node = _child(old_node, part)
            if old_node is _MISSING:
                break
        _assign(result, parts, old_node)
    return result


_MISSING = object()


def _child(node: Any, part: str) -> Any:
    node = unwrap(node)
    if part.startswith("["):
        index = int(part[1:-1])
        return node[index] if isinstance(node, list) and index < len(node) else _MISSING
    return node.get(part, _MISSING) if isinstance(node, dict) else _MISSING


def _assign(root: dict[str, Any], parts: list[str], value: Any) -> None:
    node: Any = root
    for part in parts[:-1]:
        node = _child(node, part)
        if node is _MISSING:
            return
    node = unwrap(node)
    last = parts[-1]
    if last.startswith("["):
        index = int(last[1:-1])
        if isinstance(node, list) and index < len(node) and value is not _MISSING:
            node[index] = copy.deepcopy(value)
    elif isinstance(node, dict):
        if value is _MISSING:
            node.pop(last, None)
        else:
            node[last] = copy.deepcopy(value)


# --- provider answers --------------------------------------------------------------------------------

# What the commands whose stdout later resources read print (keyed by the end of the resource name),
# with obviously fake secrets (the token is the example token of the kubeadm docs).
STAND_IN_JOIN_LINE = (
    "kubeadm join 10.30.30.10:6443 --token abcdef.0123456789abcdef "
    "--discovery-token-ca-cert-hash sha256:" + "0" * 64
)
# As render/scripts/provider-credential.sh prints it: one comment line, then the kubeconfig.
STAND_IN_KUBECONFIG = """# valid until Dec  5 18:00:00 2027 GMT
# user offline-admin
apiVersion: v1
kind: Config
clusters:
- cluster: {certificate-authority-data: RkFLRS1DQQ==, server: 'https://10.30.30.11:6443'}
  name: offline
contexts:
- context: {cluster: offline, user: offline-admin}
  name: offline
current-context: offline
users:
- name: offline-admin
  user: {client-certificate-data: RkFLRS1DRVJU, client-key-data: RkFLRS1LRVk=}
"""
_PROVIDER_USER = re.compile(r"USER_NAME='([^']+)'")
STAND_IN_STDOUT = {"-join-credentials": STAND_IN_JOIN_LINE, "-kubeconfig": STAND_IN_KUBECONFIG}
# The Secrets encryption key ring (render/scripts/encryption-keys.sh): `writer` is the key the previous run's ring
# targeted (the cluster writes with it once that change went through), `target` the one this run's script names; the
# secret is a stand-in of the right shape. A new key therefore changes the ring, as it does on a cluster.
KEY_RING_SUFFIX = "-encryption-keys"   # components/cluster/control_plane.py names the step <name>-encryption-keys
_KEY_TARGET = re.compile(r"TARGET='([^']+)'")
STAND_IN_KEY = "A" * 43 + "="


def _key_ring(entry: Entry, old: Entry | None) -> str:
    found = _KEY_TARGET.search(str(unwrap(entry.inputs.get("create")) or ""))
    target = found.group(1) if found else "identity"
    previous = old.outputs.get("stdout") if old is not None else None
    writer = previous.split("\n")[1].split()[1] if isinstance(previous, str) and previous.count("\n") >= 2 else "identity"

    def line(role: str, name: str) -> str:
        return f"{role} identity" if name == "identity" else f"{role} {name} {STAND_IN_KEY}"
    return f"{line('writer', writer)}\n{line('target', target)}\n"


def _stdout_of(entry: Entry, old: Entry | None, nonce: str = "") -> str:
    """`old`: the entry this one updates or replaces, if any."""
    if entry.name.endswith(KEY_RING_SUFFIX):
        return _key_ring(entry, old)
    if entry.name.endswith("-kubeconfig"):
        # A credential issued anew on every create: a new client certificate each time (its stand-in bytes), for the
        # user the script names.
        issued = base64.b64encode(providers.new_private_key(entry.urn, entry.generation, nonce).encode()).decode()
        user = _PROVIDER_USER.search(str(entry.inputs.get("create") or ""))
        return (STAND_IN_KUBECONFIG.replace("RkFLRS1DRVJU", issued)
                .replace("# user offline-admin", f"# user {user.group(1) if user else 'offline-admin'}"))
    return next((text for suffix, text in STAND_IN_STDOUT.items() if entry.name.endswith(suffix)), "")


def _outputs(entry: Entry, op: str, old: Entry | None, preview: bool, nonce: str) -> dict[str, Any]:
    """What the provider returns for `entry` after `op` (its inputs echoed, plus what it computes); in a
    preview, what it computes is unknown unless it is carried over."""
    outputs = copy.deepcopy(entry.inputs)
    if entry.type == providers.COMMAND:
        if op == "update" and not preview:
            outputs.update(stdout=_stdout_of(entry, old, nonce), stderr="")
        elif op in ("create", "replace") and not preview:
            ran = bool(entry.inputs.get("create"))
            outputs.update(stdout=_stdout_of(entry, old, nonce) if ran else "", stderr="")
        elif op in ("create", "replace", "update"):
            outputs.update(stdout=Unknown(), stderr=Unknown())
    elif entry.type == providers.TLS_KEY:
        # Generated on create (the public key with a newline, as the provider writes it), kept on update.
        if old is not None and op == "update":
            outputs.update({k: old.outputs.get(k) for k in ("publicKeyOpenssh", "privateKeyOpenssh")})
        elif preview:
            outputs.update(publicKeyOpenssh=Unknown(), privateKeyOpenssh=Unknown())
        else:
            outputs.update(publicKeyOpenssh=providers.new_host_key(entry.urn, entry.generation, nonce) + "\n",
                           privateKeyOpenssh=Secret(providers.new_private_key(entry.urn, entry.generation, nonce)))
    elif entry.type == providers.VM:
        # network_device.mac_address: Optional+Computed, new for every clone, sent back on updates.
        devices = outputs.get("networkDevices") or []
        old_devices = list((old.outputs.get("networkDevices") or []) if old is not None and op == "update" else [])
        macs: list[Any] = []
        for index, device in enumerate(devices):
            kept = old_devices[index].get("macAddress") if index < len(old_devices) and isinstance(old_devices[index], dict) else None
            if kept is not None and not isinstance(kept, Unknown):
                mac: Any = kept
            elif preview:
                mac = Unknown()
            else:
                mac = providers.new_mac(entry.urn, entry.generation, index, nonce)
            if isinstance(device, dict):
                device["macAddress"] = mac
            macs.append(mac)
        # mac_addresses: with the QEMU agent enabled on a started VM, the guest's interfaces as the agent
        # lists them, upper case, loopback first (vm/network/network.go ReadNetworkValues).
        agent = (entry.inputs.get("agent") or {}).get("enabled") and entry.inputs.get("started", True)
        outputs["macAddresses"] = (Unknown() if preview and op != "update" else
                                   ["00:00:00:00:00:00", *(m.upper() if isinstance(m, str) else m for m in macs)]
                                   if agent else [m.upper() if isinstance(m, str) else m for m in macs])
    return outputs


# --- the deployment ----------------------------------------------------------------------------------

def provider_urn(reference: str) -> str:
    """A provider reference is `urn::id`; the URN part."""
    return reference.rsplit("::", 1)[0] if reference.count("::") > 1 else reference


class DuplicateUrn(RuntimeError):
    """Two registrations of one URN in a run."""


class Deployment:
    """One `pulumi up` (or preview) against `state`. Call register() in the program's registration order,
    then finish(); `plan` holds the steps and `state` the state the run leaves.

    replace: URNs given with `--replace`. check: per dynamic resource type, its provider's check(olds, news)
    returning failure messages (the preview refuses the run when any fails).
    """

    def __init__(self, state: Mapping[str, Entry] | None = None, preview: bool = False,
                 replace: Iterable[str] = (),
                 check: Mapping[str, Callable[[dict, dict], list[str]]] | None = None,
                 fail: Iterable[str] = (), gone: Iterable[str] = (), interrupt: Iterable[str] = (),
                 pending: Sequence[PendingCreate] = (), outside: Iterable[str] = (), fail_delete: Iterable[str] = (),
                 target: Iterable[str] = (), exclude: Iterable[str] = ()):
        self.old: dict[str, Entry] = dict(state or {})
        # `--target` / `--exclude` (names or URNs; without --target-dependents / --exclude-dependents).
        self.target = set(target)
        self.exclude = set(exclude)
        # Set when the step generator bails (a check failure; a protected replacement in an `up`): nothing after it
        # is registered with the engine and no delete runs (deployment_executor.go handleSingleEvent returns before
        # performPostSteps).
        self.bailed = False
        # New resources left out by `--target` (SkippedCreate): not created, and nothing may depend on them.
        self.skipped_creates: set[str] = set()
        # What untargeted resources kept as they are depend on: never deleted in this run.
        self.kept_as_dependencies: set[str] = set()
        self.preview = preview
        self.targets = set(replace)
        self.check = dict(check or {})
        # Names (or URNs) whose create, update, replacement or delete fails in this run, and what failed or was
        # skipped because something it depends on failed: the engine stops a resource's dependents.
        self.fail = set(fail)
        # Names whose delete fails inside a delete-before-replace cascade (`fail` makes the replacement's create fail).
        self.fail_delete = set(fail_delete)
        # Names of resources whose object was deleted outside Pulumi (a VM destroyed by hand, a host that died):
        # the delete of a type that reads the object first fails (providers.DELETE_FAILS_WHEN_GONE).
        self.gone = set(gone)
        # Names whose create is under way when the run is interrupted: the CLI stops there, the operation stays
        # pending in the state, and the provider's object may exist (here it does: `outside`).
        self.interrupt = set(interrupt)
        # Objects that exist outside the state (an interrupted create's), by resource name: a create of a type with a
        # fixed identity fails on them (providers.CREATE_FAILS_WHEN_PRESENT).
        self.outside = set(outside)
        self.plan_pending = list(pending)
        self.failed: set[str] = set()
        # Set by the first failed create, update or replacement: no later step starts.
        self.cancelled = False
        self.plan = Plan(pending=list(pending))
        if pending and not preview:
            # An update goes on with a warning and keeps the pending operations (pulumi/pulumi#9293); a preview does
            # not warn (deployment_executor.go).
            self.plan.warnings.append(
                f"Attempting to deploy or update resources with {len(pending)} pending operations from previous "
                "deployment: " + ", ".join(f"{p.urn}, interrupted while creating" for p in pending))
        self.new: dict[str, Entry] = {}
        # Old resources already deleted in this run (dependents of a delete-before-replace replacement),
        # which their next registration recreates.
        self.recreating: dict[str, Entry] = {}
        # Resources replaced in this run: a resource using a replaced provider is replaced too.
        self.replaced: set[str] = set()
        # Old resources a delete-before-replace deleted in this run (kept pending replacement until re-created).
        self.deleted_for_replacement: set[str] = set()
        # Old resources of create-before-replace replacements, deleted at the end of the run.
        self.late: list[Entry] = []
        self.order: list[str] = list(self.old)
        # The state the run started from, whole: the delete schedule's dependency graph (getDepgraphForScheduling),
        # each resource's place in it, and each one's children.
        self.prev: dict[str, Entry] = dict(self.old)
        self.position = {urn: i for i, urn in enumerate(self.order)}
        self.children: dict[str, list[str]] = {}
        for urn in self.order:
            if self.prev[urn].parent:
                self.children.setdefault(self.prev[urn].parent, []).append(urn)
        # Stands for the providers' randomness: a new instance never repeats an id or a MAC of the history,
        # yet the same run from the same state gives the same ones (reproducible synth outputs).
        self.nonce = hashlib.sha256(json.dumps(sorted((u, e.id or "") for u, e in self.old.items())).encode()).hexdigest()

    # --- registration ------------------------------------------------------------------------------
    def register(self, reg: Registration) -> Entry:
        if reg.urn in self.new:
            # The step generator refuses a URN it has seen in this deployment (pkg/resource/deploy/step_generator.go
            # generateURN; diag.GetDuplicateResourceURNError), and the run fails.
            raise DuplicateUrn(f"Duplicate resource URN '{reg.urn}'; try giving it a unique name")
        old_urn = reg.urn if reg.urn in self.old or reg.urn in self.recreating else next(
            (a for a in reg.aliases if a in self.old), reg.urn)
        old = self.old.pop(old_urn, None)
        recreated = self.recreating.pop(old_urn, None)
        entry = Entry(**{f.name: copy.copy(getattr(reg, f.name)) for f in fields(Declared)})
        if self.bailed:
            return self._keep(reg, old or recreated, "skipped")
        if recreated is None and not self._included(reg.name, reg.urn):
            # step_generator.go: an untargeted resource's check is stubbed ("use the old inputs directly") and it is
            # kept as it is, with no diff (a SameStep), and so is what it depends on (getDependencySteps marks its old
            # dependencies same: GenerateDeletes keeps them); an untargeted new resource is not created
            # (SkippedCreate). A dependent a delete-before-replace deleted is re-created, targeted or not.
            if old is not None:
                self.plan.steps.append(Step("same", reg.urn, reg.type, reg.name, ("not targeted",)))
                self.new[reg.urn] = old
                self.kept_as_dependencies |= self._transitive_dependencies(reg.urn)
                return old
            self.skipped_creates.add(reg.urn)
            self.plan.steps.append(Step("skipped", reg.urn, reg.type, reg.name, ("not targeted",)))
            self.plan.skipped.append(reg.name)
            return self._unresolved(reg)
        needs = (set(reg.dependencies) | {u for urns in reg.property_dependencies.values() for u in urns}
                 | {reg.parent, provider_urn(reg.provider)}) & self.skipped_creates
        if needs and self.target:
            # step_generator.go: a step that depends on a skipped create is an error; an `up` bails ("untargeted
            # create"), a preview goes on to list them all.
            self.plan.errors.append(f"{reg.name}: depends on {sorted(needs)[0]}, which will be created but was not "
                                    "specified in --target list")
            if not self.preview:
                self.bailed = self.cancelled = True
                return self._keep(reg, old or recreated, "skipped")
        self._check(reg, old)
        if self.bailed:
            return self._keep(reg, old or recreated, "skipped")
        blocked = (set(reg.dependencies) | {u for urns in reg.property_dependencies.values() for u in urns}
                   | {reg.parent}) & self.failed
        if blocked:
            # A dependency failed: this resource is never reached, and the state keeps what it had.
            return self._keep(reg, old or recreated, "skipped")
        why: Sequence[str]
        if recreated is not None:
            op, why = "replace", ("replacement of a dependency",)
            entry.generation = recreated.generation + 1
        elif old is not None and old.pending_replacement:
            # Its delete already ran in an earlier run: only the create is left.
            op, why = "replace", ("pending replacement",)
            entry.generation = old.generation + 1
        elif old is None:
            op, why = "create", ()
        else:
            op, why, entry = self._diff(reg, old, entry)
            if op == "refused":
                return self._keep(reg, old, "skipped")
            if op == "failed-delete":
                self.failed.add(reg.urn)
                self.new[reg.urn] = old
                return old
        if op in ("create", "replace"):
            known = not self.preview or entry.type in providers.ID_KNOWN_IN_PREVIEW
            entry.id = providers.new_id(entry.type, entry.name, entry.urn, entry.inputs, entry.generation,
                                        self.nonce) if known else None
            entry.outputs = _outputs(entry, op, old, self.preview, self.nonce) if entry.custom else {}
        elif old is None:
            # An update or no change comes from _diff, which only runs against the state's entry.
            raise ValueError(f"{reg.name}: {op} of a resource the state does not hold")
        elif op == "update":
            entry.id = old.id
            entry.outputs = _outputs(entry, op, old, self.preview, self.nonce) if entry.custom else {}
        else:
            # step.go SameStep: the new options (protect, retainOnDelete) with the old id and outputs.
            entry.id, entry.outputs = old.id, old.outputs
        if op != "same" and self.cancelled:
            # A step failed earlier in this run: step_executor.go cancelDueToError cancels the run, so steps under
            # way finish (here: everything registered before the failure) and nothing new starts, dependent or
            # not (only `--continue-on-error` would go on with independent steps).
            return self._keep(reg, old or recreated, "skipped")
        if op in ("create", "replace") and reg.name in self.interrupt and not self.preview:
            # The CLI stops while the provider creates it: the operation is journaled as pending and nothing else
            # starts; the object exists outside the state.
            self.cancelled = True
            self.plan.pending.append(PendingCreate(reg.urn, reg.type, reg.name, reg.parent, reg.provider,
                                                   copy.deepcopy(reg.inputs)))
            self.outside.add(reg.name)
            return self._keep(reg, self._left_by(op, reg, old) or recreated, "interrupted")
        present = reg.name in self.outside and reg.type in providers.CREATE_FAILS_WHEN_PRESENT
        if op != "same" and (reg.name in self.fail or reg.urn in self.fail or (op in ("create", "replace") and present)):
            self.cancelled = True
            return self._keep(reg, self._left_by(op, reg, old) or recreated, "failed")
        if op == "replace":
            self.replaced.add(entry.urn)
        self.plan.steps.append(Step(op, entry.urn, entry.type, entry.name, tuple(why)))
        self.new[entry.urn] = entry
        return entry

    def _left_by(self, op: str, reg: Registration, old: Entry | None) -> Entry | None:
        """What the state keeps of a resource whose create did not complete: the old entry, marked pending replacement
        when this run's delete-before-replace already deleted it."""
        if op == "replace" and old is not None and reg.urn in self.deleted_for_replacement:
            return dataclasses.replace(old, pending_replacement=True)
        return old

    def _keep(self, reg: Registration, old: Entry | None, op: str) -> Entry:
        """A step that did not happen (failed, or skipped after a failure): the state keeps the old resource."""
        self.failed.add(reg.urn)
        self.plan.steps.append(Step(op, reg.urn, reg.type, reg.name))
        if op != "interrupted":
            (self.plan.failed if op == "failed" else self.plan.skipped).append(reg.name)
        if old is not None:
            self.new[reg.urn] = old
            return old
        return self._unresolved(reg)

    def _unresolved(self, reg: Registration) -> Entry:
        """A create that did not happen resolves nothing the provider computes (its dependents never start: the
        program's outputs of it stay unknown, as in a preview)."""
        entry = Entry(urn=reg.urn, type=reg.type, name=reg.name, parent=reg.parent, custom=reg.custom,
                      inputs=reg.inputs)
        entry.outputs = _outputs(entry, "create", None, True, self.nonce) if reg.custom else {}
        return entry

    def _included(self, name: str, urn: str) -> bool:
        """step_generator.go isIncludedInOperation: with targets, only they; otherwise all but the excluded."""
        if self.target:
            return name in self.target or urn in self.target
        return name not in self.exclude and urn not in self.exclude

    def _check(self, reg: Registration, old: Entry | None) -> None:
        """A provider check that fails: its failures are printed and the run bails, in a preview too
        (step_generator.go: `if invalid { return nil, false, result.BailErrorf("resource %s is invalid", urn) }`)."""
        check = self.check.get(reg.type)
        if check is not None:
            failures = check(dict(old.inputs) if old else {}, dict(reg.inputs))
            for failure in failures:
                self.plan.errors.append(f"{reg.name}: {failure}")
            if failures:
                self.bailed = self.cancelled = True

    def _diff_unavailable(self, reg: Registration) -> bool:
        """A preview whose Kubernetes provider has an unknown configuration cannot diff the provider's objects:
        provider_plugin.go Diff answers DiffUnavailable for an unconfigured provider, and step_generator.go then
        plans an update of the object with a warning (its outputs unknown). An `up` knows the configuration by then."""
        if not self.preview or not reg.custom:
            return False
        provider = self.new.get(provider_urn(reg.provider)) if reg.provider else None
        return provider is not None and provider.type == providers.K8S_PROVIDER and contains_unknown(provider.inputs)

    def _diff(self, reg: Registration, old: Entry, entry: Entry) -> tuple[str, list[str], Entry]:
        # step_generator.go continueStepsFromDiff: inputs under `ignoreChanges` take their old values before the diff, so
        # an ignored change alone never updates or replaces.
        processed = apply_ignore_changes(reg.inputs, old.inputs, reg.ignore_changes)
        if self._diff_unavailable(reg):
            if not any(w.startswith("diff unavailable") for w in self.plan.warnings):
                self.plan.warnings.append("diff unavailable: the Kubernetes provider's configuration is unknown in this "
                                          "preview, so each of its objects is shown as an update")
            entry.inputs, entry.generation = processed, old.generation
            return "update", ["diff unavailable"], entry
        changed = diff_paths(old.inputs, processed)
        why: list[str] = []
        if reg.urn in self.targets:
            why = ["--replace"]
        elif reg.custom and provider_urn(reg.provider) in self.replaced:
            # step_generator.go: "If the resource's provider reference changed, the resource must be replaced".
            why = ["provider replaced"]
        elif reg.custom and changed:
            why = self.replace_keys(reg.type, changed, reg.replace_on_changes, old.inputs, processed)
        if why:
            if old.protect and reg.protect:
                # continueStepsFromDiff: a preview goes on to show the rest and fails; an `up` bails here, before any
                # step of the replacement (`if !sg.deployment.opts.DryRun { return nil, result.BailErrorf(...) }`).
                self.plan.errors.append(f"{reg.name}: unable to replace resource as it is currently marked for protection")
                if not self.preview:
                    self.bailed = self.cancelled = True
                    return "refused", why, old
            # Replaced: created with what the program declares now, ignored inputs included. continueStepsFromDiff checks
            # the inputs again from the program's own values ("If we are going to perform a replacement, we need to
            # recompute the default values"), and a `--replace` target or a re-created dependent (register) uses them from
            # the start (continueStepsFromImport: `recreating || wasExternal || isTargetedReplace || old == nil`).
            entry.generation = old.generation + 1
            if reg.delete_before_replace:
                if not self._delete_before_replace(old):
                    # A delete in the cascade failed (or a protected dependent refused it): nothing is replaced, the
                    # resource stays as it is.
                    return ("refused" if self.bailed else "failed-delete"), why, old
            else:
                # The old resource is deleted at the end of the run.
                self.late.append(old)
            return "replace", why, entry
        entry.inputs = processed
        entry.generation = old.generation
        return ("update" if changed else "same"), changed, entry

    def replace_keys(self, type_: str, changed: list[str], replace_on_changes: Iterable[str],
                     old_inputs: dict[str, Any], new_inputs: dict[str, Any]) -> list[str]:
        if type_ == providers.K8S_PROVIDER:
            return providers.kubernetes_provider_replaces(old_inputs, new_inputs, contains_unknown, unwrap)
        keys = providers.replaces(type_, changed)
        keys += [p for p in changed if p not in keys and providers.matches_replace_on_changes(p, replace_on_changes)]
        return keys

    # --- delete-before-replace -----------------------------------------------------------------------
    def _dependents_to_replace(self, root: Entry) -> list[Entry]:
        """step_generator.go calculateDependentReplacements over the old state, in registration order. Only a delete-before-replace
        replacement replaces its dependents up front: each custom resource with an input whose property dependencies
        reach the replace set is diffed with those inputs unknown, and replaced if its provider says so; a plain
        `dependsOn` edge replaces nothing."""
        replace_set = {root.urn}
        result: list[Entry] = []
        for urn in self.order:
            candidate = self.old.get(urn)
            if candidate is None or not candidate.custom or urn == root.urn:
                continue
            if provider_urn(candidate.provider) in replace_set:
                result.append(candidate)
                replace_set.add(urn)
                continue
            unknown_keys = [k for k, deps in candidate.property_dependencies.items()
                            if k in candidate.inputs and set(deps) & replace_set]
            if not unknown_keys:
                continue
            inputs = {k: (Unknown() if k in unknown_keys else v) for k, v in candidate.inputs.items()}
            changed = diff_paths(candidate.inputs, apply_ignore_changes(inputs, candidate.inputs, candidate.ignore_changes))
            if self.replace_keys(candidate.type, changed, candidate.replace_on_changes, candidate.inputs, inputs):
                if candidate.protect:
                    # Bails in a preview too (step_generator.go, no DryRun exception there).
                    self.plan.errors.append(f"{candidate.name}: unable to replace resource as part of replacing "
                                            f"{root.name} as it is currently marked for protection")
                    self.bailed = self.cancelled = True
                result.append(candidate)
                replace_set.add(urn)
        return result

    def _delete_before_replace(self, root: Entry) -> bool:
        """The dependents' deletes, then the root's; each deleted one stays in the state pending replacement until
        it is created again. A failed delete stops the cascade (False): what it depends on is not deleted, and the
        run stops."""
        dependents = self._dependents_to_replace(root)
        if self.bailed:
            return False
        for entry in [*self._reverse_topological(dependents), root]:
            if entry.name in self.fail_delete or entry.urn in self.fail_delete:
                self.plan.failed.append(entry.name)
                self.plan.steps.append(Step("failed", entry.urn, entry.type, entry.name, ("delete before replace",)))
                self.cancelled = True
                return False
            self.deleted_for_replacement.add(entry.urn)
            why = ("delete before replace",) if entry is root else (f"dependent of {root.name}",)
            if entry is not root:
                self.old.pop(entry.urn, None)
                self.recreating[entry.urn] = dataclasses.replace(entry, pending_replacement=True)
            self.plan.steps.append(Step("delete-replaced", entry.urn, entry.type, entry.name, why))
        return True

    def _reverse_topological(self, entries: list[Entry]) -> list[Entry]:
        """Dependents before what they depend on (parents and providers count as dependencies)."""
        return [entry for batch in self._delete_batches(entries) for entry in batch]

    def _dependencies_of(self, entry: Entry) -> set[str]:
        """graph.DependencyGraph.DependenciesOf over the state the run started from: the provider, `dependsOn`,
        property dependencies and the parent; a dependency that is a component brings its descendants along, those
        earlier in the state's order only ("Transitive children of the dependency that are after the resource in
        the topological sort are not included as this could lead to cycles")."""
        position = self.position
        mine = position.get(entry.urn, len(position))
        direct = self._depends_on(entry)
        found = {urn for urn in direct if position.get(urn, mine) < mine}
        for urn in direct - {entry.parent}:
            dep = self.prev.get(urn)
            if dep is None or dep.custom or position.get(urn, mine) >= mine:
                continue
            found |= {u for u in self._descendants(urn) if position[u] < mine}
        return found

    def _descendants(self, urn: str) -> set[str]:
        found: set[str] = set()
        todo = [urn]
        while todo:
            for child in self.children.get(todo.pop(), []):
                if child not in found:
                    found.add(child)
                    todo.append(child)
        return found

    def _transitive_dependencies(self, urn: str) -> set[str]:
        """graph.DependencyGraph.TransitiveDependenciesOf (markAsDependency): provider, dependencies and parent chain."""
        found: set[str] = set()
        todo = [urn]
        while todo:
            entry = self.prev.get(todo.pop())
            if entry is None:
                continue
            for dep in self._depends_on(entry):
                if dep not in found:
                    found.add(dep)
                    todo.append(dep)
        found.discard(urn)
        return found

    def _delete_batches(self, entries: list[Entry]) -> list[list[Entry]]:
        """step_generator.go ScheduleDeletes: layer 0 holds the condemned resources that depend on no other condemned
        one, layer k those whose condemned dependencies are all in earlier layers; the layers run in reverse, one
        after another, each in parallel. So a resource goes in the run's first batch only when it is the deepest in
        its chain of condemned dependencies, not merely when nothing depends on it."""
        chosen = {e.urn: e for e in entries}
        position = self.position
        needs = {urn: self._dependencies_of(e) & set(chosen) for urn, e in chosen.items()}
        condemned = set(chosen)
        layers: list[list[Entry]] = []
        while condemned:
            layer = sorted((u for u in condemned if not needs[u] & condemned), key=lambda u: -position.get(u, 0))
            if not layer:  # a cycle cannot be in a state the engine wrote; refuse rather than guess an order
                raise ValueError(f"dependency cycle among {sorted(condemned)}")
            layers.append([chosen[u] for u in layer])
            condemned -= set(layer)
        return layers[::-1]

    @staticmethod
    def _depends_on(entry: Entry) -> set[str]:
        deps = set(entry.dependencies) | {u for urns in entry.property_dependencies.values() for u in urns}
        if entry.parent:
            deps.add(entry.parent)
        if entry.provider:
            deps.add(provider_urn(entry.provider))
        return deps

    # --- deletes ---------------------------------------------------------------------------------------
    def finish(self) -> Plan:
        """The end-of-run deletes: the old resources of create-before-replace replacements, then everything
        the program no longer declares, in ScheduleDeletes' batches (deployment_executor.go performPostSteps).
        A failed step cancels the rest of the run (step_executor.go cancelDueToError): after a failed create or
        update no delete runs, and after a failed delete no later batch does (the rest of its own batch was already
        under way), so nothing a failed delete depends on, transitively, is deleted in that run. A protected resource's
        refusal does not cancel, but before each batch every errored step's transitive dependencies are taken out
        (`erroredDeps`), so nothing a protected resource needs is deleted."""
        if self.bailed:
            # The step generator bailed: performPostSteps, where the deletes are generated, is never reached.
            for entry in [*self.late, *self.old.values()]:
                self.plan.skipped.append(entry.name)
            return self.plan
        late = {e.urn: e for e in self.late}
        deletable = self._deletable()
        entries = list(late.values()) + [e for e in self.old.values() if deletable(e.urn)]
        untargeted = [e.name for e in entries if e.urn not in late and self.target
                      and e.name not in self.target and e.urn not in self.target]
        for name in untargeted:
            self.plan.errors.append(f"{name}: resource will be destroyed but was not specified in --target list")
        if untargeted and not self.preview:
            # GenerateDeletes: "delete untargeted resource"; a preview lists them all and fails.
            self.bailed = self.cancelled = True
        cancelled = bool(self.failed) or self.cancelled
        errored: list[str] = []
        kept_for_errors: set[str] = set()
        for batch in self._delete_batches(entries):
            for urn in errored:
                kept_for_errors |= self._transitive_dependencies(urn)
            errored = []
            failed_here = False
            for entry in batch:
                if cancelled:
                    self.plan.skipped.append(entry.name)
                    continue
                if entry.urn in kept_for_errors:
                    # Not executed, nothing shown (performPostSteps drops it from the batch): it stays in the state.
                    self.plan.skipped.append(entry.name)
                    continue
                replaced = entry.urn in late
                if entry.protect and not replaced:
                    # step.go DeleteStep.Apply: a protected resource cannot be deleted, in a preview too.
                    # deleteProtectedError does not cancel the run; the resource stays.
                    self.plan.errors.append(f"{entry.name}: resource cannot be deleted because it is protected")
                    errored.append(entry.urn)
                    continue
                missing = entry.name in self.gone and entry.type in providers.DELETE_FAILS_WHEN_GONE
                if entry.name in self.fail or entry.urn in self.fail or (missing and not entry.retain_on_delete):
                    self.plan.failed.append(entry.name)
                    failed_here = True
                    continue
                # step.go DeleteStep.Apply: `retainOnDelete`, read from the state, drops the resource without calling
                # its provider; a delete runs with the inputs the state holds.
                op = "retain" if entry.retain_on_delete else ("delete-replaced" if replaced else "delete")
                self.plan.steps.append(Step(op, entry.urn, entry.type, entry.name))
            cancelled = cancelled or failed_here
        return self.plan

    def _deletable(self) -> Callable[[str], bool]:
        """GenerateDeletes: with `--target`, an undeclared resource is deleted only when targeted or depending on a target
        (otherwise kept, an UntargetedSameStep); with `--exclude`, neither an excluded resource nor anything it depends on, transitively
        (getExcludeDependencies). Never what an untargeted resource kept as it is depends on."""
        kept = self.kept_as_dependencies
        if self.target:
            # determineAllowedResourcesToDeleteFromTargets: the targets and everything depending on them, transitively
            # (getTargetDependents: dependsOn, property dependencies, children); those not targeted themselves are an
            # error below unless `--target-dependents` (not modelled) is given.
            targeted = {u for u, e in self.prev.items() if e.name in self.target or u in self.target}
            return lambda urn: urn not in kept and (urn in targeted or bool(self._transitive_dependencies(urn) & targeted))
        if self.exclude:
            excluded = {u for u, e in self.prev.items() if e.name in self.exclude or u in self.exclude}
            forbidden = excluded.union(*(self._transitive_dependencies(u) for u in excluded))
            return lambda urn: urn not in kept and urn not in forbidden
        return lambda urn: urn not in kept

    @property
    def state(self) -> dict[str, Entry]:
        """The state this run leaves: what was registered, and what a failed or refused delete kept."""
        kept = {s.urn for s in self.plan.steps if s.op in ("delete", "retain", "delete-replaced")}
        left = {urn: e for urn, e in self.old.items() if urn not in kept}
        # Dependents a delete-before-replace deleted and the run never re-created: still in the state, pending.
        pending = {urn: e for urn, e in self.recreating.items() if urn not in self.new}
        return {**left, **pending, **self.new}


def clear_pending_creates(pending: Sequence[PendingCreate]) -> list[PendingCreate]:
    """`pulumi refresh --clear-pending-creates`: every pending create is dropped from the state (the objects they
    may have made stay where they are). `--import-pending-creates` does not take an object into the state: it only
    relabels the operation (pkg/cmd/pulumi refresh.go; backend/snapshot.go keeps only "creating" ones), so it has no
    model here and the docs do not offer it."""
    del pending
    return []


def without(state: Mapping[str, Entry], names: Iterable[str]) -> dict[str, Entry]:
    """The state after `pulumi refresh` found these resources gone (their provider's Read set no id)."""
    dropped = set(names)
    return {urn: e for urn, e in state.items() if e.name not in dropped and urn not in dropped}


# --- the state as `pulumi stack export` writes it (version 3), for tools that edit a real state ------------

_SIG = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


def _exported(value: Any) -> Any:
    if isinstance(value, Secret):
        # As `pulumi stack export --show-secrets` writes a secret (a plain export holds ciphertext instead).
        return {_SIG: _SECRET_SIG, "plaintext": json.dumps(_exported(value.value))}
    if isinstance(value, Unknown):
        raise ValueError("a state holds no unknown values")
    if isinstance(value, dict):
        return {k: _exported(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_exported(v) for v in value]
    return value


def _imported(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get(_SIG) == _SECRET_SIG:
            return Secret(_imported(json.loads(value["plaintext"])) if "plaintext" in value else value.get("ciphertext"))
        return {k: _imported(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_imported(v) for v in value]
    return value


def to_export(state: Mapping[str, Entry]) -> dict[str, Any]:
    resources = []
    for entry in state.values():
        resources.append({
            "urn": entry.urn, "type": entry.type, "id": entry.id, "custom": entry.custom, "parent": entry.parent,
            "inputs": _exported(entry.inputs), "outputs": _exported(entry.outputs),
            "dependencies": entry.dependencies, "propertyDependencies": entry.property_dependencies,
            "provider": entry.provider, "protect": entry.protect, "retainOnDelete": entry.retain_on_delete,
            "deleteBeforeReplace": entry.delete_before_replace,
            # Not part of a real export (the engine takes them from the program); kept for a round trip.
            "ignoreChanges": entry.ignore_changes, "replaceOnChanges": entry.replace_on_changes,
            "generation": entry.generation, "pendingReplacement": entry.pending_replacement,
        })
    return {"version": 3, "deployment": {"resources": resources}}


def from_export(document: Mapping[str, Any]) -> dict[str, Entry]:
    resources = (document.get("deployment") or document).get("resources") or []
    return {r["urn"]: Entry(urn=r["urn"], type=r["type"], name=r["urn"].rsplit("::", 1)[-1], parent=r.get("parent", ""),
                            custom=r.get("custom", True), inputs=_imported(r.get("inputs") or {}),
                            outputs=_imported(r.get("outputs") or {}), id=r.get("id"),
                            dependencies=list(r.get("dependencies") or []),
                            property_dependencies=dict(r.get("propertyDependencies") or {}),
                            provider=r.get("provider", ""), protect=r.get("protect", False),
                            retain_on_delete=r.get("retainOnDelete", False),
                            delete_before_replace=r.get("deleteBeforeReplace", False),
                            ignore_changes=list(r.get("ignoreChanges") or []),
                            replace_on_changes=list(r.get("replaceOnChanges") or []),
                            generation=r.get("generation", 1),
                            pending_replacement=r.get("pendingReplacement", False))
            for r in resources}


def canonical(value: Any, secret: Callable[[Secret], str]) -> str:
    def default(v: Any) -> Any:
        if isinstance(v, Secret):
            return secret(v)
        if isinstance(v, Unknown):
            return "<unknown>"
        return repr(v)
    return json.dumps(value, default=default, sort_keys=True)


__all__ = ["Declared", "Deployment", "Entry", "Plan", "Registration", "Secret", "Step", "Unknown",
           "apply_ignore_changes", "canonical", "contains_unknown", "diff_paths", "without"]
