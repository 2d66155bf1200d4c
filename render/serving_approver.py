"""Renders the approver of kubelet serving certificates (config `resourceMetrics`): the program every control-plane
node runs under a systemd timer, its units, the scripts that install and remove it, the node inventory it reads and
the RBAC role of its own identity. Pure: plain values in, text and dicts out.
"""
from __future__ import annotations

import ipaddress
from typing import Any

from render.script_files import render_script
from vocab.checks import DNS_LABEL, require

PROGRAM = "/usr/local/sbin/hybrid-cluster-kubelet-serving-approver"
SERVICE = "hybrid-cluster-kubelet-serving-approver.service"
TIMER = "hybrid-cluster-kubelet-serving-approver.timer"
SYSTEMD_DIR = "/etc/systemd/system"
# The inventory, the identity's certificate and its kubeconfig (root only).
CONFIG_DIR = "/etc/hybrid-cluster/kubelet-serving-approver"
PKI_DIR = "/etc/kubernetes/pki"
ADMIN_CONF = "/etc/kubernetes/admin.conf"
# kube-controller-manager signs this signer's requests but never approves them (kubeadm "Certificate Management with
# kubeadm", "Kubelet serving certificates"). kubelet-csr-approver, which did before, checks every IP address against one
# set for all nodes and never reads which node asks (postfinance/kubelet-csr-approver v1.2.14
# internal/controller/regex_ip_checks.go): any node could be given another node's address. This one ties each request
# to its requester (program).
SIGNER = "kubernetes.io/kubelet-serving"
# The program's identity is its own, not admin.conf: a client certificate CN=IDENTITY it issues on the node from the
# cluster CA (as kubeadm issues admin.conf's), for VALIDITY_DAYS, issued again when less than RENEW_DAYS remain or when
# admin.conf's API server address or the CA changes; bound to the role of rbac_objects.
IDENTITY = "hybrid-cluster:kubelet-serving-approver"
VALIDITY_DAYS = 365
RENEW_DAYS = 30
# How often each control-plane node looks for requests: a kubelet waits for its certificate up to 15 minutes per
# request (pkg/kubelet/certificate: the certificate manager's wait), and the kubelet steps poll for it
# (render/kubelet_config.py SERVING_CERTIFICATE_TIMEOUT_SECONDS).
PERIOD_SECONDS = 20


def inventory(nodes: tuple[tuple[str, str], ...]) -> str:
    """The file the program reads: one ``<node name> <IPv4 address>`` line per node, sorted."""
    require(bool(nodes), "the approver needs the nodes")
    seen: dict[str, str] = {}
    for name, address in nodes:
        require(bool(DNS_LABEL.match(name)), f"{name!r} is not a node name")
        require(seen.get(name, address) == address, f"node {name} has two addresses")
        seen[name] = str(ipaddress.IPv4Address(address))
    return "".join(f"{name} {seen[name]}\n" for name in sorted(seen))


# kubectl's go-template for the requests: one line each with name, uid, resourceVersion, creation time, signer,
# username, groups, usages, condition types and the PEM request in base64. Every field is Go-quoted (printf "%q": no
# control character survives), the API server restricting hardly any of them (a request's name may hold a line break:
# ValidateCertificateRequestName accepts any name a path segment can carry). Fields end at US (0x1f) and list items at
# RS (0x1e). A missing status prints nothing. Go templates read "\x1f" as that byte (text/template string constants).
_FIELD, _ITEM = '{{"\\x1f"}}', '{{"\\x1e"}}'


def _quoted(path: str) -> str:
    return '{{printf "%q" ' + path + "}}"


REQUESTS_TEMPLATE = (
    "{{range .items}}" + _FIELD.join([*(_quoted(p) for p in (".metadata.name", ".metadata.uid", ".metadata.resourceVersion",
                                                               ".metadata.creationTimestamp", ".spec.signerName",
                                                               ".spec.username")),
                                      "{{range .spec.groups}}" + _quoted(".") + _ITEM + "{{end}}",
                                      "{{range .spec.usages}}" + _quoted(".") + _ITEM + "{{end}}",
                                      "{{with .status}}{{range .conditions}}" + _quoted(".type") + _ITEM + "{{end}}{{end}}",
                                      _quoted(".spec.request")]) + '{{"\\n"}}{{end}}')
# A node's newest requests read in each run, the rest left for later: a kubelet waits on its newest request, and one
# node that makes thousands cannot hold up the others' (each it reads costs a few openssl runs).
MAX_PER_NODE = 3
# How long a request to the API server may take: an API server that accepts a connection and never answers must not
# hold the run, which the timer cannot start again while it is active (the unit's TimeoutStartSec bounds the rest).
REQUEST_TIMEOUT = "30s"


# What the program approves, and nothing else: a request it passes over stays pending, never denied, and its journal
# says why (a later inventory may admit it). Of each node's newest MAX_PER_NODE pending requests, one with:
# * signer SIGNER, not yet approved or denied;
# * requester ``system:node:<name>`` in group ``system:nodes`` (the API server sets spec.username and spec.groups from
#   the authenticated requester, pkg/registry/certificates/certificates/strategy.go PrepareForCreate; a node's
#   credential names it), ``<name>`` a node of the stack's inventory (a lost node is not in it);
# * the request itself, byte for byte, one a kubelet makes for that node: its CertificationRequestInfo exactly what Go's
#   crypto/x509 CreateCertificateRequest writes for the kubelet's template (pkg/kubelet/certificate/kubelet.go: subject
#   O=system:nodes then CN=system:node:<name>, each a PrintableString; one extensionRequest attribute with one
#   non-critical subjectAltName of the node's name as a DNS name and its address as an IPv4 address, in that order, or
#   one of them; the request's own public key), in one PEM block, its signature valid (openssl req -verify). The kubelet
#   asks for its Hostname addresses as DNS names and its InternalIP and ExternalIP addresses as IP addresses
#   (addressesToHostnamesAndIPs); with ``--node-ip`` and no cloud provider those are the node's name and its address
#   (render/kubeadm.py). So never another node's name or address, the API VIP, the load-balancer pool, an e-mail
#   address, a URI or a critical or second extension. The decision is on the bytes kube-controller-manager signs
#   (pkg/controller/certificates/authority: Go's ParseCertificateRequest, its DNS names and IP addresses copied), not on
#   openssl's printout of them, which can be made to hide a name (a DNS name ending in a newline, a text attribute
#   printed as a fake extension, an attribute openssl cannot print; tests/fixtures/kubelet-serving-csr). That directory
#   also holds requests Go 1.19 wrote from the kubelet's template; a Go release that laid them out otherwise would leave
#   every request pending (refused, never wrongly approved) and the journal would say so;
# * its usages exactly one of the two sets kube-controller-manager signs for this signer (ValidateKubeletServingCSR,
#   pkg/apis/certificates/v1 helpers): digital signature and server auth (what the kubelet asks for with its ECDSA key,
#   pkg/kubelet/certificate/kubelet.go), or those and key encipherment.
# The addresses are IPv4 (config: the node network); a dual-stack node's second InternalIP would leave its request
# pending.
# It approves the request it read: a PUT of the approval subresource naming its uid (a precondition) and
# resourceVersion (a conflict if it changed; apiserver registry/rest/update.go, registry/generic/registry/store.go),
# through ``kubectl replace --raw``. Not ``kubectl certificate approve``, which reads the request again by name (kubectl
# pkg/cmd/certificates/certificates.go): nodes may read every request and create one under a name of their choice (the
# system:node role, plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go), so a request deleted (the cleaner
# deletes old ones) and made again under the same name would be approved unread. The subresource keeps the stored spec
# and takes only the conditions (pkg/registry/certificates/certificates/strategy.go). kube-controller-manager then signs
# after its own checks (the organization, the CN's prefix, the usages, no e-mail or URI names); it does not tie the CN
# to the requester or the names to the node, which is what this program is for.
def program(config_dir: str = CONFIG_DIR, pki_dir: str = PKI_DIR, admin_conf: str = ADMIN_CONF) -> str:
    """The program the timer runs; the paths are the node's unless a test gives its scratch directory's."""
    return render_script("serving-approver.sh", CONFIG_DIR=config_dir, PKI_DIR=pki_dir, ADMIN_CONF=admin_conf,
                         IDENTITY=IDENTITY, SIGNER=SIGNER, VALIDITY_DAYS=VALIDITY_DAYS, RENEW_DAYS=RENEW_DAYS,
                         TEMPLATE=REQUESTS_TEMPLATE, REQUEST_TIMEOUT=REQUEST_TIMEOUT, MAX_PER_NODE=MAX_PER_NODE)


def service_unit() -> str:
    return f"""# Rendered by render/serving_approver.py.
[Unit]
Description=Approve kubelet serving certificates of the stack's nodes
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
ExecStart={PROGRAM}
# A oneshot unit has no start timeout unless given one (systemd.service(5), TimeoutStartSec=).
TimeoutStartSec=5min
# It parses requests anyone with a node's credential can write, as root, with the cluster CA key readable: no
# capability, no device, only the network families kubectl uses, only system-service calls, and its own directory
# the one it may write.
CapabilityBoundingSet=
NoNewPrivileges=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectSystem=strict
ProtectHome=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectControlGroups=yes
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
SystemCallFilter=@system-service
ReadWritePaths={CONFIG_DIR}
"""


def timer_unit() -> str:
    # OnUnitActiveSec alone never starts a unit that has not run (systemd.timer(5)): OnBootSec starts the first run
    # after a boot, the install step the first one after installation. AccuracySec: the default minute would let
    # systemd postpone each run by up to a minute.
    return f"""# Rendered by render/serving_approver.py.
[Unit]
Description=Approve kubelet serving certificates every {PERIOD_SECONDS} s

[Timer]
OnBootSec={PERIOD_SECONDS}s
OnUnitActiveSec={PERIOD_SECONDS}s
AccuracySec=1s

[Install]
WantedBy=timers.target
"""


def _unit_paths() -> dict[str, str]:
    return {"PROGRAM": PROGRAM, "SYSTEMD_DIR": SYSTEMD_DIR, "SERVICE": SERVICE, "TIMER": TIMER,
            "CONFIG_DIR": CONFIG_DIR}


def render_install(nodes: tuple[tuple[str, str], ...]) -> str:
    """As root on a control-plane node: the inventory, the program and its units in place (rewritten only when they
    differ), the timer enabled, and one run now, which proves the identity and its role. Idempotent.

    Every control-plane node runs it, so requests are approved while any one is up; two approving the same request at
    once is harmless (the second one's update conflicts, and its next run finds the request decided)."""
    text = inventory(nodes)
    return render_script("serving-approver-install.sh", PROGRAM_TEXT=program().rstrip("\n"),
                         SERVICE_TEXT=service_unit().rstrip("\n"), TIMER_TEXT=timer_unit().rstrip("\n"),
                         INVENTORY_TEXT=text.rstrip("\n"), NODES=text.count("\n"), **_unit_paths())


def render_remove() -> str:
    """As root on a control-plane node: the timer stopped and disabled, the program, units, inventory and identity
    removed. Its certificate stays valid until it expires, but its role goes with the program (RBAC below)."""
    return render_script("serving-approver-remove.sh", **_unit_paths())


def rbac_objects() -> list[dict[str, Any]]:
    """The identity's role: read requests, update their approval, approve for the kubelet-serving signer only (the
    Kubernetes documentation's approver role, "Certificate Signing Requests", Authorization)."""
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": IDENTITY},
            "rules": [
                {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
                 "verbs": ["get", "list", "watch"]},
                {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/approval"],
                 "verbs": ["update"]},
                {"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "resourceNames": [SIGNER],
                 "verbs": ["approve"]},
            ]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": IDENTITY},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": IDENTITY},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": IDENTITY}]}
    return [role, binding]
