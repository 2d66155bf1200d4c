"""The hosts of a fake site for tools.preflight's tests, behind tests/fake_ssh.py, all on 127.0.0.1:

* A Proxmox node runs each probe for real, with bash, on this machine: the commands it would find on a node that this
  machine lacks or that would touch the network (pvesm, sudo, id, arping, ip, ping, chronyd) are stubs on PATH that
  print what the real ones print (their outputs as recorded in the notes of #41: iputils arping 20221126, chrony 4.3,
  pvesm of pve-storage), driven by `NodeState`. `/usr/sbin/pvesm`, which the probe names by its full path as the
  sudoers rules do, is pointed at the stub. Perl's Net::DNS and openssl are the real ones, against `FakeDns` and a TLS
  server on 127.0.0.1.
* A Hyper-V host cannot run here (no Windows, no PowerShell): `HypervState.answer` decodes the probe
  (render.hyperv.script_from_ssh_command), reads the inputs the script assigns, and prints the JSON line the script
  prints for the host it describes, field by field as the script builds it (enums as strings).
"""
from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import dns.message
import dns.rcode
import dns.rrset

from render.hyperv import script_from_ssh_command

GIB = 1024 ** 3


@dataclass
class NodeState:
    """What the Proxmox node's stubs answer; a test changes it to take something away."""
    uid: int = 0
    sudo: bool = True                     # sudo -n runs pvesm without a password
    sudo_tee: bool = True                 # sudo -n -l /usr/bin/tee <snippets>/<file> is allowed
    sudo_rules: list[str] = field(default_factory=list)       # what `sudo -n -l` lists (sudo 1.9's format)
    pvesm: bool = True                    # pvesm apiinfo works (as root)
    stores: dict[str, str] = field(default_factory=dict)      # storage -> path
    links: list[str] = field(default_factory=lambda: ["vmbr0"])
    arping: bool = True                   # iputils arping installed
    used: dict[str, str] = field(default_factory=dict)        # address -> MAC of the machine answering ARP
    local: list[str] = field(default_factory=list)            # addresses configured on the node itself
    stale: dict[str, str] = field(default_factory=dict)       # address -> MAC the neighbour table remembers (STALE)
    chronyd: bool = True
    ntp: dict[str, float] = field(default_factory=dict)       # server -> offset it would report


_STUB = r'''import json, os, sys
state = json.load(open(os.environ["FAKE_NODE_STATE"]))
name, args = os.path.basename(sys.argv[0]), sys.argv[1:]
def out(text, code=0):
    sys.stdout.write(text)
    sys.exit(code)
if name == "id":
    out(f"{state['uid']}\n")
if name == "sudo":
    assert args[0] == "-n", args
    if args[1:] == ["-l"]:
        out("\n".join(state["sudo_rules"]) + "\n")
    if args[1] == "-l":
        out("" if state["sudo_tee"] else "", 0 if state["sudo_tee"] else 1)
    if not state["sudo"]:
        sys.stderr.write("sudo: a password is required\n"); sys.exit(1)
    os.environ["FAKE_SUDO"] = "1"
    command = args[1:]
    if command[0] == "/usr/sbin/pvesm":
        command[0] = os.path.join(os.environ["FAKE_STUBS"], "pvesm")
    os.execv(command[0], command)
if name == "pvesm":
    if state["uid"] != 0 and not os.environ.get("FAKE_SUDO"):
        sys.stderr.write("please run as root\n"); sys.exit(255)
    if args[0] == "apiinfo":
        out("APIVER 11\nAPIAGE 2\n" if state["pvesm"] else "", 0 if state["pvesm"] else 255)
    if args[0] == "path":
        store, _, volume = args[1].partition(":")
        if store not in state["stores"]:
            sys.stderr.write(f"storage '{store}' does not exist\n"); sys.exit(255)
        out(os.path.join(state["stores"][store], volume) + "\n")
if name == "arping":
    if args == ["-V"]:
        out("arping from iputils 20221126\n")
    ip, iface = args[-1], args[args.index("-I") + 1]
    if ip in state["used"]:
        out(f"ARPING {ip} from 0.0.0.0 {iface}\nUnicast reply from {ip} [{state['used'][ip].upper()}]  0.603ms\n"
            "Sent 1 probes (1 broadcast(s))\nReceived 1 response(s)\n", 1)
    out(f"ARPING {ip} from 0.0.0.0 {iface}\nSent 2 probes (2 broadcast(s))\nReceived 0 response(s)\n")
if name == "ip":
    if args[:3] == ["link", "show", "dev"]:
        if args[3] in state["links"]:
            out(f"4: {args[3]}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 state UP\n")
        sys.stderr.write(f'Device "{args[3]}" does not exist.\n'); sys.exit(1)
    if args[:4] == ["-o", "addr", "show", "to"]:
        ip = args[4].split("/")[0]
        out(f"2: vmbr0    inet {ip}/24 scope global vmbr0\\       valid_lft forever preferred_lft forever\n"
            if ip in state["local"] else "")
    if args[:4] == ["-j", "neigh", "show", "to"]:
        ip = args[4]
        if ip in state["used"]:
            out(json.dumps([{"dst": ip, "lladdr": state["used"][ip], "state": ["REACHABLE"]}]) + "\n")
        if ip in state["stale"]:
            out(json.dumps([{"dst": ip, "lladdr": state["stale"][ip], "state": ["DELAY"]}]) + "\n")
        out(json.dumps([{"dst": ip, "state": ["FAILED"]}]) + "\n")
if name == "ping":
    sys.exit(0 if args[-1] in state["used"] else 1)
if name == "chronyd":
    server = args[-1].split()[1]
    head = "2026-12-06T01:08:24Z chronyd version 4.3 starting (+CMDMON +NTP)\n2026-12-06T01:08:24Z Disabled control of system clock\n"
    if server in state["ntp"]:
        sys.stderr.write(head + f"2026-12-06T01:08:24Z System clock wrong by {state['ntp'][server]:.6f} seconds (ignored)\n"
                         "2026-12-06T01:08:24Z chronyd exiting\n"); sys.exit(0)
    sys.stderr.write(head + "2026-12-06T01:08:30Z Timeout reached\n2026-12-06T01:08:30Z chronyd exiting\n"); sys.exit(1)
sys.stderr.write(f"stub {name}: unexpected {args}\n"); sys.exit(99)
'''
_STUBS = ("id", "sudo", "pvesm", "arping", "ip", "ping", "chronyd")
# The node's other commands the probes use, taken from this machine (PATH holds nothing else, so a stub taken away is
# absent, as on a node without that package).
_REAL = ("bash", "perl", "openssl", "timeout", "tr", "head", "grep", "dirname", "wc", "sleep", "sed")


class ProxmoxNode:
    """Runs each command with bash on this machine, the stubs first on PATH (a command the node lacks is absent)."""

    def __init__(self, directory: Path, state: NodeState):
        self.state = state
        self.directory = directory
        self.stubs = directory / "bin"
        self.stubs.mkdir(parents=True)
        (self.stubs / "stub.py").write_text(f"#!{sys.executable}\n{_STUB}")
        (self.stubs / "stub.py").chmod(0o755)
        self.real = directory / "real"
        self.real.mkdir()
        for name in _REAL:
            found = shutil.which(name)
            assert found, f"{name} is needed by the preflight's node probes"
            (self.real / name).symlink_to(found)
        self.state_file = directory / "state.json"
        self.lock = threading.Lock()

    def answer(self, command: str, stdin: bytes) -> tuple[str, str, int]:
        with self.lock:        # two probes run at once (the node's and the network's): the stubs change only between
            for name in _STUBS:
                target = self.stubs / name
                absent = (name == "arping" and not self.state.arping) or (name == "chronyd" and not self.state.chronyd)
                if absent and target.is_symlink():
                    target.unlink()
                elif not absent and not target.is_symlink():
                    target.symlink_to(self.stubs / "stub.py")
            text = json.dumps(asdict(self.state))
            if not self.state_file.exists() or self.state_file.read_text() != text:
                partial = self.state_file.with_suffix(".partial")
                partial.write_text(text)
                partial.replace(self.state_file)
        # The probe names pvesm by its full path, as the sudoers rules do: here the stub.
        command = command.replace("/usr/sbin/pvesm", str(self.stubs / "pvesm"))
        env = {"PATH": f"{self.stubs}:{self.real}", "FAKE_NODE_STATE": str(self.state_file),
               "FAKE_STUBS": str(self.stubs), "LANG": "C"}
        done = subprocess.run([str(self.real / "bash"), "-c", command], input=stdin, capture_output=True, env=env, timeout=120)
        return done.stdout.decode(), done.stderr.decode(), done.returncode


def lab_node(directory: Path) -> ProxmoxNode:
    """examples/lab's node pve: root (or a user with the provider's sudoers lines), snippets on local (a directory here),
    vmbr0, every address free but the gateway's, pool.ntp.org answering."""
    snippets = directory / "var-lib-vz"
    (snippets / "snippets").mkdir(parents=True)
    # The Proxmox provider's documented sudoers lines, the tee rule for this storage's snippets.
    rules = ["User pulumi may run the following commands on pve:",
             f"    (root) NOPASSWD: /usr/sbin/pvesm, /usr/sbin/qm, /usr/bin/tee {snippets}/snippets/[a-zA-Z0-9_][a-zA-Z0-9_.-]*"]
    return ProxmoxNode(directory / "node", NodeState(stores={"local": str(snippets)}, sudo_rules=rules,
                                                     used={"192.168.1.1": "bc:24:11:00:00:01"},
                                                     ntp={"pool.ntp.org": 0.0021}))


@dataclass
class HypervState:
    """A Hyper-V host as the probe reads it; a test changes it to take something away."""
    default_shell: str | None = r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe"
    vms_error: str | None = None
    features: dict[str, str] = field(default_factory=lambda: {"Hyper-V": "Installed", "Hyper-V-PowerShell": "Installed"})
    hypervisor: bool = True
    vmms: str | None = "Running"
    switches: dict[str, list[str]] = field(default_factory=lambda: {"External": ["External"]})
    vms: list[str] = field(default_factory=list)
    folder: str = "D:\\"
    free: int = 500 * GIB
    images: dict[str, dict[str, Any]] = field(default_factory=dict)     # path -> Get-VHD fields (+ build)
    neighbors: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # address -> (State or none, MAC)
    off_link: list[str] = field(default_factory=list)
    dns: dict[str, list[str]] = field(default_factory=dict)             # name -> A records
    scripts: list[str] = field(default_factory=list)

    def answer(self, command: str, stdin: bytes) -> tuple[str, str, int]:
        if command == r"reg query HKLM\SOFTWARE\OpenSSH /v DefaultShell":
            # reg.exe's output (reg-query.md): CRLF lines, the value indented by four spaces, columns four apart.
            if self.default_shell is None:
                return "", "ERROR: The system was unable to find the specified registry key or value.\r\n", 1
            return (f"\r\nHKEY_LOCAL_MACHINE\\SOFTWARE\\OpenSSH\r\n    DefaultShell    REG_SZ    {self.default_shell}\r\n"
                    "\r\n", "", 0)
        powershell = (self.default_shell or "").lower().endswith(("\\powershell.exe", "\\pwsh.exe"))
        if not powershell and len(command) > 8191:
            return "", "The command line is too long.\r\n", 1            # cmd.exe's limit (render/hyperv.py)
        script = script_from_ssh_command(command)
        if script is None or not script.startswith("# Preflight, on one Hyper-V host"):
            return "", "'x' is not recognized as an internal or external command", 1
        self.scripts.append(script)
        inputs = _ps_inputs(script)
        report: dict[str, Any] = {"v": 1}
        report["hyperv"] = {"features": [{"name": n, "state": s} for n, s in self.features.items()],
                            "module": self.features.get("Hyper-V-PowerShell") == "Installed",
                            "hypervisorPresent": self.hypervisor, "vmms": self.vmms}
        types = self.switches.get(inputs["SwitchName"], [])
        report["switch"] = {"count": len(types), "types": types}
        report["vms"] = {"error": self.vms_error} if self.vms_error else \
            {"names": [v for v in self.vms if v in inputs["VmNames"]]}
        report["folder"] = {"checked": self.folder, "free": self.free, "fileSystem": "NTFS"}
        report["golden"] = {}
        for key, path in zip(inputs["GoldenKeys"], inputs["GoldenPaths"], strict=True):
            image = self.images.get(path)
            if image is None:
                report["golden"][key] = {"exists": False}
                continue
            part = {"exists": True, **{k: v for k, v in image.items() if k != "build"}}
            if inputs["MountImages"] and not image["attached"] and image["format"] == "VHDX" \
                    and image["type"] != "Differencing":
                part["build"] = {"build": image["build"]}
            report["golden"][key] = part
        if inputs["Addresses"]:
            report["addresses"] = {}
            for address in [*inputs["Addresses"], inputs["Gateway"]]:
                state, mac = self.neighbors.get(address, ("Unreachable", "00-00-00-00-00-00"))
                report["addresses"][address] = {"onLink": address not in self.off_link, "state": state,
                                                "mac": mac if state is not None else None}
            report["dns"] = [{"server": s, "name": n, "answer": {"addresses": self.dns[n]} if n in self.dns else
                              {"error": f"{n} : DNS name does not exist"}}
                             for s in inputs["DnsServers"] for n in inputs["DnsNames"]]
        return json.dumps(report, separators=(",", ":")) + "\r\n", "", 0


def _ps_value(text: str) -> Any:
    text = text.strip()
    if text in ("$true", "$false"):
        return text == "$true"
    if text.startswith("@("):
        return [v.replace("''", "'") for v in re.findall(r"'((?:[^']|'')*)'", text)]
    return text[1:-1].replace("''", "'")


def _ps_inputs(script: str) -> dict[str, Any]:
    """The `$Name = value` lines render/script_files.py writes for the probe's inputs."""
    names = ("SwitchName", "VmFolder", "GoldenKeys", "GoldenPaths", "MountImages", "VmNames", "Addresses", "Gateway",
             "DnsServers", "DnsNames")
    found = {m.group(1): _ps_value(m.group(2)) for m in re.finditer(r"^\$(\w+) = (.*)$", script, re.M)
             if m.group(1) in names}
    assert set(found) == set(names), set(names) - set(found)
    return found


def lab_host() -> HypervState:
    """examples/lab's host hv: ready, its golden image a win2022 VHDX, the node addresses free."""
    return HypervState(
        images={r"D:\golden\ws2022-sysprep.vhdx": {"format": "VHDX", "type": "Dynamic", "attached": False,
                                                   "fileSize": 14 * GIB, "size": 40 * GIB, "build": "10.0.20348"}},
        neighbors={"192.168.1.1": ("Reachable", "BC-24-11-00-00-01")},
        dns={"dl.k8s.io": ["34.107.204.206"], "pool.ntp.org": ["162.159.200.1"]})


class FakeDns:
    """A DNS server on 127.0.0.1 (UDP, dnspython): A records for the names it knows, NXDOMAIN for the rest."""

    def __init__(self, records: dict[str, str]):
        self.records = records
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                wire, peer = self.socket.recvfrom(4096)
            except OSError:
                return
            query = dns.message.from_wire(wire)
            response = dns.message.make_response(query)
            name = query.question[0].name.to_text().rstrip(".")
            if name in self.records:
                response.answer.append(dns.rrset.from_text(name + ".", 300, "IN", "A", self.records[name]))
            else:
                response.set_rcode(dns.rcode.NXDOMAIN)
            try:
                self.socket.sendto(response.to_wire(), peer)
            except OSError:
                return

    def close(self) -> None:
        self.socket.close()

