"""The storage layer: only the backends the stack enables (config `storage`): csi-driver-smb on Linux and
Windows nodes with its credentials Secret built from Pulumi secrets, csi-driver-nfs and Longhorn on Linux
workers, and the StorageClass of each (shared-files is the one name both OSes mount).

Rotating the SMB password is a config change that updates only the Secret; mounted volumes keep their
credentials until re-staged, so the workloads using shared-files need a rolling restart (docs/day2.md).
"""
from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as kubernetes

from config.compat import CHARTS
from render import scheduling, storage

from .k8s import helm_release, kubernetes_object, resource_name


class Storage(pulumi.ComponentResource):
    def __init__(self, name: str, params: storage.StorageParams, provider: pulumi.ProviderResource,
                 smb_credentials: tuple[pulumi.Output[str], pulumi.Output[str]] | None,
                 worker_labels: Sequence[pulumi.Resource], linux_ready: Sequence[pulumi.Resource] = (),
                 windows_ready: Sequence[pulumi.Resource] = (), opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:Storage", name, None, opts)

        drivers: dict[str, list[pulumi.Resource]] = {}
        if params.smb is not None:
            if smb_credentials is None:
                raise ValueError("storage.smb needs the secrets smbUsername and smbPassword")
            metadata = storage.smb_secret_metadata()
            # Typed here: mypy infers Output.secret's type argument only with an expected type (Secret's __init__ is overloaded).
            credentials: pulumi.Output[dict[str, str]] = pulumi.Output.secret(pulumi.Output.all(*smb_credentials).apply(
                lambda creds: {"username": creds[0], "password": creds[1]}))
            smb_secret = kubernetes.core.v1.Secret(
                f"{name}-{resource_name(metadata)}",
                metadata=metadata["metadata"],
                type=metadata.get("type"),
                string_data=credentials,
                opts=pulumi.ResourceOptions(parent=self, provider=provider),
            )
            # Each driver once the nodes its pods run on are Ready: on a first `up` Helm would otherwise start them
            # right after kubeadm init, before the network and the workers, and wait out its timeout.
            smb = helm_release(f"{name}-csi-driver-smb", CHARTS["csi-driver-smb"], storage.CSI_NAMESPACE,
                               storage.csi_smb_values(), provider=provider, parent=self,
                               depends_on=[*linux_ready, *windows_ready],
                               # Its node plugin runs on every Windows node too (csi-smb-node-win).
                               windows_workloads=bool(windows_ready))
            drivers[storage.SHARED_FILES_CLASS] = [smb, smb_secret]
        if params.nfs is not None:
            nfs = helm_release(f"{name}-csi-driver-nfs", CHARTS["csi-driver-nfs"], storage.CSI_NAMESPACE,
                               storage.csi_nfs_values(), provider=provider, parent=self, depends_on=list(linux_ready))
            drivers[storage.NFS_FILES_CLASS] = [nfs]
        if params.longhorn is not None:
            # Longhorn's pods must run privileged, and it places them by the worker role label.
            longhorn_namespace = kubernetes_object(
                f"{name}-namespace-{storage.LONGHORN_NAMESPACE}",
                scheduling.system_namespace(storage.LONGHORN_NAMESPACE), provider=provider, parent=self)
            longhorn = helm_release(f"{name}-longhorn", CHARTS["longhorn"], storage.LONGHORN_NAMESPACE,
                                    storage.longhorn_values(params), provider=provider, parent=self,
                                    depends_on=[longhorn_namespace, *worker_labels])
            drivers[storage.LONGHORN_CLASS] = [longhorn]
        self.classes = {
            obj["metadata"]["name"]: kubernetes_object(f"{name}-{resource_name(obj)}", obj, provider=provider,
                                                       parent=self, depends_on=drivers[obj["metadata"]["name"]])
            for obj in storage.storage_classes(params)
        }
        self.register_outputs({"classes": sorted(self.classes), "default": params.default_class})
