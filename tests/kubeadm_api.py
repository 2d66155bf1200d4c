"""A strict typed model of the kubeadm configuration API (kubeadm.k8s.io/v1beta3 and v1beta4:
InitConfiguration, ClusterConfiguration, JoinConfiguration) and of the KubeletConfiguration fields this
project emits, used by the tests to check every rendered document. Unknown fields, wrong types and
unknown apiVersion/kind pairs are errors.

Field names are the json tags of the upstream Go types, copied by hand from:
  v1beta3: kubernetes/kubernetes cmd/kubeadm/app/apis/kubeadm/v1beta3/types.go
           (commit 428c3fe9540a2cbe8daf4645879a87b30bbf1d02)
  v1beta4: kubernetes/kubernetes cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go
           (commit 1329935739c3aa007d23cb9a4dadfee9d59ff79b), plus the later additions listed on
           https://kubernetes.io/docs/reference/config-api/kubeadm-config.v1beta4/ ("v1.35: Add
           httpEndpoints ... etcd.externalEtcd", "v1.34: Add ECDSA-P384 ... encryptionAlgorithm")
  BootstrapToken: cmd/kubeadm/app/apis/bootstraptoken/v1/types.go
  Taint, EnvVar, pull policy, HostPathType: k8s.io/api/core/v1 (staging/src/k8s.io/api/core/v1/types.go)
  KubeletConfiguration: staging/src/k8s.io/kubelet/config/v1beta1/types.go (only the fields emitted)
Inline-embedded Go structs (TypeMeta, ControlPlaneComponent in APIServer, ImageMeta in DNS/LocalEtcd) are
flattened, as encoding/json does. Values are strict: a YAML int where Go wants a string is rejected,
as sigs.k8s.io/yaml would when decoding into map[string]string.
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

V1BETA3 = "kubeadm.k8s.io/v1beta3"
V1BETA4 = "kubeadm.k8s.io/v1beta4"
KUBELET_V1BETA1 = "kubelet.config.k8s.io/v1beta1"

# metav1.Duration marshals as Go's time.Duration.String(): "15m0s", "4m", "1h30m", "0s".
_GO_DURATION = re.compile(r"^(0|(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+)$")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _duration(value: str) -> str:
    if not _GO_DURATION.match(value):
        raise ValueError(f"{value!r} is not a Go duration")
    return value


GoDuration = Annotated[str, AfterValidator(_duration)]


# --- core/v1 and bootstraptoken/v1 ------------------------------------------------------------------

PullPolicy = Literal["Always", "IfNotPresent", "Never"]
HostPathType = Literal["", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"]


class Taint(Strict):
    # core/v1 Taint: key, value (omitempty), effect, timeAdded (omitempty)
    key: str
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    timeAdded: str | None = None


class EnvVar(Strict):
    # core/v1 EnvVar: name, value, valueFrom. valueFrom (an EnvVarSource) is not modelled field by field.
    name: str
    value: str | None = None
    valueFrom: dict[str, Any] | None = None


class BootstrapToken(Strict):
    # bootstraptoken/v1 BootstrapToken. `token` has no omitempty but may be left out: kubeadm then
    # generates one (its doc comment).
    token: str | None = Field(default=None, pattern=r"^[a-z0-9]{6}\.[a-z0-9]{16}$")
    description: str | None = None
    ttl: GoDuration | None = None
    expires: str | None = None
    usages: list[str] | None = None
    groups: list[str] | None = None


# --- shared by v1beta3 and v1beta4 (same fields in both types.go) -----------------------------------


class APIEndpoint(Strict):
    advertiseAddress: str | None = None
    bindPort: int | None = Field(default=None, ge=1, le=65535)


class Networking(Strict):
    serviceSubnet: str | None = None
    podSubnet: str | None = None
    dnsDomain: str | None = None


class HostPathMount(Strict):
    name: str
    hostPath: str
    mountPath: str
    readOnly: bool | None = None
    pathType: HostPathType | None = None


class Patches(Strict):
    directory: str | None = None


class BootstrapTokenDiscovery(Strict):
    token: str
    apiServerEndpoint: str | None = None
    caCertHashes: list[str] | None = None
    unsafeSkipCAVerification: bool | None = None


class FileDiscovery(Strict):
    kubeConfigPath: str


class JoinControlPlane(Strict):
    localAPIEndpoint: APIEndpoint | None = None
    certificateKey: str | None = None


class V1Beta3ExternalEtcd(Strict):
    endpoints: list[str]
    caFile: str
    certFile: str
    keyFile: str


# --- kubeadm.k8s.io/v1beta3 (cmd/kubeadm/app/apis/kubeadm/v1beta3/types.go) -------------------------


class V1Beta3ControlPlaneComponent(Strict):
    extraArgs: dict[str, str] | None = None
    extraVolumes: list[HostPathMount] | None = None


class V1Beta3APIServer(V1Beta3ControlPlaneComponent):
    certSANs: list[str] | None = None
    timeoutForControlPlane: GoDuration | None = None


class V1Beta3DNS(Strict):
    imageRepository: str | None = None
    imageTag: str | None = None


class V1Beta3LocalEtcd(Strict):
    imageRepository: str | None = None
    imageTag: str | None = None
    dataDir: str | None = None
    extraArgs: dict[str, str] | None = None
    serverCertSANs: list[str] | None = None
    peerCertSANs: list[str] | None = None


class V1Beta3Etcd(Strict):
    local: V1Beta3LocalEtcd | None = None
    external: V1Beta3ExternalEtcd | None = None


class V1Beta3NodeRegistration(Strict):
    name: str | None = None
    criSocket: str | None = None
    taints: list[Taint] | None = None
    kubeletExtraArgs: dict[str, str] | None = None
    ignorePreflightErrors: list[str] | None = None
    imagePullPolicy: PullPolicy | None = None


class V1Beta3Discovery(Strict):
    bootstrapToken: BootstrapTokenDiscovery | None = None
    file: FileDiscovery | None = None
    tlsBootstrapToken: str | None = None
    timeout: GoDuration | None = None


class V1Beta3InitConfiguration(Strict):
    apiVersion: Literal["kubeadm.k8s.io/v1beta3"]
    kind: Literal["InitConfiguration"]
    bootstrapTokens: list[BootstrapToken] | None = None
    nodeRegistration: V1Beta3NodeRegistration | None = None
    localAPIEndpoint: APIEndpoint | None = None
    certificateKey: str | None = None
    skipPhases: list[str] | None = None
    patches: Patches | None = None


class V1Beta3ClusterConfiguration(Strict):
    apiVersion: Literal["kubeadm.k8s.io/v1beta3"]
    kind: Literal["ClusterConfiguration"]
    etcd: V1Beta3Etcd | None = None
    networking: Networking | None = None
    kubernetesVersion: str | None = None
    controlPlaneEndpoint: str | None = None
    apiServer: V1Beta3APIServer | None = None
    controllerManager: V1Beta3ControlPlaneComponent | None = None
    scheduler: V1Beta3ControlPlaneComponent | None = None
    dns: V1Beta3DNS | None = None
    certificatesDir: str | None = None
    imageRepository: str | None = None
    featureGates: dict[str, bool] | None = None
    clusterName: str | None = None


class V1Beta3JoinConfiguration(Strict):
    apiVersion: Literal["kubeadm.k8s.io/v1beta3"]
    kind: Literal["JoinConfiguration"]
    nodeRegistration: V1Beta3NodeRegistration | None = None
    caCertPath: str | None = None
    discovery: V1Beta3Discovery
    controlPlane: JoinControlPlane | None = None
    skipPhases: list[str] | None = None
    patches: Patches | None = None


# --- kubeadm.k8s.io/v1beta4 (cmd/kubeadm/app/apis/kubeadm/v1beta4/types.go) -------------------------


class Arg(Strict):
    name: str
    value: str


class V1Beta4Timeouts(Strict):
    controlPlaneComponentHealthCheck: GoDuration | None = None
    kubeletHealthCheck: GoDuration | None = None
    kubernetesAPICall: GoDuration | None = None
    etcdAPICall: GoDuration | None = None
    tlsBootstrap: GoDuration | None = None
    discovery: GoDuration | None = None
    upgradeManifests: GoDuration | None = None


class V1Beta4ControlPlaneComponent(Strict):
    extraArgs: list[Arg] | None = None
    extraVolumes: list[HostPathMount] | None = None
    extraEnvs: list[EnvVar] | None = None


class V1Beta4APIServer(V1Beta4ControlPlaneComponent):
    certSANs: list[str] | None = None


class V1Beta4DNS(Strict):
    imageRepository: str | None = None
    imageTag: str | None = None
    disabled: bool | None = None


class V1Beta4Proxy(Strict):
    disabled: bool | None = None


class V1Beta4LocalEtcd(Strict):
    imageRepository: str | None = None
    imageTag: str | None = None
    dataDir: str | None = None
    extraArgs: list[Arg] | None = None
    extraEnvs: list[EnvVar] | None = None
    serverCertSANs: list[str] | None = None
    peerCertSANs: list[str] | None = None


class V1Beta4ExternalEtcd(V1Beta3ExternalEtcd):
    # kubeadm-config.v1beta4 page, "v1.35: Add httpEndpoints field to ClusterConfiguration.etcd.externalEtcd"
    httpEndpoints: list[str] | None = None


class V1Beta4Etcd(Strict):
    local: V1Beta4LocalEtcd | None = None
    external: V1Beta4ExternalEtcd | None = None


class V1Beta4NodeRegistration(Strict):
    name: str | None = None
    criSocket: str | None = None
    taints: list[Taint] | None = None
    kubeletExtraArgs: list[Arg] | None = None
    ignorePreflightErrors: list[str] | None = None
    imagePullPolicy: PullPolicy | None = None
    imagePullSerial: bool | None = None


class V1Beta4Discovery(Strict):
    # v1beta4 moved Discovery.timeout to JoinConfiguration.timeouts.discovery.
    bootstrapToken: BootstrapTokenDiscovery | None = None
    file: FileDiscovery | None = None
    tlsBootstrapToken: str | None = None


class V1Beta4InitConfiguration(Strict):
    apiVersion: Literal["kubeadm.k8s.io/v1beta4"]
    kind: Literal["InitConfiguration"]
    bootstrapTokens: list[BootstrapToken] | None = None
    dryRun: bool | None = None
    nodeRegistration: V1Beta4NodeRegistration | None = None
    localAPIEndpoint: APIEndpoint | None = None
    certificateKey: str | None = None
    skipPhases: list[str] | None = None
    patches: Patches | None = None
    timeouts: V1Beta4Timeouts | None = None


class V1Beta4ClusterConfiguration(Strict):
    apiVersion: Literal["kubeadm.k8s.io/v1beta4"]
    kind: Literal["ClusterConfiguration"]
    etcd: V1Beta4Etcd | None = None
    networking: Networking | None = None
    kubernetesVersion: str | None = None
    controlPlaneEndpoint: str | None = None
    apiServer: V1Beta4APIServer | None = None
    controllerManager: V1Beta4ControlPlaneComponent | None = None
    scheduler: V1Beta4ControlPlaneComponent | None = None
    dns: V1Beta4DNS | None = None
    proxy: V1Beta4Proxy | None = None
    certificatesDir: str | None = None
    imageRepository: str | None = None
    featureGates: dict[str, bool] | None = None
    clusterName: str | None = None
    encryptionAlgorithm: Literal["RSA-2048", "RSA-3072", "RSA-4096", "ECDSA-P256", "ECDSA-P384"] | None = None
    certificateValidityPeriod: GoDuration | None = None
    caCertificateValidityPeriod: GoDuration | None = None


class V1Beta4JoinConfiguration(Strict):
    apiVersion: Literal["kubeadm.k8s.io/v1beta4"]
    kind: Literal["JoinConfiguration"]
    dryRun: bool | None = None
    nodeRegistration: V1Beta4NodeRegistration | None = None
    caCertPath: str | None = None
    discovery: V1Beta4Discovery
    controlPlane: JoinControlPlane | None = None
    skipPhases: list[str] | None = None
    patches: Patches | None = None
    timeouts: V1Beta4Timeouts | None = None


# --- kubelet.config.k8s.io/v1beta1, the emitted subset -------------------------------------------


class KubeletConfiguration(Strict):
    # kubernetes/kubelet v0.36.3 config/v1beta1/types.go (Kubernetes 1.36.3): the json tags and Go types of the
    # fields this project emits.
    apiVersion: Literal["kubelet.config.k8s.io/v1beta1"]
    kind: Literal["KubeletConfiguration"]
    cgroupDriver: Literal["systemd", "cgroupfs"] | None = None
    serializeImagePulls: bool | None = None
    maxParallelImagePulls: int | None = Field(default=None, ge=0)
    serverTLSBootstrap: bool | None = None
    eventRecordQPS: int | None = Field(default=None, ge=0)      # *int32
    eventBurst: int | None = Field(default=None, ge=0)          # int32
    podPidsLimit: int | None = None                             # *int64
    protectKernelDefaults: bool | None = None
    seccompDefault: bool | None = None                          # *bool
    tlsCipherSuites: list[str] | None = None


Document = (
    V1Beta3InitConfiguration | V1Beta3ClusterConfiguration | V1Beta3JoinConfiguration
    | V1Beta4InitConfiguration | V1Beta4ClusterConfiguration | V1Beta4JoinConfiguration
    | KubeletConfiguration
)

MODELS: dict[tuple[str, str], type[BaseModel]] = {
    (V1BETA3, "InitConfiguration"): V1Beta3InitConfiguration,
    (V1BETA3, "ClusterConfiguration"): V1Beta3ClusterConfiguration,
    (V1BETA3, "JoinConfiguration"): V1Beta3JoinConfiguration,
    (V1BETA4, "InitConfiguration"): V1Beta4InitConfiguration,
    (V1BETA4, "ClusterConfiguration"): V1Beta4ClusterConfiguration,
    (V1BETA4, "JoinConfiguration"): V1Beta4JoinConfiguration,
    (KUBELET_V1BETA1, "KubeletConfiguration"): KubeletConfiguration,
}


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate mapping keys: PyYAML silently keeps the last one, while
    sigs.k8s.io/yaml strict decoding reports them."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    keys = [loader.construct_object(key_node, deep=deep) for key_node, _ in node.value]
    duplicates = {k for k in keys if keys.count(k) > 1}
    if duplicates:
        raise ValueError(f"duplicate keys {sorted(map(str, duplicates))} at {node.start_mark}")
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def validate_documents(yaml_text: str) -> list[BaseModel]:
    """Parses a (multi-document) YAML string and validates each document against the model its
    apiVersion/kind selects. Raises ValueError for an unknown apiVersion/kind or a non-mapping
    document and pydantic.ValidationError for unknown fields or wrong types."""
    models: list[BaseModel] = []
    for document in yaml.load_all(yaml_text, Loader=_UniqueKeyLoader):
        if document is None:
            continue
        if not isinstance(document, dict):
            raise ValueError(f"document is not a mapping: {document!r}")
        key = (document.get("apiVersion"), document.get("kind"))
        model = MODELS.get(key)  # type: ignore[arg-type]
        if model is None:
            raise ValueError(f"unknown apiVersion/kind {key}; known: {sorted(MODELS)}")
        models.append(model.model_validate(document))
    if not models:
        raise ValueError("no documents")
    return models
