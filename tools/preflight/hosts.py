"""The preflight's checks of the hosts over SSH, as the program signs in to them: each Proxmox node (the provider's
snippet uploads) and each Hyper-V host (every Windows node's steps). One probe per host (render/preflight.py), which
reads only; this module judges what it printed. The network, read from one host of each kind, is network.py's."""
from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from config.compat import WINDOWS
from config.model import READ_HOST_KEY, HypervHostSpec, ProxmoxNodeSpec, StackSpec
from config.secret_keys import SECRETS
from render.preflight import hyperv_host_probe, proxmox_node_probe
from tools.preflight import ssh
from tools.preflight.proxmox_api import GIB
from tools.preflight.results import FAIL, PASS, WARN, Result

# The secrets the preflight signs in with, where the stack needs them (config/secret_keys.py says when).
SSH_SECRETS = ("proxmoxSshPrivateKey", "hypervSshPrivateKey", "hypervSshPassword", "bastionSshPrivateKey")
POWERSHELL = r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe"
# Runs under cmd.exe and PowerShell alike (reg.exe), so it reads DefaultShell whichever it is.
READ_DEFAULT_SHELL = r"reg query HKLM\SOFTWARE\OpenSSH /v DefaultShell"


@dataclass(frozen=True)
class Access:
    """How the preflight signs in: the secrets (None where the stack's config gave none) and the bastion."""
    proxmox_key: str | None
    hyperv_key: str | None
    hyperv_password: str | None
    bastion: ssh.Endpoint | None
    missing: dict[str, str] = field(default_factory=dict)   # secret key -> why it could not be read


Runner = Callable[..., ssh.Completed]


def ssh_results(host: str, endpoint: ssh.Endpoint, error: ssh.SshError | None, os_kind: str, secret: str) -> list[Result]:
    """The sign-in itself (reachable, the host key as pinned, the credential accepted), and the probe when it failed
    after the sign-in; a bastion's refusal is the bastion's, with its own fix."""
    where = f"{endpoint.user}@{endpoint.host}:{endpoint.port}"
    if error is not None and error.stage == "exec":
        return [Result(host, "SSH", PASS, f"signed in as {where}"),
                Result(host, "probe", FAIL, str(error), "run the probe again; if it keeps failing, run its commands by "
                                                        "hand on the host (docs/preflight.md lists them)")]
    if error is None:
        if endpoint.host_key is None:
            return [Result(host, "SSH", WARN, f"signed in as {where}; the host key is not pinned "
                                              "(security.pinHostKeys: false)",
                           f"pin it: hostKey, read on the host's console with `{READ_HOST_KEY[os_kind]}`")]
        return [Result(host, "SSH", PASS, f"signed in as {where}, host key as pinned")]
    if error.bastion:
        os_kind, secret, whose = "linux", "bastionSshPrivateKey", "access.bastion"
    else:
        whose = "the host"
    fixes = {
        "host-key": f"if {whose} was reinstalled, pin its new key (read on its console: `{READ_HOST_KEY[os_kind]}`); "
                    "otherwise something else answers at this address",
        "auth": f"put the public half of {secret} in the user's authorized keys on {whose}"
                + (" (an administrator's: C:\\ProgramData\\ssh\\administrators_authorized_keys)"
                   if os_kind == "windows" else ""),
        "key": f"{secret} must be an unencrypted ed25519, ECDSA or RSA private key",
    }
    fix = fixes.get(error.kind, "check the address and that the SSH port is open from here"
                                + (" to the bastion" if error.bastion else " (and from the bastion, when there is one)"))
    return [Result(host, "SSH", FAIL, str(error), fix)]


def _not_signed_in(host: str, access: Access, secret: str) -> list[Result] | None:
    """A FAIL when a secret the sign-in needs could not be read (the bastion's included), else None."""
    for key in (secret, "bastionSshPrivateKey"):
        if key in access.missing:
            return [Result(host, "SSH", FAIL, f"not checked: no {key} ({access.missing[key]})",
                           f"pulumi config set --secret {key} ... (or the environment variable docs/preflight.md names)")]
    return None


def _key_values(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def check_proxmox_node(spec: StackSpec, node: ProxmoxNodeSpec, access: Access, run: Runner = ssh.run) -> list[Result]:
    """Sign-in as proxmox.sshUser, and the snippets directory the provider writes to (tee, through sudo -n for a user
    other than root)."""
    host = node.name
    refused = _not_signed_in(host, access, "proxmoxSshPrivateKey")
    if refused is not None:
        return refused
    endpoint = ssh.Endpoint(str(node.address), 22, spec.proxmox.ssh_user, node.host_key, private_key=access.proxmox_key)
    store = spec.proxmox.datastores.snippets
    file_name = f"{spec.cluster.name}-{node.name}-user-data.yaml"
    try:
        done = run(endpoint, proxmox_node_probe(store, file_name), timeout=30, bastion=access.bastion)
    except ssh.SshError as error:
        return ssh_results(host, endpoint, error, "linux", "proxmoxSshPrivateKey")
    results = ssh_results(host, endpoint, None, "linux", "proxmoxSshPrivateKey")
    found = _key_values(done.stdout)
    sudo_list = [line.split("=", 1)[1] for line in done.stdout.splitlines() if line.startswith("sudo_list=")]
    if done.status != 0 or "pvesm" not in found:
        return [*results, Result(host, "snippets upload", FAIL, f"the probe failed ({done.status}): "
                                 f"{(done.stderr or done.stdout).strip()[-300:]}", "run it by hand to see why")]
    user = spec.proxmox.ssh_user
    sudoers = (f"with sudo and, in `visudo -f /etc/sudoers.d/{user}`: `{user} ALL=(root) NOPASSWD: /usr/sbin/pvesm`, "
               f"`{user} ALL=(root) NOPASSWD: /usr/sbin/qm` and `{user} ALL=(root) NOPASSWD: /usr/bin/tee "
               "<the storage's path>/snippets/[a-zA-Z0-9_][a-zA-Z0-9_.-]*` (the Proxmox provider's docs)")
    if found["pvesm"] != "ok":
        results.append(Result(host, "pvesm", FAIL, f"{user} cannot run pvesm: {found['pvesm'].removeprefix('refused ')}",
                              sudoers if user != "root" else "check the node's Proxmox VE installation"))
        return results
    results.append(Result(host, "pvesm", PASS, "runs" + (" through sudo -n" if found.get("uid") != "0" else "")))
    path = found.get("path", "")
    check = f"snippets directory ({store})"
    if path.startswith("error"):
        results.append(Result(host, check, FAIL, f"pvesm path {store}:snippets/...: {path.removeprefix('error ')}",
                              "check proxmox.datastores.snippets"))
    elif found.get("dir") != "present":
        results.append(Result(host, check, FAIL, f"{path.rsplit('/', 1)[0]} does not exist",
                              f"enable snippets on {store} (`pvesm set {store} --content <its content>,snippets` makes "
                              "it), or `mkdir -p` it as root"))
    elif found.get("write") != "ok":
        results.append(Result(host, check, FAIL, f"{user} may not write {path.rsplit('/', 1)[0]}",
                              sudoers if user != "root" else "the file system is read-only: check the storage"))
    elif found.get("uid") != "0" and not sudo_without_password(sudo_list, "/usr/bin/tee", path):
        # `sudo -n -l CMD` lists a command a rule allows with a password too, whenever another rule of the user's is
        # NOPASSWD; the upload's `sudo -n tee` would then stop at the password.
        results.append(Result(host, check, WARN, f"{user} may run tee on {path.rsplit('/', 1)[0]} through sudo, but no "
                                                 "rule sudo -l lists allows it without a password",
                              sudoers))
    else:
        results.append(Result(host, check, PASS, f"{path.rsplit('/', 1)[0]} is writable"))
    return results


@dataclass
class HypervFindings:
    results: list[Result]
    report: dict[str, Any] | None = None      # the probe's JSON, for the network checks


def parse_report(stdout: str) -> dict[str, Any] | None:
    """The probe's one JSON line: the last line that starts with `{` (a profile may print before it)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                parsed: dict[str, Any] = json.loads(line)
                return parsed
            except ValueError:
                return None
    return None


def _error(part: Any) -> str | None:
    return str(part["error"]) if isinstance(part, dict) and "error" in part else None


def _hyperv_endpoint(host: HypervHostSpec, access: Access) -> ssh.Endpoint:
    return ssh.Endpoint(str(host.address), host.port, host.user, host.host_key, private_key=access.hyperv_key,
                        password=access.hyperv_password)


def _secret(spec: StackSpec) -> str:
    """The Hyper-V hosts' sign-in secret the stack needs (config/secret_keys.py)."""
    return next(key for key in ("hypervSshPrivateKey", "hypervSshPassword") if SECRETS[key].needed(spec))


def check_hyperv_host(spec: StackSpec, host: HypervHostSpec, access: Access, mount_images: bool,
                      network: tuple[list[str], list[str]] | None = None, run: Runner = ssh.run) -> HypervFindings:
    """Sign-in, DefaultShell, the Hyper-V role, the vSwitch, each golden image and the VM folder's free space; with
    `network` (addresses, DNS names) also the site's network as this host sees it, judged in network.py.

    DefaultShell is read first with `reg query`, which cmd.exe and PowerShell both run: the probe itself, an encoded
    PowerShell command longer than cmd.exe's 8,191 characters (render/hyperv.py), runs only where the shell is
    PowerShell."""
    name = host.name
    secret = _secret(spec)
    refused = _not_signed_in(name, access, secret)
    if refused is not None:
        return HypervFindings(refused)
    endpoint = _hyperv_endpoint(host, access)
    try:
        shell = run(endpoint, READ_DEFAULT_SHELL, timeout=30, bastion=access.bastion)
    except ssh.SshError as error:
        return HypervFindings(ssh_results(name, endpoint, error, "windows", secret))
    results = ssh_results(name, endpoint, None, "windows", secret)
    shell_result = _shell(name, shell)
    results.append(shell_result)
    if shell_result.status == FAIL:
        return HypervFindings(results)
    nodes = [n for n in spec.nodes.windows if n.hyperv_host == name]
    addresses, dns_names = network or ([], [])
    command = hyperv_host_probe(
        host.switch_name, host.vm_folder, {str(k): v for k, v in host.golden_images.items()}, mount_images,
        [n.name for n in nodes], addresses=addresses, gateway=str(spec.network.nodes.gateway) if addresses else "",
        dns_servers=[str(s) for s in spec.network.dns_servers] if addresses else [], dns_names=dns_names)
    try:
        done = run(endpoint, command, timeout=120, bastion=access.bastion)
    except ssh.SshError as error:
        # The first session signed in: a second that fails, to connect or to finish, is the probe's failure.
        return HypervFindings([*results, Result(name, "probe", FAIL, str(error),
                                                "run the preflight again; if it fails again, check the host")])
    report = parse_report(done.stdout)
    if report is None:
        results.append(Result(name, "probe", FAIL, f"no JSON from PowerShell (exit {done.status}): "
                                                   f"{(done.stderr or done.stdout).strip()[-300:]}",
                              "run the probe again; if it keeps failing, read the error above"))
        return HypervFindings(results)
    results += _role(name, report.get("hyperv"))
    results += _switch(name, host.switch_name, report.get("switch"))
    vms = report.get("vms") or {}
    if _error(vms):
        results.append(Result(name, "VMs", WARN, f"not listed: {_error(vms)}; the stack's Windows VMs on this host "
                                                 "are taken as new", "check the Hyper-V role above"))
    existing = set(vms.get("names") or [])
    results += _golden(name, host, report.get("golden") or {}, nodes, existing)
    copies = [n for n in nodes if n.name not in existing]
    results += _space(name, host, report.get("folder"), report.get("golden") or {}, copies)
    return HypervFindings(results, report)


def _shell(name: str, done: ssh.Completed) -> Result:
    """`reg query HKLM\\SOFTWARE\\OpenSSH /v DefaultShell`: `    DefaultShell    REG_SZ    C:\\...\\powershell.exe` (exit 0), or
    exit 1 with "unable to find" when it is not set (reg-query.md; the value Win32-OpenSSH reads, else cmd.exe)."""
    fix = (f"New-ItemProperty -Path 'HKLM:\\SOFTWARE\\OpenSSH' -Name DefaultShell -Value '{POWERSHELL}' "
           "-PropertyType String -Force")
    check = "OpenSSH DefaultShell"
    found = re.search(r"^\s+DefaultShell\s+REG_\w+\s+(.*?)\s*$", done.stdout, re.M | re.I)
    if found is None:
        # reg.exe exits 1 when the value or the key is missing (its message is in the host's language): either way
        # OpenSSH runs cmd.exe.
        if done.status == 1:
            return Result(name, check, FAIL, "not set (cmd.exe): the program's commands need PowerShell", fix)
        return Result(name, check, FAIL, f"not read (exit {done.status}): {(done.stderr or done.stdout).strip()[-200:]}",
                      fix)
    shell = found.group(1)
    if shell.lower().endswith("\\powershell.exe"):
        return Result(name, check, PASS, shell)
    if shell.lower().endswith("\\pwsh.exe"):
        return Result(name, check, WARN, f"{shell}: PowerShell 7, where the program's scripts are written for Windows "
                                         "PowerShell 5.1", fix)
    return Result(name, check, FAIL, f"{shell}: the program's commands need PowerShell", fix)


def _role(name: str, part: Any) -> list[Result]:
    fix = "Install-WindowsFeature -Name Hyper-V -IncludeManagementTools -Restart"
    if _error(part):
        return [Result(name, "Hyper-V role", FAIL, _error(part) or "", fix)]
    states = {f["name"]: f["state"] for f in part.get("features") or []}
    if "InstallPending" in states.values():
        return [Result(name, "Hyper-V role", FAIL, "installed, waiting for a restart", "Restart-Computer")]
    missing = [f for f in ("Hyper-V", "Hyper-V-PowerShell") if states.get(f) != "Installed"]
    if missing or not part.get("module"):
        return [Result(name, "Hyper-V role", FAIL, f"not installed: {', '.join(missing) or 'the Hyper-V module'}", fix)]
    if not part.get("hypervisorPresent"):
        return [Result(name, "Hyper-V role", FAIL, "installed, but no hypervisor runs (virtualization off in the "
                                                   "firmware, or nested without it)",
                       "turn on virtualization (VT-x/AMD-V) in the firmware, then restart")]
    if part.get("vmms") != "Running":
        return [Result(name, "Hyper-V role", FAIL, f"the Virtual Machine Management service is {part.get('vmms')}",
                       "Start-Service vmms")]
    return [Result(name, "Hyper-V role", PASS, "installed, hypervisor running, PowerShell module present")]


def _switch(name: str, switch: str, part: Any) -> list[Result]:
    check = f"vSwitch {switch}"
    if _error(part):
        return [Result(name, check, FAIL, _error(part) or "", "check the Hyper-V role above, then `Get-VMSwitch`")]
    types = list(part.get("types") or [])
    if not types:
        return [Result(name, check, FAIL, "no such switch",
                       f"New-VMSwitch -Name '{switch}' -NetAdapterName '<uplink>' -AllowManagementOS $true (Get-NetAdapter "
                       "lists the uplinks), or fix hyperv.hosts[].switchName")]
    if len(types) > 1:
        return [Result(name, check, FAIL, f"{len(types)} switches have that name", "rename all but one (Rename-VMSwitch)")]
    if types[0] != "External":
        return [Result(name, check, FAIL, f"{types[0]}, not External: the VMs would not reach the network",
                       f"Set-VMSwitch -Name '{switch}' -NetAdapterName '<uplink>' (makes it External)")]
    return [Result(name, check, PASS, "External")]


def _golden(name: str, host: HypervHostSpec, golden: dict[str, Any], nodes: list[Any], existing: set[str]) -> list[Result]:
    results = []
    wanted = {n.version for n in nodes}
    for key, path in host.golden_images.items():
        check = f"golden image {key}"
        part = golden.get(key)
        rebuild = "docs/images.md builds one"
        if part is None or _error(part):
            results.append(Result(name, check, FAIL, _error(part) or "not read", rebuild))
        elif not part.get("exists"):
            level = FAIL if key in wanted and any(n.name not in existing for n in nodes if n.version == key) else WARN
            results.append(Result(name, check, level, f"{path} does not exist", f"copy it there, or fix "
                                                                              f"hyperv.hosts[].goldenImages.{key}; "
                                                                              f"{rebuild}"))
        elif part.get("format") != "VHDX":
            results.append(Result(name, check, FAIL, f"{path} is a {part.get('format')}, not a VHDX",
                                  f"Convert-VHD -Path '{path}' -DestinationPath <new>.vhdx, then point goldenImages.{key} "
                                  "at it"))
        elif part.get("type") == "Differencing":
            results.append(Result(name, check, FAIL, f"{path} is a differencing disk; a copy would lose its parent",
                                  f"Convert-VHD -Path '{path}' -DestinationPath <new>.vhdx -VHDType Dynamic"))
        elif part.get("attached"):
            results.append(Result(name, check, FAIL, f"{path} is attached (a VM's disk, or mounted): it cannot be copied",
                                  f"Dismount-VHD -Path '{path}', or detach it from the VM using it"))
        else:
            build = part.get("build")
            expected = WINDOWS[key].build
            if build is None:
                results.append(Result(name, check, PASS, f"a {part.get('type', '').lower()} VHDX; its build is not read "
                                                         "(--read-images mounts it read-only to read it)"))
            elif _error(build):
                results.append(Result(name, check, WARN, f"its build could not be read: {_error(build)}",
                                      "run the preflight again when no `pulumi up` runs"))
            elif str(build.get("build", "")) != expected:
                results.append(Result(name, check, FAIL, f"{path} holds Windows {build.get('build')}, not {key} "
                                                         f"({expected})", f"point goldenImages.{key} at a {key} image"))
            else:
                results.append(Result(name, check, PASS, f"a VHDX of Windows {build.get('build')}"))
    return results


def _space(name: str, host: HypervHostSpec, part: Any, golden: dict[str, Any], copies: list[Any]) -> list[Result]:
    check = f"free space ({host.vm_folder})"
    if not copies:
        return []
    if _error(part):
        return [Result(name, check, WARN, f"not read: {_error(part)}", f"check vmFolder ({host.vm_folder})")]
    free = int(part.get("free", 0))
    copied = sum(int((golden.get(n.version) or {}).get("fileSize") or 0) for n in copies)
    grown = sum(n.disk_gb for n in copies) * GIB
    what = f"{free // GIB} GiB free on {part.get('checked')}; the {len(copies)} new VM disks"
    if free < copied:
        return [Result(name, check, FAIL, f"{what} are {copied // GIB} GiB as copied",
                       "free space there, or another vmFolder")]
    if free < grown:
        return [Result(name, check, WARN, f"{what} grow to {grown // GIB} GiB",
                       "free space there before the disks fill, or another vmFolder")]
    return [Result(name, check, PASS, f"{what} grow to {grown // GIB} GiB at most")]


def sudo_without_password(listing: list[str], command: str, argument: str) -> bool:
    """Whether `sudo -n -l`'s listing lets the user run `command argument` as root without a password. Each rule line is
    `(runas) TAG: cmd args, cmd args, TAG: ...`; a NOPASSWD or PASSWD tag holds for the commands after it in the line,
    commas escaped with a backslash belong to the arguments, a command's arguments are a glob (fnmatch), `ALL` is any
    command (sudoers(5), "Tag_Spec"), and where several entries match, the last one decides ("the last match is
    used")."""
    decided = False
    for line in listing:
        rule = line.strip()
        if not rule.startswith("(") or ")" not in rule:
            continue
        runas, rule = rule[1:].split(")", 1)
        if not {"root", "ALL"} & {user.strip() for user in runas.split(":")[0].split(",")}:
            continue
        nopasswd = False
        for item in re.split(r"(?<!\\),", rule):
            words = item.replace("\\,", ",").split()
            while words and words[0].endswith(":"):
                tag = words.pop(0)
                if tag in ("NOPASSWD:", "PASSWD:"):
                    nopasswd = tag == "NOPASSWD:"
            if words == ["ALL"] or (words and words[0] == command and (
                    len(words) == 1 or fnmatch.fnmatchcase(argument, " ".join(words[1:])))):
                decided = nopasswd
    return decided
