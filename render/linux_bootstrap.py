"""Bash scripts for the Linux side of the kubeadm bootstrap, and the kube-vip static Pod.

This module owns the node-side steps of issue 3 for Linux machines, as pure functions that return
script bodies for ``render.shell.bash_command`` (they run as root under ``sudo -n bash``):

* ``render_init``: ``kubeadm init`` on the first control-plane node (guarded by admin.conf);
* ``render_kube_vip_manifest``: the kube-vip static Pod that holds the API virtual IP (ARP mode);
* ``render_join_credentials``: on the first control-plane node, print one fresh join line;
* ``render_join``: ``kubeadm join`` on a new node from the join line on stdin (guarded by kubelet.conf);
* ``render_reset``: node cleanup, the delete side of init and join;
* ``render_provider_credential``: the Kubernetes provider's own credential (a secret Output), and its revocation.

The kubeadm YAML itself comes from ``render.kubeadm`` as text with ``@@JOIN_*@@`` placeholders; the
scripts here only embed it. Secrets (bootstrap token, certificate key) never appear on a command line
of a process started on the joining node, in a script's stdout (except join-credentials' single
output line, which is a secret Output), or unredacted on stderr: kubeadm's own output goes to
root-only logs under /var/log.

Every path the scripts touch is prefixed with ``$HYBRID_CLUSTER_TEST_ROOT`` (unset, so empty, on a
node: sudo resets the environment) so that tests can run them against a scratch directory with stub
commands on PATH.
"""
from __future__ import annotations

import ipaddress
import re

import yaml

from render import yaml_text
from render.node_steps import POLL_SECONDS, poll_attempts
from render.readiness import cloud_init_wait_inputs
from render.script_files import render_script
from render.security import check_hardening_files, check_key_name
from vocab.checks import check_image, check_node_name

ADMIN_CONF = "/etc/kubernetes/admin.conf"
# kubeadm >= 1.29 writes super-admin.conf (group system:masters) on the node that runs `kubeadm init`
# only; admin.conf gets its rights from a ClusterRoleBinding that init creates late, so kube-vip
# cannot use it while init is still waiting for the VIP. Sources: kube-vip/kube-vip issue #684
# ("kube-vip requires super-admin.conf with Kubernetes 1.29"), aws/eks-anywhere PR #7368 (the
# CHANGELOG-1.29 change, super-admin.conf only on the init node), nutanix
# cluster-api-provider-nutanix PR #382 and ionos-cloud cluster-api-provider-ionoscloud PR #103
# (switch back to admin.conf once init has finished).
SUPER_ADMIN_CONF = "/etc/kubernetes/super-admin.conf"

TOKEN_PLACEHOLDER = "@@JOIN_TOKEN@@"
CA_CERT_HASH_PLACEHOLDER = "@@JOIN_CA_CERT_HASH@@"
API_ENDPOINT_PLACEHOLDER = "@@JOIN_API_ENDPOINT@@"
CERTIFICATE_KEY_PLACEHOLDER = "@@JOIN_CERTIFICATE_KEY@@"

API_READY_TIMEOUT_SECONDS = 300

_INTERFACE = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")
# Go time.ParseDuration units kubeadm's --ttl accepts (kubeadm token create docs: "e.g. 1s, 2m, 3h").
_TTL = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


# The scripts themselves are files under render/scripts/ (render/script_files.py); the renderers here
# check their parameters and pass them as the scripts' inputs.


def _check_yaml(text: str, what: str) -> None:
    if not text.strip():
        raise ValueError(f"{what} is empty")
    try:
        list(yaml.load_all(text, Loader=yaml_text.SAFE_LOADER))
    except yaml.YAMLError as error:
        raise ValueError(f"{what} is not valid YAML: {error}") from error


# --- kube-vip -------------------------------------------------------------------------------------

def render_kube_vip_manifest(vip: str, port: int, image: str, interface: str | None,
                             first_control_plane: bool) -> str:
    """The kube-vip static Pod (YAML) that announces the API virtual IP by ARP from the elected leader.

    Control-plane VIP only, no Service load balancing. Environment variables are the ones kube-vip's
    own generator writes (pkg/kubevip/config_generator.go, pkg/kubevip/config_envvar.go in
    kube-vip/kube-vip; https://kube-vip.io/docs/installation/static/ "Example ARP Manifest";
    kube-vip/website content/docs/installation/flags.md): ``vip_arp``, ``port``, ``vip_interface``
    (left out when ``interface`` is None: kube-vip then uses the interface of the default route,
    kube-vip PR #289 and the "auto-detecting default Interface" log in PR #1373), ``cp_enable``,
    ``cp_namespace``, ``svc_enable``, ``vip_leaderelection`` with the lease timings of the documented
    example (5/3/1 s), and ``address``. Capabilities NET_ADMIN and NET_RAW, host network, and the
    ``kubernetes -> 127.0.0.1`` host alias through which kube-vip reaches the local API server, as
    the generator emits them.

    ``first_control_plane``: mount /etc/kubernetes/super-admin.conf at kube-vip's kubeconfig path
    (see SUPER_ADMIN_CONF); ``render_init`` switches it to admin.conf once init has finished. The
    hostPath has type File so that a missing kubeconfig stops the Pod instead of the runtime creating
    a directory at that path.
    """
    address = ipaddress.ip_address(vip)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"port {port!r} is not a TCP port")
    check_image(image)
    if interface is not None and not _INTERFACE.match(interface):
        raise ValueError(f"interface {interface!r} is not a Linux interface name")

    env: list[dict[str, str]] = [
        {"name": "vip_arp", "value": "true"},
        {"name": "port", "value": str(port)},
    ]
    if interface is not None:
        env.append({"name": "vip_interface", "value": interface})
    env += [
        {"name": "cp_enable", "value": "true"},
        {"name": "cp_namespace", "value": "kube-system"},
        {"name": "svc_enable", "value": "false"},
        {"name": "vip_leaderelection", "value": "true"},
        {"name": "vip_leaseduration", "value": "5"},
        {"name": "vip_renewdeadline", "value": "3"},
        {"name": "vip_retryperiod", "value": "1"},
        {"name": "address", "value": str(address)},
    ]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "kube-vip",
            "namespace": "kube-system",
            "labels": {"app.kubernetes.io/name": "kube-vip"},
        },
        "spec": {
            "hostNetwork": True,
            "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["kubernetes"]}],
            # Same priority as kubeadm's own control-plane static Pods.
            "priorityClassName": "system-node-critical",
            "containers": [{
                "name": "kube-vip",
                "image": image,
                # Pinned tag: pull once through the registry mirror, not on every restart.
                "imagePullPolicy": "IfNotPresent",
                "args": ["manager"],
                "env": env,
                "securityContext": {"capabilities": {"add": ["NET_ADMIN", "NET_RAW"]}},
                "volumeMounts": [{"name": "kubeconfig", "mountPath": ADMIN_CONF, "readOnly": True}],
            }],
            "volumes": [{
                "name": "kubeconfig",
                "hostPath": {"path": SUPER_ADMIN_CONF if first_control_plane else ADMIN_CONF, "type": "File"},
            }],
        },
    }
    return yaml.safe_dump(pod, sort_keys=False, default_flow_style=False)


def _kube_vip_after_init(manifest: str) -> str | None:
    """The manifest with its kubeconfig switched to admin.conf, or None when it is not a bootstrap one."""
    pod = yaml.load(manifest, Loader=yaml_text.SAFE_LOADER)
    if not isinstance(pod, dict) or pod.get("kind") != "Pod":
        raise ValueError("the kube-vip manifest is not a Pod")
    switched = False
    for volume in pod.get("spec", {}).get("volumes", []) or []:
        host_path = volume.get("hostPath") or {}
        if host_path.get("path") == SUPER_ADMIN_CONF:
            host_path["path"] = ADMIN_CONF
            switched = True
    return yaml.safe_dump(pod, sort_keys=False, default_flow_style=False) if switched else None


# --- init -----------------------------------------------------------------------------------------

def render_init(init_config_yaml: str, kube_vip_manifest: str | None, hardening_files: dict[str, str],
                encryption_key: str) -> str:
    """`kubeadm init` on the first control-plane node (render/scripts/linux-init.sh, which says why each
    step is there and where its flags come from); a node with admin.conf is left alone.

    ``kube_vip_manifest`` must be the init node's (mounting super-admin.conf while init runs); the script
    switches it to admin.conf afterwards, and this function derives that second manifest. ``hardening_files``
    (path -> text, render/security.py control_plane_files) are written before init; ``encryption_key`` names the
    first Secrets encryption key, made on the node (or identity: plain text).
    """
    _check_yaml(init_config_yaml, "the InitConfiguration")
    check_hardening_files(hardening_files)
    check_key_name(encryption_key)
    final_manifest: str | None = None
    if kube_vip_manifest is not None:
        _check_yaml(kube_vip_manifest, "the kube-vip manifest")
        final_manifest = _kube_vip_after_init(kube_vip_manifest)
        if final_manifest is None:
            # Every supported minor (config.compat.KUBERNETES, 1.35 and later) is >= 1.29.
            raise ValueError("the init node's kube-vip must mount super-admin.conf while kubeadm init "
                             "runs: render it with first_control_plane=True")

    return render_script(
        "linux-init.sh", INIT_CONFIG_TEXT=init_config_yaml.rstrip("\n"),
        KUBE_VIP_TEXT=(kube_vip_manifest or "").rstrip("\n"), KUBE_VIP_AFTER_INIT_TEXT=(final_manifest or "").rstrip("\n"),
        API_READY_TIMEOUT=API_READY_TIMEOUT_SECONDS, ATTEMPTS=poll_attempts(API_READY_TIMEOUT_SECONDS),
        POLL_SECONDS=POLL_SECONDS, HARDENING_PATHS=list(hardening_files),
        HARDENING_TEXTS=[text.rstrip("\n") for text in hardening_files.values()], ENCRYPTION_KEY=encryption_key,
        **cloud_init_wait_inputs())


# --- join credentials -----------------------------------------------------------------------------

def _check_ttl(ttl: str) -> None:
    match = _TTL.match(ttl)
    if not ttl or not match:
        raise ValueError(f"ttl {ttl!r} must be a duration such as 30m or 1h")
    hours, minutes, seconds = (int(group or 0) for group in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    # 0 means "never expires" to kubeadm; the point of a per-join token is that it expires.
    if not 0 < total <= 24 * 3600:
        raise ValueError(f"ttl {ttl!r} must be between 1s and 24h")


def render_join_credentials(control_plane: bool, ttl: str = "30m", kubeadm_api: str = "kubeadm.k8s.io/v1beta4") -> str:
    """On the first control-plane node: print exactly one line, a fresh `kubeadm join` command for a
    worker or (``control_plane``) a control-plane node, with a token that expires after ``ttl``
    (render/scripts/linux-join-credentials.sh). ``kubeadm_api`` is the kubeadm config API the
    certificate key's InitConfiguration is written in.
    """
    _check_ttl(ttl)
    if not re.fullmatch(r"kubeadm\.k8s\.io/v1beta[34]", kubeadm_api):
        raise ValueError(f"unknown kubeadm config API {kubeadm_api!r}")

    description = "hybrid-cluster control-plane join" if control_plane else "hybrid-cluster worker join"
    return render_script("linux-join-credentials.sh", CONTROL_PLANE=control_plane, TTL=ttl,
                         DESCRIPTION=description, KUBEADM_API=kubeadm_api)


# --- join -----------------------------------------------------------------------------------------

def render_join(join_config_yaml: str, control_plane: bool, kube_vip_manifest: str | None = None) -> str:
    """`kubeadm join` on a new node from the join line on stdin (render/scripts/linux-join.sh); a node
    with kubelet.conf is left alone.

    ``join_config_yaml`` holds the placeholders the script fills from the join line; when the line has
    several CA hashes, the template line holding the hash placeholder is repeated once per hash, so that
    placeholder must be a block-sequence item (``- "@@JOIN_CA_CERT_HASH@@"``). ``kube_vip_manifest``
    (control-plane joins only) must mount admin.conf: it is written after the join, which writes
    admin.conf, and super-admin.conf exists on the init node only.
    """
    _check_yaml(join_config_yaml, "the JoinConfiguration")
    for placeholder in (TOKEN_PLACEHOLDER, CA_CERT_HASH_PLACEHOLDER, API_ENDPOINT_PLACEHOLDER):
        if placeholder not in join_config_yaml:
            raise ValueError(f"the JoinConfiguration has no {placeholder} placeholder")
    if control_plane != (CERTIFICATE_KEY_PLACEHOLDER in join_config_yaml):
        raise ValueError(f"a {'control-plane' if control_plane else 'worker'} JoinConfiguration must "
                         f"{'' if control_plane else 'not '}contain {CERTIFICATE_KEY_PLACEHOLDER}")
    if kube_vip_manifest is not None:
        if not control_plane:
            raise ValueError("only control-plane nodes run kube-vip")
        _check_yaml(kube_vip_manifest, "the kube-vip manifest")
        if SUPER_ADMIN_CONF in kube_vip_manifest:
            raise ValueError("super-admin.conf exists on the init node only: render the joining node's "
                             "kube-vip manifest with first_control_plane=False")

    return render_script(
        "linux-join.sh", CONTROL_PLANE=control_plane, JOIN_CONFIG_TEXT=join_config_yaml.rstrip("\n"),
        KUBE_VIP_TEXT=(kube_vip_manifest or "").rstrip("\n"), TOKEN_PLACEHOLDER=TOKEN_PLACEHOLDER,
        API_ENDPOINT_PLACEHOLDER=API_ENDPOINT_PLACEHOLDER, CA_CERT_HASH_PLACEHOLDER=CA_CERT_HASH_PLACEHOLDER,
        CERTIFICATE_KEY_PLACEHOLDER=CERTIFICATE_KEY_PLACEHOLDER, **cloud_init_wait_inputs())


# --- reset ----------------------------------------------------------------------------------------

def render_reset(node_name: str, etcd_pod: str | None = None) -> str:
    """Node cleanup: the delete script of every join; a clean node runs it as a no-op
    (render/scripts/linux-reset.sh lists what kubeadm reset leaves behind and where each cleanup comes
    from). ``etcd_pod``: a control-plane node's own etcd Pod, through which the quorum without it is checked
    right before reset removes its member.
    """
    check_node_name(node_name)
    if etcd_pod is not None:
        check_node_name(etcd_pod)
    return render_script("linux-reset.sh", NODE=node_name, ETCD_POD=etcd_pod or "")


# --- control-plane certificates -----------------------------------------------------------------
#
# kubeadm's client certificates last one year; `kubeadm certs check-expiration` lists them ("Checks
# expiration for the certificates in the local PKI managed by kubeadm") and `kubeadm certs renew all`
# renews them, after which "you should restart the control plane Pods ... temporarily remove its
# manifest file from /etc/kubernetes/manifests/ and wait for 20 seconds (see the fileCheckFrequency
# value in KubeletConfiguration struct)" (https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/
# kubeadm-certs/, "Manual certificate renewal"; kubeadm_certs_check-expiration reference). `kubeadm
# upgrade apply/node` renews them too (same page, "Automatic certificate renewal").

_STATIC_POD_MANIFESTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")
# kube-vip reads its kubeconfig (admin.conf) once, when it starts: after a renewal (a round, or `kubeadm
# upgrade`) it keeps presenting the old client certificate until it restarts, and once that expires it
# can no longer renew its leader lease, so the API VIP goes (aws/eks-anywhere#5219).
KUBE_VIP = "kube-vip"
# The kubelet's fileCheckFrequency default (KubeletConfiguration: "Default: 20s"), plus margin.
STATIC_POD_RESCAN_SECONDS = 30
_RENEWAL_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def render_certificate_expiry() -> str:
    """On the first control-plane node: one line per kubeadm-managed certificate and CA,
    ``NAME<TAB>EXPIRES``, from check-expiration's text output (render/scripts/certificate-expiry.sh says
    why the text); parse_certificate_expiry reads them."""

    return render_script("certificate-expiry.sh")


def parse_certificate_expiry(stdout: str) -> dict[str, str]:
    """render_certificate_expiry's lines as {certificate: expiry}."""
    result = {}
    for line in stdout.splitlines():
        name, sep, expires = line.partition("\t")
        if sep:
            result[name] = expires
    return result


def render_renew_certificates(node_name: str, label: str, etcd_pod: str | None, kube_vip: bool = False) -> str:
    """On one control-plane node, as root: renewal round ``label`` of its kubeadm certificates, then its
    control-plane static Pods restarted one at a time (manifest moved out, the kubelet stops the Pod,
    moved back), each awaited before the next. With ``etcd_pod`` (several control-plane nodes) nothing
    starts unless the other etcd members keep quorum while this one restarts; a single control-plane
    node has no quorum to keep and its API is down for the restarts. ``kube_vip``: the node runs kube-vip,
    which reads admin.conf only when it starts, so it is restarted last, or the API VIP would go when the
    old certificate expires. The round's label is recorded when everything is back, so the same round never
    runs twice here."""
    check_node_name(node_name)
    if etcd_pod is not None:
        check_node_name(etcd_pod)
    if not _RENEWAL_LABEL.match(label):
        raise ValueError(f"renewal label {label!r} must be 1-63 letters, digits, '.', '_' or '-'")

    components = [*_STATIC_POD_MANIFESTS, *([KUBE_VIP] if kube_vip else [])]
    return render_script("certificate-renew.sh", NODE=node_name, LABEL=label, ETCD_POD=etcd_pod or "",
                         COMPONENTS=components, **static_pod_restart_inputs())


def static_pod_restart_inputs() -> dict[str, int]:
    """The inputs of render/scripts/lib/static-pod-restart.sh, for every script that includes it."""
    return {"RESCAN_SECONDS": STATIC_POD_RESCAN_SECONDS, "API_READY_TIMEOUT": API_READY_TIMEOUT_SECONDS,
            "ATTEMPTS": poll_attempts(API_READY_TIMEOUT_SECONDS), "POLL_SECONDS": POLL_SECONDS}


# The Kubernetes provider's own credential (render/scripts/provider-credential.sh): a user per credential label, bound to
# cluster-admin by a binding of the same name; one year, as kubeadm's own client certificates.
PROVIDER_USER_PREFIX = "hybrid-cluster:pulumi:"
PROVIDER_CREDENTIAL_DAYS = 365
# How long the new credential's binding may take to reach the API server's authorizer.
PROVIDER_CREDENTIAL_WAIT_SECONDS = 60


def provider_user(label: str) -> str:
    """The user (and ClusterRoleBinding) name of the provider credential named `label` (cluster.providerCredential)."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}", label):
        raise ValueError(f"provider credential label {label!r}: letters, digits, '.', '_' or '-'")
    return PROVIDER_USER_PREFIX + label


def render_provider_credential(label: str) -> str:
    """Issue, bind, prove and print the provider's credential `label` (a kubeconfig after one `# valid until` line)."""
    user = provider_user(label)
    return render_script("provider-credential.sh", USER_NAME=user, BINDING=user, VALIDITY_DAYS=PROVIDER_CREDENTIAL_DAYS,
                         ATTEMPTS=poll_attempts(PROVIDER_CREDENTIAL_WAIT_SECONDS), POLL_SECONDS=POLL_SECONDS)


def render_provider_credential_revoke(keep_user: str) -> str:
    """Delete the bindings of every provider credential but the one of `keep_user` (as provider_credential_user reads
    it from the credential the provider holds)."""
    if not keep_user.startswith(PROVIDER_USER_PREFIX):
        raise ValueError(f"{keep_user!r} is not a provider credential's user")
    provider_user(keep_user.removeprefix(PROVIDER_USER_PREFIX))   # the same check as where it was made
    return render_script("provider-credential-revoke.sh", KEEP=keep_user)


def _comment(printed: str, key: str) -> str | None:
    """The value of a `# <key> <value>` line among the comment lines provider-credential.sh prints first."""
    for line in printed.splitlines():
        if not line.startswith("# "):
            break
        if line.startswith(f"# {key} "):
            return " ".join(line.removeprefix(f"# {key} ").split())
    return None


def provider_credential_expiry(printed: str) -> str:
    """When the credential provider-credential.sh printed expires, as openssl wrote it ("Dec 5 18:00:00 2027 GMT");
    "unknown" for a credential an earlier release read (admin.conf)."""
    return _comment(printed, "valid until") or "unknown"


def provider_credential_user(printed: str) -> str:
    """The user of the credential provider-credential.sh printed."""
    user = _comment(printed, "user")
    if user is None:
        raise ValueError("not a provider credential: no '# user' line")
    return user


