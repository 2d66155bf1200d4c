"""A fake Proxmox VE API on 127.0.0.1 over TLS, for tools.preflight's tests: GET only, the token checked, each answer in
the API's documented shape (proxmox/pve-docs api-viewer apidata.js at 9.1.3 and the Perl handlers behind it; the
notes of #41 quote them): `{"data": ...}`, booleans as 0/1, `memory` as a string, storage content comma-separated,
`{"data": null, "message": ...}` with the status on an error (pve-http-server since 5.2.0), 401 for a bad token,
403 "Permission check failed (path, priv)". Tests edit `FakeSite` to take a prerequisite away."""
from __future__ import annotations

import json
import ssl
import subprocess
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

GIB = 1024 ** 3
TOKEN = "pulumi@pve!preflight=0b6a4c3e-9f1d-4e2a-8c7b-5d9e0f1a2b3c"
# No proxy between the tests and 127.0.0.1, whatever this machine's environment says (tests monkeypatch these away).
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
ALL_PRIVILEGES = (
    "VM.Audit", "VM.Clone", "VM.Allocate", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Disk", "VM.Config.Network",
    "VM.Config.Cloudinit", "VM.Config.CDROM", "VM.Config.Options", "VM.Config.HWType", "VM.PowerMgmt",
    "VM.GuestAgent.Audit", "Datastore.Audit", "Datastore.AllocateSpace", "Datastore.Allocate", "SDN.Use", "SDN.Audit",
    "Sys.Audit",
)


@dataclass
class FakeSite:
    """What the fake answers; a test changes it to take something away."""
    token: str
    release: str = "9.1"
    nodes: dict[str, str] = field(default_factory=dict)                 # name -> online|offline|unknown
    vms: list[dict[str, Any]] = field(default_factory=list)             # cluster/resources entries
    configs: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    storages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)   # node -> storage entries
    bridges: dict[str, list[dict[str, Any]]] = field(default_factory=dict)    # node -> network entries
    privileges: dict[str, set[str]] = field(default_factory=dict)       # path -> granted; "*" for every path
    hidden_vmids: set[int] = field(default_factory=set)                 # VMs the token may not see (no VM.Audit)
    network_changes: dict[str, str] = field(default_factory=dict)       # node -> pending interfaces.new diff
    requests: list[str] = field(default_factory=list)

    def granted(self, path: str) -> dict[str, int]:
        privileges = self.privileges.get(path, self.privileges.get("*", set()))
        return {p: 1 for p in sorted(privileges)}


def lab_site(token: str) -> FakeSite:
    """examples/lab's Proxmox side, ready: node pve online, template 9000, local-lvm and local, vmbr0."""
    return FakeSite(
        token=token,
        nodes={"pve": "online"},
        vms=[{"id": "qemu/9000", "vmid": 9000, "name": "ubuntu22-template", "node": "pve", "type": "qemu",
              "template": 1, "status": "stopped"}],
        configs={("pve", 9000): {"name": "ubuntu22-template", "template": 1, "agent": "1", "cores": 2, "memory": "2048",
                                 "scsi0": "local-lvm:base-9000-disk-0,size=3584M",
                                 "ide2": "local-lvm:vm-9000-cloudinit,media=cdrom",
                                 "net0": "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0", "digest": "0" * 40}},
        storages={"pve": [
            {"storage": "local", "type": "dir", "content": "iso,vztmpl,snippets,backup", "shared": 0, "enabled": 1,
             "active": 1, "total": 100 * GIB, "used": 10 * GIB, "avail": 90 * GIB},
            {"storage": "local-lvm", "type": "lvmthin", "content": "rootdir,images", "shared": 0, "enabled": 1,
             "active": 1, "total": 500 * GIB, "used": 20 * GIB, "avail": 480 * GIB}]},
        bridges={"pve": [{"iface": "vmbr0", "type": "bridge", "active": 1, "autostart": 1, "bridge_ports": "eno1",
                          "bridge_stp": "off", "bridge_fd": "0", "method": "static", "families": ["inet"]}]},
        privileges={"*": set(ALL_PRIVILEGES)},
    )


class _Handler(BaseHTTPRequestHandler):
    site: FakeSite

    def log_message(self, format: str, *args: Any) -> None:    # quiet
        pass

    def _send(self, status: int, data: Any, message: str | None = None, **extra: Any) -> None:
        body: dict[str, Any] = {"data": data, **extra}
        if message is not None:
            body["message"] = message + "\n"
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json;charset=UTF-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self) -> None:
        site = self.site
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        site.requests.append(self.path)
        if self.headers.get("Authorization") != f"PVEAPIToken={site.token}":
            self._send(401, None, "authentication failure")
            return
        path = url.path.removeprefix("/api2/json")
        parts = path.strip("/").split("/")
        if path == "/version":
            self._send(200, {"version": f"{site.release}.1", "release": site.release, "repoid": "0123abcd"})
        elif path == "/nodes":
            self._send(200, [{"node": n, "status": s, "id": f"node/{n}", "type": "node"} for n, s in site.nodes.items()])
        elif path == "/access/permissions":
            target = query.get("path")
            self._send(200, {target: site.granted(target)} if target else {})
        elif path == "/cluster/resources":
            self._send(200, [v for v in site.vms if v["vmid"] not in site.hidden_vmids
                             and (query.get("type") != "vm" or v["type"] in ("qemu", "lxc"))])
        elif path == "/cluster/nextid":
            # pve-manager PVE/API2/Cluster.pm nextid: the whole cluster's VM list, whatever the token may see.
            vmid = int(query["vmid"])
            if any(v["vmid"] == vmid for v in site.vms):
                self._send(400, None, "Parameter verification failed.", errors={"vmid": f"VM {vmid} already exists"})
            else:
                self._send(200, vmid)
        elif len(parts) == 5 and parts[0] == "nodes" and parts[2] == "qemu" and parts[4] == "config":
            config = site.configs.get((parts[1], int(parts[3])))
            if config is None:
                self._send(500, None, f"Configuration file 'nodes/{parts[1]}/qemu-server/{parts[3]}.conf' does not exist")
            else:
                self._send(200, config)
        elif len(parts) == 3 and parts[0] == "nodes" and parts[2] == "storage":
            self._send(200, site.storages.get(parts[1], []))
        elif len(parts) == 3 and parts[0] == "nodes" and parts[2] == "network":
            changes = site.network_changes.get(parts[1])
            self._send(200, site.bridges.get(parts[1], []), **({"changes": changes} if changes else {}))
        else:
            self._send(501, None, f"Method 'GET {path}' not implemented")


@dataclass
class FakeProxmox:
    site: FakeSite
    server: ThreadingHTTPServer
    ca_file: str

    @property
    def endpoint(self) -> str:
        return f"https://127.0.0.1:{self.server.server_address[1]}/"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl), which the client trusts as its CA."""
    cert, key = directory / "proxmox.crt", directory / "proxmox.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def serve(site: FakeSite, cert: Path, key: Path) -> FakeProxmox:
    handler = type("Handler", (_Handler,), {"site": site})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    # A short poll: shutdown() waits for the loop to notice it (0.5 s by default, for every test).
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return FakeProxmox(site, server, str(cert))
