"""Backups and cross-site recovery (config `backup`): Velero on Linux nodes with its Linux and Windows node agents, a
backup location in this site and one in another, and a schedule writing to each (render/backup.py says how and why;
the etcd snapshots go off-site from the control-plane nodes themselves, render/etcd_backup.py). Secrets reach the
cluster only as the credentials Secret, built from Pulumi secret Outputs.
"""
from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_command as command
import pulumi_kubernetes as kubernetes

from config import compat
from config.secrets import present
from plan.platform import BackupPlan
from render import backup
from render.shell import bash_command

from ..cluster.bootstrap import ControlPlaneAccess
from .k8s import helm_release, kubernetes_object, resource_name

Pair = tuple[pulumi.Output[str], pulumi.Output[str]]


def _credentials(pair: Pair, locations: Sequence[str]) -> pulumi.Output[dict[str, str]]:
    """A credentials Secret's data: the pair's shared credentials file under each location's key."""
    def data(values: list[str]) -> dict[str, str]:
        return {backup.credential_key(location): backup.credentials_file(values[0], values[1]) for location in locations}
    return pulumi.Output.secret(pulumi.Output.all(*pair).apply(data))


class Backups(pulumi.ComponentResource):
    def __init__(self, name: str, plan: BackupPlan, provider: pulumi.ProviderResource, primary: Pair | None,
                 offsite: Pair | None, linux_ready: Sequence[pulumi.Resource], windows_ready: Sequence[pulumi.Resource],
                 access: ControlPlaneAccess, repository_password: pulumi.Output[str] | None = None,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:Backups", name, None, opts)
        stores = plan.stores
        primary = present(primary, "backupAccessKeyId")

        def declare(obj: dict, depends_on: Sequence[pulumi.Resource]) -> pulumi.CustomResource:
            return kubernetes_object(f"{name}-{resource_name(obj)}", obj, provider=provider, parent=self,
                                     depends_on=list(depends_on))

        namespace = declare(backup.namespace(), [])
        # Each site's keys in their own Secret (render/backup.py credential_ref): this site's, and the other site's
        # for the off-site and recovery locations.
        sites: list[tuple[str, Pair, list[str]]] = [(backup.CREDENTIALS_SECRET, primary, [backup.PRIMARY])]
        if len(stores) > 1:
            sites.append((backup.OFFSITE_CREDENTIALS_SECRET, present(offsite, "offsiteAccessKeyId"),
                          [n for n in stores if n != backup.PRIMARY]))
        credentials: list[pulumi.Resource] = []
        for secret_name, pair, site_locations in sites:
            metadata = backup.credentials_secret_metadata(secret_name)
            credentials.append(kubernetes.core.v1.Secret(
                f"{name}-{resource_name(metadata)}",
                metadata=metadata["metadata"],
                type=metadata["type"],
                string_data=_credentials(pair, site_locations),
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[namespace]),
            ))
        before_release: list[pulumi.Resource] = [namespace, *credentials, *linux_ready]
        if plan.file_system_backup:
            repository_password = present(repository_password, "veleroRepositoryPassword")
            # Before Velero's first start, which would make the Secret with its default (render/backup.py). Run again
            # for a new password or script only; on the first control-plane node, as every cluster-wide step.
            script = bash_command(backup.render_repository_password(plan.keep_default_repository_password))
            password_line: pulumi.Output[str] = pulumi.Output.secret(repository_password.apply(lambda p: f"{p}\n"))
            before_release.append(command.remote.Command(
                f"{name}-repository-password", connection=access.connection, create=script, update=script,
                stdin=password_line, logging=command.remote.Logging.STDOUT_AND_STDERR,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace, access.init])))
        cas = {location: store.ca_certificate for location, store in stores.items() if store.ca_certificate}
        if cas:
            before_release.append(declare(backup.ca_secret(cas), [namespace]))
        # Each bucket the stack says is immutable is checked for it, with that site's keys, on every change of them.
        site_keys: dict[str, Pair | None] = {backup.PRIMARY: primary, backup.OFFSITE: offsite}
        for location, store in stores.items():
            store_keys = site_keys.get(location)
            if store.object_lock is None or store_keys is None:
                continue
            check = bash_command(backup.render_object_lock_check(store))
            keys: pulumi.Output[str] = pulumi.Output.secret(
                pulumi.Output.all(*store_keys).apply(lambda k: f"{k[0]}\n{k[1]}\n"))
            # Velero is not installed or changed over a bucket that is not what the stack says.
            before_release.append(command.remote.Command(
                f"{name}-object-lock-{location}", connection=access.connection, create=check, update=check, stdin=keys,
                logging=command.remote.Logging.STDOUT_AND_STDERR,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[access.init])))
        velero = helm_release(f"{name}-velero", compat.CHARTS["velero"], backup.NAMESPACE,
                              backup.velero_values(compat.VELERO_AWS_PLUGIN_IMAGE, plan.file_system_backup),
                              provider=provider, parent=self, depends_on=before_release)
        # The locations and schedules are the chart's CRDs: after it. The primary location is the default one.
        locations = [declare(backup.storage_location(location, store, default=location == backup.PRIMARY), [velero])
                     for location, store in stores.items()]
        # A schedule per location it may write to: the recovery location is read-only.
        for location in (name for name in stores if name != backup.RECOVERY):
            days = plan.offsite_retention_days if location == backup.OFFSITE else plan.retention_days
            declare(backup.schedule(location, plan.schedule, days, plan.file_system_backup,
                                    plan.excluded_namespaces, plan.timezone), locations)
        for build in plan.windows_agent_builds:
            declare(backup.node_agent_windows(compat.VELERO_IMAGE, build), [velero, *windows_ready])
        self.register_outputs({"locations": sorted(stores), "velero": compat.VELERO_VERSION})
