"""Tests for render/kubeadm.py. Every rendered document is validated against tests/kubeadm_api.py, a strict
model of the upstream kubeadm v1beta3/v1beta4 and kubelet v1beta1 types (unknown fields are errors), for
both API versions, one and three control-plane nodes, Linux and Windows workers. No kubeadm binary is
available here (not in the Debian or PyPI registries), so the model is the validator; guard tests prove
it rejects what kubeadm would not read."""
from __future__ import annotations

import dataclasses

import pydantic
import pytest
import yaml

from render.kubeadm import (
    INIT_BOOTSTRAP_TOKEN_TTL,
    JOIN_API_ENDPOINT,
    JOIN_CA_CERT_HASH,
    JOIN_CERTIFICATE_KEY,
    JOIN_TOKEN,
    KUBEADM_V1BETA3,
    KUBEADM_V1BETA4,
    ClusterParams,
    NodeParams,
    Taint,
    kubelet_config,
    render_init_config,
    render_join_config,
)
from tests import kubeadm_api
from tests.kubeadm_api import validate_documents

LINUX_SOCKET = "unix:///var/run/containerd/containerd.sock"
WINDOWS_SOCKET = "npipe:////./pipe/containerd-containerd"
WINDOWS_TAINT = Taint("node-role.kubernetes.io/windows", "true", "NoSchedule")
PLACEHOLDERS = (JOIN_TOKEN, JOIN_CA_CERT_HASH, JOIN_API_ENDPOINT, JOIN_CERTIFICATE_KEY)

# The newest minor each API is rendered for: v1beta3 for a 1.30-era cluster, v1beta4 for the pinned 1.36.
API_VERSIONS = {KUBEADM_V1BETA3: "1.30.14", KUBEADM_V1BETA4: "1.36.4"}
APIS = pytest.mark.parametrize("api", sorted(API_VERSIONS))
CONTROL_PLANE_COUNTS = pytest.mark.parametrize("control_planes", [1, 3])

CP_IPS = ("10.30.30.11", "10.30.30.12", "10.30.30.13")
VIP = "10.30.30.10"

# Realistic join credentials, shaped as `kubeadm token create --print-join-command` prints them.
FAKE_TOKEN = "abcdef.0123456789abcdef"
FAKE_HASH = "sha256:" + "0f" * 32
FAKE_KEY = "a1" * 32


def make_cluster(api: str, control_planes: int = 3) -> ClusterParams:
    endpoint_host = VIP if control_planes > 1 else CP_IPS[0]
    sans = ((VIP,) if control_planes > 1 else ()) + CP_IPS[:control_planes] + tuple(
        f"hk-cp-{i + 1}" for i in range(control_planes)
    )
    return ClusterParams(
        kubeadm_api=api,
        cluster_name="hk-prod",
        kubernetes_version=API_VERSIONS[api],
        control_plane_endpoint=f"{endpoint_host}:6443",
        pod_subnet="10.244.0.0/16",
        service_subnet="10.96.0.0/12",
        dns_domain="cluster.local",
        node_cidr_mask_size=24,
        service_node_port_range="30000-32767",
        cert_sans=sans,
        sandbox_image="registry.k8s.io/pause:3.10.2",
    )


def control_plane_node(index: int) -> NodeParams:
    return NodeParams(
        name=f"hk-cp-{index + 1}",
        advertise_address=CP_IPS[index],
        cri_socket=LINUX_SOCKET,
        labels={"topology.kubernetes.io/zone": f"hk-{index % 2 + 1}", "node.os.distro": "ubuntu22"},
        taints=None,
        control_plane=True,
    )


LINUX_WORKER = NodeParams(
    name="hk-lnx-3", advertise_address="10.30.30.23", cri_socket=LINUX_SOCKET,
    labels={"topology.kubernetes.io/zone": "hk-1", "node.os.distro": "rocky9"}, taints=None, control_plane=False,
)
WINDOWS_WORKER = NodeParams(
    name="hk-win-1", advertise_address="10.30.30.51", cri_socket=WINDOWS_SOCKET,
    labels={"topology.kubernetes.io/zone": "hk-1", "node.os.distro": "win2022"}, taints=(WINDOWS_TAINT,),
    control_plane=False,
)


def by_kind(yaml_text: str) -> dict[str, dict]:
    documents = [d for d in yaml.safe_load_all(yaml_text) if d is not None]
    kinds = [d["kind"] for d in documents]
    assert len(kinds) == len(set(kinds)), kinds
    return {d["kind"]: d for d in documents}


def fill_join(yaml_text: str, endpoint: str) -> str:
    """What the join script does with the line from `kubeadm token create --print-join-command`."""
    return (yaml_text.replace(JOIN_TOKEN, FAKE_TOKEN).replace(JOIN_CA_CERT_HASH, FAKE_HASH)
            .replace(JOIN_API_ENDPOINT, endpoint).replace(JOIN_CERTIFICATE_KEY, FAKE_KEY))


def args_as_dict(api: str, args) -> dict[str, str]:
    """Reads extraArgs/kubeletExtraArgs in the form the API version requires, failing on the other form."""
    if api == KUBEADM_V1BETA3:
        assert isinstance(args, dict), f"v1beta3 wants a map, got {args!r}"
        return args
    assert isinstance(args, list) and all(set(a) == {"name", "value"} for a in args), f"v1beta4 wants [{{name, value}}], got {args!r}"
    return {a["name"]: a["value"] for a in args}


# --- every document of every node validates strictly ----------------------------------------------


@APIS
@CONTROL_PLANE_COUNTS
def test_every_rendered_document_validates_against_the_strict_model(api: str, control_planes: int) -> None:
    cluster = make_cluster(api, control_planes)
    init = render_init_config(cluster, control_plane_node(0))
    models = validate_documents(init)
    assert [type(m).__name__ for m in models] == [
        f"V1Beta{api[-1]}InitConfiguration", f"V1Beta{api[-1]}ClusterConfiguration", "KubeletConfiguration",
    ]
    joins = [control_plane_node(i) for i in range(1, control_planes)] + [LINUX_WORKER, WINDOWS_WORKER]
    for node in joins:
        rendered = render_join_config(cluster, node)
        (model,) = validate_documents(rendered)
        assert type(model).__name__ == f"V1Beta{api[-1]}JoinConfiguration"
        # Still valid once the join script has put the real credentials in.
        (filled,) = validate_documents(fill_join(rendered, cluster.control_plane_endpoint))
        assert filled.discovery.bootstrapToken.token == FAKE_TOKEN
        assert filled.discovery.bootstrapToken.caCertHashes == [FAKE_HASH]
        assert filled.discovery.bootstrapToken.apiServerEndpoint == cluster.control_plane_endpoint
        assert filled.discovery.bootstrapToken.unsafeSkipCAVerification is None
        assert (filled.controlPlane.certificateKey if filled.controlPlane else None) == (FAKE_KEY if node.control_plane else None)


@APIS
@CONTROL_PLANE_COUNTS
def test_cluster_configuration_carries_the_cluster_parameters(api: str, control_planes: int) -> None:
    cluster = make_cluster(api, control_planes)
    docs = by_kind(render_init_config(cluster, control_plane_node(0)))
    cc = docs["ClusterConfiguration"]
    assert cc["apiVersion"] == api
    assert cc["clusterName"] == "hk-prod"
    assert cc["kubernetesVersion"] == "v" + API_VERSIONS[api]
    assert cc["controlPlaneEndpoint"] == (f"{VIP}:6443" if control_planes == 3 else f"{CP_IPS[0]}:6443")
    assert cc["networking"] == {"podSubnet": "10.244.0.0/16", "serviceSubnet": "10.96.0.0/12", "dnsDomain": "cluster.local"}
    assert cc["apiServer"]["certSANs"] == list(cluster.cert_sans)
    assert (VIP in cc["apiServer"]["certSANs"]) == (control_planes == 3)
    assert args_as_dict(api, cc["apiServer"]["extraArgs"]) == {"service-node-port-range": "30000-32767"}
    assert args_as_dict(api, cc["controllerManager"]["extraArgs"]) == {"node-cidr-mask-size": "24"}
    # The registry mirror lives in containerd, so kubeadm keeps canonical image names.
    assert "imageRepository" not in cc


@APIS
def test_v1beta4_uses_name_value_lists_and_v1beta3_uses_maps(api: str) -> None:
    cluster = make_cluster(api)
    docs = by_kind(render_init_config(cluster, control_plane_node(0)))
    join = by_kind(render_join_config(cluster, LINUX_WORKER))["JoinConfiguration"]
    extra_args = [
        docs["ClusterConfiguration"]["apiServer"]["extraArgs"],
        docs["ClusterConfiguration"]["controllerManager"]["extraArgs"],
        docs["InitConfiguration"]["nodeRegistration"]["kubeletExtraArgs"],
        join["nodeRegistration"]["kubeletExtraArgs"],
    ]
    expected_type = list if api == KUBEADM_V1BETA4 else dict
    assert all(type(a) is expected_type for a in extra_args), extra_args
    if api == KUBEADM_V1BETA4:
        assert docs["ClusterConfiguration"]["apiServer"]["extraArgs"] == [
            {"name": "service-node-port-range", "value": "30000-32767"}
        ]


@APIS
def test_init_configuration_has_no_token_value_and_a_short_lived_default_token(api: str) -> None:
    init_text = render_init_config(make_cluster(api), control_plane_node(0))
    init = by_kind(init_text)["InitConfiguration"]
    assert init["bootstrapTokens"] == [{"description": init["bootstrapTokens"][0]["description"], "ttl": INIT_BOOTSTRAP_TOKEN_TTL}]
    assert "certificateKey" not in init  # kubeadm init --upload-certs generates one; joins get fresh keys
    assert init["localAPIEndpoint"] == {"advertiseAddress": CP_IPS[0], "bindPort": 6443}
    assert not any(p in init_text for p in PLACEHOLDERS)


@APIS
def test_kubelet_configuration_sets_systemd_and_leaves_node_specific_and_derived_values_to_kubeadm(api: str) -> None:
    kubelet = by_kind(render_init_config(make_cluster(api), control_plane_node(0)))["KubeletConfiguration"]
    assert kubelet == kubelet_config(make_cluster(api))
    assert kubelet["cgroupDriver"] == "systemd"
    for derived in ("clusterDNS", "clusterDomain", "resolvConf", "containerRuntimeEndpoint", "serverTLSBootstrap"):
        assert derived not in kubelet
    # maxParallelImagePulls cannot be set while serializeImagePulls is true (kubelet v1beta1 types.go).
    assert kubelet["serializeImagePulls"] is False and kubelet["maxParallelImagePulls"] > 1


# --- joins, placeholders, labels and taints --------------------------------------------------------


@APIS
@pytest.mark.parametrize("node", [LINUX_WORKER, WINDOWS_WORKER, control_plane_node(1)], ids=["linux", "windows", "control-plane"])
def test_each_placeholder_appears_exactly_where_expected(api: str, node: NodeParams) -> None:
    rendered = render_join_config(make_cluster(api), node)
    assert rendered.count(JOIN_TOKEN) == 1
    assert rendered.count(JOIN_CA_CERT_HASH) == 1
    assert rendered.count(JOIN_API_ENDPOINT) == 1
    assert rendered.count(JOIN_CERTIFICATE_KEY) == (1 if node.control_plane else 0)
    discovery = by_kind(rendered)["JoinConfiguration"]["discovery"]
    assert discovery == {"bootstrapToken": {
        "token": JOIN_TOKEN, "apiServerEndpoint": JOIN_API_ENDPOINT, "caCertHashes": [JOIN_CA_CERT_HASH],
    }}


@APIS
@CONTROL_PLANE_COUNTS
def test_control_plane_join_has_its_local_endpoint_and_certificate_key(api: str, control_planes: int) -> None:
    if control_planes == 1:
        # A single control-plane cluster has nothing to join as control plane; workers get no such section.
        join = by_kind(render_join_config(make_cluster(api, 1), LINUX_WORKER))["JoinConfiguration"]
        assert "controlPlane" not in join
        return
    join = by_kind(render_join_config(make_cluster(api, 3), control_plane_node(2)))["JoinConfiguration"]
    assert join["controlPlane"] == {
        "localAPIEndpoint": {"advertiseAddress": CP_IPS[2], "bindPort": 6443},
        "certificateKey": JOIN_CERTIFICATE_KEY,
    }
    assert "taints" not in join["nodeRegistration"]  # kubeadm's default control-plane taint applies


@APIS
def test_windows_worker_registers_with_npipe_socket_taint_and_labels(api: str) -> None:
    join = by_kind(render_join_config(make_cluster(api), WINDOWS_WORKER))["JoinConfiguration"]
    registration = join["nodeRegistration"]
    assert registration["name"] == "hk-win-1"
    assert registration["criSocket"] == WINDOWS_SOCKET
    assert registration["taints"] == [{"key": "node-role.kubernetes.io/windows", "value": "true", "effect": "NoSchedule"}]
    assert args_as_dict(api, registration["kubeletExtraArgs"]) == {
        "node-ip": WINDOWS_WORKER.advertise_address,
        "node-labels": "node.os.distro=win2022,topology.kubernetes.io/zone=hk-1",
    }


@APIS
def test_a_node_max_pods_becomes_its_kubelet_flag_and_is_validated(api: str) -> None:
    limited = dataclasses.replace(WINDOWS_WORKER, max_pods=60)
    join = by_kind(render_join_config(make_cluster(api), limited))["JoinConfiguration"]
    assert args_as_dict(api, join["nodeRegistration"]["kubeletExtraArgs"])["max-pods"] == "60"
    validate_documents(render_join_config(make_cluster(api), limited))
    linux = by_kind(render_join_config(make_cluster(api), LINUX_WORKER))["JoinConfiguration"]
    assert "max-pods" not in args_as_dict(api, linux["nodeRegistration"]["kubeletExtraArgs"])
    for bad in (0, -1, True, "60"):
        with pytest.raises(ValueError, match="max_pods"):
            render_join_config(make_cluster(api), dataclasses.replace(WINDOWS_WORKER, max_pods=bad))


@APIS
def test_every_node_pins_its_kubelet_node_ip_to_its_own_address(api: str) -> None:
    # Calico detects node addresses from the Node's InternalIP (NodeInternalIP), never the kube-vip VIP.
    for node in (control_plane_node(0), control_plane_node(2), WINDOWS_WORKER):
        rendered = by_kind(render_join_config(make_cluster(api, 3), node))["JoinConfiguration"]
        assert args_as_dict(api, rendered["nodeRegistration"]["kubeletExtraArgs"])["node-ip"] == node.advertise_address
    init = by_kind(render_init_config(make_cluster(api, 3), control_plane_node(0)))["InitConfiguration"]
    assert args_as_dict(api, init["nodeRegistration"]["kubeletExtraArgs"])["node-ip"] == CP_IPS[0]


@APIS
def test_taints_none_means_kubeadm_default_and_empty_means_untainted(api: str) -> None:
    cluster = make_cluster(api)
    default = by_kind(render_join_config(cluster, LINUX_WORKER))["JoinConfiguration"]["nodeRegistration"]
    assert "taints" not in default
    untainted_cp = dataclasses.replace(control_plane_node(0), taints=())
    init = by_kind(render_init_config(cluster, untainted_cp))["InitConfiguration"]
    assert init["nodeRegistration"]["taints"] == []
    no_value = dataclasses.replace(LINUX_WORKER, taints=(Taint("dedicated", None, "NoExecute"),))
    taints = by_kind(render_join_config(cluster, no_value))["JoinConfiguration"]["nodeRegistration"]["taints"]
    assert taints == [{"key": "dedicated", "effect": "NoExecute"}]


@pytest.mark.parametrize("label", [
    "node-role.kubernetes.io/worker",
    "node-role.kubernetes.io/control-plane",
])
def test_node_role_labels_are_rejected_because_nodes_may_not_set_them(label: str) -> None:
    node = dataclasses.replace(LINUX_WORKER, labels={**LINUX_WORKER.labels, label: ""})
    with pytest.raises(ValueError, match="NodeRestriction"):
        render_join_config(make_cluster(KUBEADM_V1BETA4), node)


@pytest.mark.parametrize("label", ["kubernetes.io/role", "node-restriction.kubernetes.io/pool", "example.k8s.io/x"])
def test_other_kubernetes_namespace_labels_the_kubelet_refuses_are_rejected(label: str) -> None:
    node = dataclasses.replace(LINUX_WORKER, labels={label: "a"})
    with pytest.raises(ValueError, match="self-set"):
        render_join_config(make_cluster(KUBEADM_V1BETA4), node)


def test_self_settable_kubernetes_labels_are_accepted() -> None:
    labels = {"node.kubernetes.io/pool": "general", "topology.kubernetes.io/region": "hk", "example.com/team": "infra"}
    rendered = render_join_config(make_cluster(KUBEADM_V1BETA4), dataclasses.replace(LINUX_WORKER, labels=labels))
    extra_args = by_kind(rendered)["JoinConfiguration"]["nodeRegistration"]["kubeletExtraArgs"]
    node_labels = args_as_dict(KUBEADM_V1BETA4, extra_args)["node-labels"]
    assert node_labels == "example.com/team=infra,node.kubernetes.io/pool=general,topology.kubernetes.io/region=hk"


@pytest.mark.parametrize("labels", [{"zone": "hk 1"}, {"zone": "a,b=c"}, {"bad key!": "x"}, {"zone": "x" * 64}])
def test_malformed_labels_are_rejected(labels: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        render_join_config(make_cluster(KUBEADM_V1BETA4), dataclasses.replace(LINUX_WORKER, labels=labels))


# --- input checks --------------------------------------------------------------------------------


def test_api_version_and_kubernetes_minor_must_match() -> None:
    with pytest.raises(ValueError, match="removed in 1.36"):
        render_init_config(dataclasses.replace(make_cluster(KUBEADM_V1BETA3), kubernetes_version="1.36.4"), control_plane_node(0))
    with pytest.raises(ValueError, match="added in 1.31"):
        render_init_config(dataclasses.replace(make_cluster(KUBEADM_V1BETA4), kubernetes_version="1.30.14"), control_plane_node(0))
    with pytest.raises(ValueError, match="unknown kubeadm API"):
        render_init_config(dataclasses.replace(make_cluster(KUBEADM_V1BETA4), kubeadm_api="kubeadm.k8s.io/v1beta2"), control_plane_node(0))


@pytest.mark.parametrize("change", [
    {"node_cidr_mask_size": 16},            # not longer than the /16 pod subnet
    {"node_cidr_mask_size": 33},
    {"service_node_port_range": "32767-30000"},
    {"control_plane_endpoint": "10.30.30.10"},
    {"pod_subnet": "10.96.0.0/16"},          # overlaps the service subnet
    {"cert_sans": ()},
    {"cert_sans": ("not a name",)},
    {"kubernetes_version": "1.36"},
])
def test_invalid_cluster_parameters_are_rejected(change: dict) -> None:
    with pytest.raises(ValueError):
        render_init_config(dataclasses.replace(make_cluster(KUBEADM_V1BETA4), **change), control_plane_node(0))


def test_windows_nodes_cannot_be_control_plane_and_init_needs_a_control_plane_node() -> None:
    cluster = make_cluster(KUBEADM_V1BETA4)
    with pytest.raises(ValueError, match="Windows"):
        render_join_config(cluster, dataclasses.replace(WINDOWS_WORKER, control_plane=True))
    with pytest.raises(ValueError, match="control-plane"):
        render_init_config(cluster, LINUX_WORKER)
    with pytest.raises(ValueError, match="cri_socket"):
        render_join_config(cluster, dataclasses.replace(LINUX_WORKER, cri_socket="/run/containerd/containerd.sock"))
    with pytest.raises(ValueError, match="effect"):
        render_join_config(cluster, dataclasses.replace(LINUX_WORKER, taints=(Taint("a", "b", "NoScheduling"),)))


def test_version_prefix_is_normalised() -> None:
    cluster = dataclasses.replace(make_cluster(KUBEADM_V1BETA4), kubernetes_version="v1.36.4")
    assert by_kind(render_init_config(cluster, control_plane_node(0)))["ClusterConfiguration"]["kubernetesVersion"] == "v1.36.4"


# --- the model itself rejects what kubeadm would not read (guards) --------------------------------


def _mutated(yaml_text: str, kind: str, mutate) -> str:
    documents = [d for d in yaml.safe_load_all(yaml_text) if d is not None]
    for document in documents:
        if document["kind"] == kind:
            mutate(document)
    return yaml.safe_dump_all(documents, sort_keys=False)


@APIS
@pytest.mark.parametrize("kind, mutate", [
    ("ClusterConfiguration", lambda d: d["apiServer"].__setitem__("certSans", d["apiServer"].pop("certSANs"))),
    ("ClusterConfiguration", lambda d: d.__setitem__("podSubnet", "10.244.0.0/16")),
    ("InitConfiguration", lambda d: d["nodeRegistration"].__setitem__("criSockets", "x")),
    ("InitConfiguration", lambda d: d["bootstrapTokens"][0].__setitem__("token", "not-a-token")),
    ("InitConfiguration", lambda d: d["bootstrapTokens"][0].__setitem__("ttl", "15 minutes")),
    ("KubeletConfiguration", lambda d: d.__setitem__("cgroupDrivers", "systemd")),
    ("KubeletConfiguration", lambda d: d.__setitem__("cgroupDriver", "systemD")),
], ids=["typo-certSans", "misplaced-podSubnet", "typo-criSockets", "bad-token", "bad-duration", "kubelet-typo", "kubelet-enum"])
def test_model_rejects_typos_and_bad_values(api: str, kind: str, mutate) -> None:
    rendered = render_init_config(make_cluster(api), control_plane_node(0))
    validate_documents(rendered)
    with pytest.raises(pydantic.ValidationError):
        validate_documents(_mutated(rendered, kind, mutate))


def test_model_rejects_the_other_versions_argument_form() -> None:
    v4 = render_init_config(make_cluster(KUBEADM_V1BETA4), control_plane_node(0))
    map_in_v4 = _mutated(v4, "ClusterConfiguration",
                         lambda d: d["apiServer"].__setitem__("extraArgs", {"service-node-port-range": "30000-32767"}))
    with pytest.raises(pydantic.ValidationError):
        validate_documents(map_in_v4)
    v3 = render_init_config(make_cluster(KUBEADM_V1BETA3), control_plane_node(0))
    list_in_v3 = _mutated(v3, "ClusterConfiguration",
                          lambda d: d["apiServer"].__setitem__("extraArgs", [{"name": "a", "value": "b"}]))
    with pytest.raises(pydantic.ValidationError):
        validate_documents(list_in_v3)
    # An unquoted number where Go wants a string (map[string]string) does not decode either.
    int_value = _mutated(v3, "ClusterConfiguration",
                         lambda d: d["controllerManager"]["extraArgs"].__setitem__("node-cidr-mask-size", 24))
    with pytest.raises(pydantic.ValidationError):
        validate_documents(int_value)


def test_model_knows_which_version_has_which_fields() -> None:
    v3_join = render_join_config(make_cluster(KUBEADM_V1BETA3), LINUX_WORKER)
    v4_join = render_join_config(make_cluster(KUBEADM_V1BETA4), LINUX_WORKER)
    # v1beta4 moved timeouts into `timeouts`; v1beta3 has none of it, v1beta4 no discovery.timeout.
    validate_documents(_mutated(v4_join, "JoinConfiguration", lambda d: d.__setitem__("timeouts", {"discovery": "10m0s"})))
    with pytest.raises(pydantic.ValidationError):
        validate_documents(_mutated(v3_join, "JoinConfiguration", lambda d: d.__setitem__("timeouts", {"discovery": "10m0s"})))
    validate_documents(_mutated(v3_join, "JoinConfiguration", lambda d: d["discovery"].__setitem__("timeout", "10m0s")))
    with pytest.raises(pydantic.ValidationError):
        validate_documents(_mutated(v4_join, "JoinConfiguration", lambda d: d["discovery"].__setitem__("timeout", "10m0s")))


def test_model_rejects_unknown_kinds_duplicates_and_empty_input() -> None:
    with pytest.raises(ValueError, match="unknown apiVersion/kind"):
        validate_documents("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ResetConfigurations\n")
    with pytest.raises(ValueError, match="unknown apiVersion/kind"):
        validate_documents("apiVersion: kubeadm.k8s.io/v1beta2\nkind: InitConfiguration\n")
    with pytest.raises(ValueError, match="duplicate"):
        validate_documents("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                           "cgroupDriver: systemd\ncgroupDriver: cgroupfs\n")
    with pytest.raises(ValueError, match="no documents"):
        validate_documents("---\n")
    assert set(kubeadm_api.MODELS) >= {(KUBEADM_V1BETA3, "JoinConfiguration"), (KUBEADM_V1BETA4, "JoinConfiguration")}


@APIS
def test_api_server_args_join_the_cluster_configuration_once(api: str) -> None:
    gate = (("feature-gates", "MutatingAdmissionPolicy=true"),
            ("runtime-config", "admissionregistration.k8s.io/v1beta1=true"))
    cluster = dataclasses.replace(make_cluster(api), api_server_args=gate)
    rendered = render_init_config(cluster, control_plane_node(0))
    validate_documents(rendered)
    args = args_as_dict(api, by_kind(rendered)["ClusterConfiguration"]["apiServer"]["extraArgs"])
    assert args == {"service-node-port-range": "30000-32767", **dict(gate)}
    # Joins read the ClusterConfiguration from the cluster: a flag change re-renders only the init file.
    assert render_join_config(cluster, control_plane_node(1)) == render_join_config(make_cluster(api), control_plane_node(1))
    for repeated in (gate + gate[:1], (("service-node-port-range", "1-2"),)):
        with pytest.raises(ValueError, match="repeat a flag"):
            render_init_config(dataclasses.replace(cluster, api_server_args=repeated), control_plane_node(0))
