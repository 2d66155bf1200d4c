"""The bootstrap layer: kubeadm takes the machines to a cluster. It owns `kubeadm init` on the first
control-plane node, one fresh-token join per other node, the drain-before-reset delete path of every
node, the admin kubeconfig and the Kubernetes provider the platform layer uses.

Ordering, in the graph: every join waits for init and for its own machine; worker joins run in parallel
with each other; control-plane joins run one after another (etcd admits one learner member at a time:
https://etcd.io/docs/v3.5/learning/design-learner/ "etcd limits the number of learners to one");
Windows joins also wait for the cluster network's Windows prerequisites.
On destroy Pulumi deletes in reverse, in upstream's "Remove the node" order: drain (on a control-plane
node), then `kubeadm reset` (on the node; it removes a control-plane node's stacked etcd member while the
Node and the kubeadm-config still exist), then the deregistration (on a control-plane node: the etcd member
by name if reset could not remove it, never below quorum, and the Node object), then the VM.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_command as command
import pulumi_kubernetes as kubernetes

from config.secrets import present
from plan.cluster import ClusterPlan, NodePlan
from render import etcd_backup, kubeadm, linux_bootstrap, node_steps, windows_bootstrap
from render.hyperv import ssh_command
from render.kubeconfig import point_at_server
from render.kubelet_config import render_kubelet_config_sync
from render.shell import bash_command

from ..machines.lifecycle import COMMAND_INPUTS, command_options
from ..machines.nodes import HypervWindowsNode, Machines, ProxmoxLinuxNode

# Commands whose stdout carries a secret log stderr only and keep stdout encrypted in the state.
SECRET_STDOUT = ["stdout"]


@dataclass(frozen=True)
class ControlPlaneAccess:
    """Where node-lifecycle commands run: the first control-plane node, as root with admin.conf."""

    connection: command.remote.ConnectionArgs
    init: command.remote.Command
    kubeadm_api: str
    # The etcd Pod of that node (render.kubeadm.etcd_pod): where etcdctl runs.
    etcd_pod: str
    # The cluster's kubelet configuration brought to the stack's (serverTLSBootstrap): every join waits for it.
    kubelet_config: command.remote.Command


@dataclass(frozen=True)
class SessionLane:
    """The steps of the node before this one in its lane of sessions on the first control-plane node."""
    credentials: tuple[pulumi.Resource, ...]
    ready: tuple[pulumi.Resource, ...]


class LinuxNodeJoin(pulumi.ComponentResource):
    """One Linux node's membership: a fresh join credential, the join (reset on delete), the drain."""

    def __init__(self, name: str, cluster: ClusterPlan, machine: ProxmoxLinuxNode, access: ControlPlaneAccess,
                 control_plane: bool, after: Sequence[pulumi.Resource] = (), lane: SessionLane | None = None,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:bootstrap:LinuxNodeJoin", name, None, opts)
        node = machine.node
        etcd_pod = access.etcd_pod if control_plane else None
        registration = node_registration(name, node.name, access, machine.instance, etcd_pod, self)
        credentials = join_credentials(name, access, control_plane, machine.instance,
                                       [machine.ready, *after, *(lane.credentials if lane else ())], self)
        self.credentials = credentials
        join_config = kubeadm.render_join_config(cluster.params, node.kubeadm)
        # Secret by construction, not only through the engine's additional_secret_outputs. Typed here: mypy infers
        # Output.secret's type argument only with an expected type (Command's __init__ is overloaded).
        join_stdin: pulumi.Output[str] = pulumi.Output.secret(credentials.stdout.apply(lambda line: f"{line}\n"))
        self.join = command.remote.Command(
            f"{name}-join",
            connection=machine.connection,
            create=bash_command(linux_bootstrap.render_join(
                join_config, control_plane=control_plane,
                kube_vip_manifest=cluster.kube_vip_join if control_plane else None)),
            delete=bash_command(linux_bootstrap.render_reset(node.name, kubeadm.etcd_pod(node.name) if control_plane else None)),
            stdin=join_stdin,
            logging=command.remote.Logging.STDERR,
            triggers=[machine.instance],
            # Same node, same name: the old membership's reset must run before the new join, not after.
            opts=command_options(node, parent=self, depends_on=[credentials, machine.ready, registration],
                                 delete_before_replace=True),
        )
        self.drain = node_drain(name, node, access, self.join, etcd_pod, self, lane.ready if lane else (),
                                node.replica_store)
        mark_lost(name, node, access, self.drain, etcd_pod, self)
        self.node_name = node.name
        self.register_outputs({"node": node.name, "joined": self.join.id})


class WindowsNodeJoin(pulumi.ComponentResource):
    """One Windows node: guest preparation, a fresh join credential, the join (reset on delete), the drain."""

    def __init__(self, name: str, cluster: ClusterPlan, machine: HypervWindowsNode, access: ControlPlaneAccess,
                 after: Sequence[pulumi.Resource] = (), lane: SessionLane | None = None,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:bootstrap:WindowsNodeJoin", name, None, opts)
        node = machine.node
        params = node.params
        password_line = machine.password_line
        # After the VM converge and, with windows.activation, the guest's activation.
        previous: pulumi.Resource = machine.ready
        self.prepare: list[command.remote.Command] = []
        for step, script in windows_bootstrap.render_prepare_steps(params):
            binaries = step in (windows_bootstrap.KUBERNETES_STEP, windows_bootstrap.CONTAINERD_BINARIES_STEP)
            previous = command.remote.Command(
                f"{name}-prepare-{step}",
                connection=machine.host_connection,
                create=ssh_command(script),
                # The Kubernetes binaries and containerd are installed at the versions of the day the instance
                # is created (a replaced VM is a new instance: the engine ignores nothing on a replacement, so
                # it gets the stack's current versions); later the upgrade chain moves them
                # (components/cluster/upgrade.py), behind a drain. So their update leaves the binaries alone: a
                # rotated credential re-runs it on every node at once, and a stored older text would move
                # them back.
                update=ssh_command(windows_bootstrap.render_prepare_update(params, step, script)),
                stdin=password_line,
                logging=command.remote.Logging.STDOUT_AND_STDERR,
                triggers=[machine.instance],
                opts=command_options(node, parent=self, depends_on=[previous], delete_before_replace=True,
                                     ignore_changes=["create"] if binaries else None),
            )
            self.prepare.append(previous)
        registration = node_registration(name, node.name, access, machine.instance, None, self)
        credentials = join_credentials(name, access, False, machine.instance,
                                       [previous, *after, *(lane.credentials if lane else ())], self)
        self.credentials = credentials
        join_config = kubeadm.render_join_config(cluster.params, node.kubeadm)
        # Typed here: mypy infers Output.secret's type argument only with an expected type (Command's __init__ is overloaded).
        join_stdin: pulumi.Output[str] = pulumi.Output.secret(
            pulumi.Output.all(machine.admin_password, credentials.stdout).apply(lambda s: f"{s[0]}\n{s[1]}\n"))
        self.join = command.remote.Command(
            f"{name}-join",
            connection=machine.host_connection,
            create=ssh_command(windows_bootstrap.render_join(params, join_config)),
            delete=ssh_command(windows_bootstrap.render_reset(params)),
            stdin=join_stdin,
            logging=command.remote.Logging.STDERR,
            triggers=[machine.instance],
            opts=command_options(node, parent=self, depends_on=[credentials, previous, registration],
                                 delete_before_replace=True),
        )
        self.drain = node_drain(name, node, access, self.join, None, self, lane.ready if lane else ())
        mark_lost(name, node, access, self.drain, None, self)
        self.node_name = node.name
        self.register_outputs({"node": node.name, "joined": self.join.id})


def mark_lost(name: str, node: NodePlan, access: ControlPlaneAccess, drain: pulumi.Resource,
              etcd_pod: str | None, parent: pulumi.Resource) -> command.remote.Command | None:
    """For a node declared `lost`: on the first control-plane node, take it out of service (the
    non-graceful node shutdown taint), after refusing if it is still Ready, and remove a control-plane
    node's etcd member (quorum checked). Its removal then drains nothing and dials nothing
    (render/scripts/node-mark-lost.sh). Nothing to undo: the Node goes with the removal."""
    if not node.lost:
        return None
    return command.remote.Command(
        f"{name}-lost",
        connection=access.connection,
        create=bash_command(node_steps.render_mark_lost(node.name, etcd_pod)),
        logging=command.remote.Logging.STDOUT_AND_STDERR,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[drain]),
    )


def join_credentials(name: str, access: ControlPlaneAccess, control_plane: bool, machine_id: pulumi.Output[str],
                     after: Sequence[pulumi.Resource], parent: pulumi.Resource) -> command.remote.Command:
    """A fresh join line, minted on the first control-plane node when the node is ready to use it."""
    return command.remote.Command(
        f"{name}-join-credentials",
        connection=access.connection,
        create=bash_command(linux_bootstrap.render_join_credentials(control_plane=control_plane,
                                                                     kubeadm_api=access.kubeadm_api)),
        logging=command.remote.Logging.STDERR,
        # A new machine needs a new token: the old one expired long ago.
        triggers=[machine_id],
        # pulumi-command sends the previous stdout (a join line) as PULUMI_COMMAND_STDOUT on an update (a
        # rotated key, a new script) unless told not to (remote/commandOutputs.go).
        add_previous_output_in_env=False,
        # Not on a new connection (a rotated credential, a bastion, pinned host keys): a join line already used needs
        # no successor, and for a control-plane join it would upload the cluster CA's keys to kubeadm-certs again.
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[access.init, access.kubelet_config, *after],
                                    additional_secret_outputs=SECRET_STDOUT, delete_before_replace=True,
                                    ignore_changes=["connection"]),
    )


def node_registration(name: str, node_name: str, access: ControlPlaneAccess, machine_id: pulumi.Output[str],
                      etcd_pod: str | None, parent: pulumi.Resource) -> command.remote.Command:
    """Nothing on create; on delete, after the node's reset (the join depends on it, so Pulumi deletes the
    join first), removes what reset leaves in the cluster: the etcd member if it is still there, the Node."""
    return command.remote.Command(
        f"{name}-registration",
        connection=access.connection,
        delete=bash_command(node_steps.render_deregister(node_name, etcd_pod=etcd_pod)),
        # A replaced machine is a new member: the old one is deregistered once its reset has run.
        triggers=[machine_id],
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[access.init], delete_before_replace=True),
    )


def node_drain(name: str, node: NodePlan, access: ControlPlaneAccess,
               join: command.remote.Command, etcd_pod: str | None, parent: pulumi.Resource,
               after: Sequence[pulumi.Resource] = (), longhorn_namespace: str | None = None) -> command.remote.Command:
    """Waits until the joined node is Ready; on delete drains it (checking etcd quorum first for a control-plane node;
    moving its Longhorn replicas elsewhere first, with `longhorn_namespace`) before the reset runs. For a lost node it
    is frozen like the node's own steps (a re-run would wait for a Ready that never comes), but its delete still runs:
    it only cordons."""
    return command.remote.Command(
        f"{name}-drain",
        connection=access.connection,
        create=bash_command(node_steps.render_wait_for_node(node.name)),
        delete=bash_command(node_steps.render_drain(node.name, etcd_pod=etcd_pod, longhorn_namespace=longhorn_namespace)),
        # A new join (a replaced machine) is waited for again; its predecessor is drained first.
        triggers=[join.id],
        # `after`: the wait before it in its session lane (provisioning.controlPlaneSessions).
        opts=command_options(node, retain=False, parent=parent, depends_on=[join, *after], delete_before_replace=True),
    )


def certificate_renewal(name: str, cluster: ClusterPlan, control_plane: Sequence[ProxmoxLinuxNode],
                        node_ready: dict[str, pulumi.Resource], parent: pulumi.Resource) -> list[pulumi.Resource]:
    """The renewal round `cluster.certificateRenewal` names, on each control-plane node in turn (each
    restarts its control-plane Pods; etcd keeps quorum). No round configured: nothing. Renewed
    certificates stay when the round is removed, so there is nothing to undo on delete."""
    label = cluster.certificate_renewal
    if label is None:
        return []
    previous: list[pulumi.Resource] = [node_ready[m.node.name] for m in control_plane]
    # A lost node is left out: nothing may dial it.
    for machine in (m for m in control_plane if not m.node.lost):
        # The quorum check lets the only member of a single-member cluster restart (its API is down meanwhile).
        script = bash_command(linux_bootstrap.render_renew_certificates(
            machine.node.name, label, etcd_pod=kubeadm.etcd_pod(machine.node.name), kube_vip=cluster.kube_vip))
        previous = [command.remote.Command(
            f"{name}-{machine.node.name}-certificate-renewal",
            connection=machine.connection,
            create=script,
            update=script,
            logging=command.remote.Logging.STDOUT_AND_STDERR,
            opts=pulumi.ResourceOptions(parent=parent, depends_on=previous),
        )]
    return previous


class EtcdBackups(pulumi.ComponentResource):
    """Scheduled etcd snapshots on every control-plane node (`etcdBackup`), installed once the node is
    Ready, removed with the node or the setting; the stored snapshots outlive both."""

    def __init__(self, name: str, cluster: ClusterPlan, machines: Machines, node_ready: dict[str, pulumi.Resource],
                 offsite_credentials: tuple[pulumi.Output[str], pulumi.Output[str]] | None,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:bootstrap:EtcdBackups", name, None, opts)
        self.schedules: dict[str, command.remote.Command] = {}
        if cluster.etcd_backups:
            # The off-site credentials reach the nodes on standard input only (render/etcd_backup.py render_install).
            stdin: pulumi.Output[str] | None = None
            if cluster.etcd_offsite:
                pair = present(offsite_credentials, "etcdOffsiteAccessKeyId")
                stdin = pulumi.Output.secret(pulumi.Output.format("{0}\n{1}\n", pair[0], pair[1]))
            for machine in (m for m in machines.linux_nodes if m.role == "control-plane"):
                params = cluster.etcd_backups[machine.node.name]
                install = bash_command(etcd_backup.render_install(params))
                self.schedules[machine.node.name] = (command.remote.Command(
                    f"{name}-{machine.node.name}",
                    connection=machine.connection,
                    create=install,
                    update=install,
                    stdin=stdin,
                    delete=bash_command(etcd_backup.render_remove()),
                    logging=command.remote.Logging.STDOUT_AND_STDERR,
                    # A new instance of the machine gets its schedule again.
                    triggers=[machine.instance],
                    opts=command_options(machine.node, parent=self, depends_on=[node_ready[machine.node.name]],
                                         delete_before_replace=True),
                ))
        self.register_outputs({"nodes": [s.urn for s in self.schedules.values()]})


PROVIDER_EXPIRY_KEY = "pulumi:kubernetes-provider"


class CertificateExpiry(pulumi.ComponentResource):
    """When each kubeadm certificate expires on each control-plane node, read after the last change that
    renews them (init, a renewal round, an upgrade), as the stack output `certificateExpiry`
    ({node: {certificate: date}}): every node renews its own, so each is read on its node."""

    def __init__(self, name: str, cluster: ClusterPlan, machines: Machines, access: ControlPlaneAccess,
                 after: Sequence[pulumi.Resource], provider_credential: pulumi.Output[str],
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:bootstrap:CertificateExpiry", name, None, opts)
        checks = {}
        for machine in (m for m in machines.linux_nodes if m.role == "control-plane" and not m.node.lost):
            checks[machine.node.name] = command.remote.Command(
                f"{name}-{machine.node.name}-check",
                connection=machine.connection,
                create=bash_command(linux_bootstrap.render_certificate_expiry()),
                logging=command.remote.Logging.STDERR,
                triggers=[machine.instance, cluster.certificate_renewal or "", cluster.kubernetes_version],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[access.init, *after]),
            )
        # And the Kubernetes provider's own credential, under PROVIDER_EXPIRY_KEY (no node has that name: it has a colon).
        self.expiry = pulumi.Output.all(**{PROVIDER_EXPIRY_KEY: provider_credential},
                                        **{node: check.stdout for node, check in checks.items()}).apply(
            lambda read: {node: {"client": text} if node == PROVIDER_EXPIRY_KEY else
                          linux_bootstrap.parse_certificate_expiry(text) for node, text in read.items()})
        self.register_outputs({"expiry": self.expiry})


class KubeadmCluster(pulumi.ComponentResource):
    """kubeadm init, the Linux joins, the admin kubeconfig and the Kubernetes provider. Windows nodes join
    through WindowsJoins, declared once the cluster network they wait for exists."""

    def __init__(self, name: str, cluster: ClusterPlan, machines: Machines, version_pin: pulumi.Resource,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:bootstrap:KubeadmCluster", name, None, opts)
        first, *other_control_plane = [m for m in machines.linux_nodes if m.role == "control-plane"]
        init_config = kubeadm.render_init_config(cluster.params, first.node.kubeadm)
        # kubeadm init runs once, at the version of that day; later versions reach the cluster through
        # `kubeadm upgrade` (components/cluster/upgrade.py), never by re-running init. It is keyed on nothing and
        # has no delete: a replacement (`--replace`, create before delete) would otherwise end in
        # `kubeadm reset` on the node that holds the cluster, and a new instance of that node is a new
        # cluster, which the program never starts by itself (docs/lifecycle.md: The first control-plane node).
        # Destroying the stack deletes the VM, which needs no reset. Its connection is ignored too: a new
        # instance of the node presents a new host key (components/machines/nodes.py), and a run there would be init.
        self.init = command.remote.Command(
            f"{name}-init",
            connection=first.connection,
            create=bash_command(linux_bootstrap.render_init(
                init_config, cluster.kube_vip_init, hardening_files=cluster.control_plane.files,
                encryption_key=cluster.control_plane.encryption_key)),
            logging=command.remote.Logging.STDERR,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[first.ready, version_pin],
                                        ignore_changes=["create", "connection"]),
        )
        # The kubelet-config ConfigMap follows the stack (serverTLSBootstrap for `resourceMetrics`, the hardening) before any
        # node joins, so a node always joins with the stack's settings; nodes that joined before are moved in waves by
        # components/cluster/kubelet_config.py. A new cluster's init already uploaded it: the step then changes nothing.
        sync = bash_command(render_kubelet_config_sync(cluster.kubelet))
        kubelet_config = command.remote.Command(
            f"{name}-kubelet-config",
            connection=first.connection,
            create=sync,
            update=sync,
            logging=command.remote.Logging.STDOUT_AND_STDERR,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.init]),
        )
        self.access = access = ControlPlaneAccess(connection=first.connection, init=self.init,
                                                  kubeadm_api=cluster.params.kubeadm_api,
                                                  etcd_pod=kubeadm.etcd_pod(first.node.name), kubelet_config=kubelet_config)

        # When each node is Ready; the first control-plane node has no join, so its wait stands alone
        # (and has no drain: removing it means destroying the cluster).
        self.node_ready: dict[str, pulumi.Resource] = {
            first.node.name: command.remote.Command(
                f"{name}-{first.node.name}-ready",
                connection=first.connection,
                create=bash_command(node_steps.render_wait_for_node(first.node.name)),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.init]),
            )
        }
        self._joins(name, cluster, machines, other_control_plane, access)

        self.node_ready.update({join.node_name: join.drain for join in self.joins})
        renewal = certificate_renewal(name, cluster, [first, *other_control_plane], self.node_ready, self)
        # The renewal round restarts every control-plane component: nothing else restarts one in the same run before
        # it has finished (components/cluster/control_plane.py waits for it).
        self.certificate_renewal: list[pulumi.Resource] = list(renewal)
        self._kubernetes_provider(name, cluster, first, renewal)
        self.register_outputs({"api_server": self.api_server, "kubeconfig": self.kubeconfig})

    def _joins(self, name: str, cluster: ClusterPlan, machines: Machines, other_control_plane: Sequence[ProxmoxLinuxNode],
               access: ControlPlaneAccess) -> None:
        """The other control-plane nodes' joins, one after another, then the Linux workers' in their session lanes."""
        self.joins: list[LinuxNodeJoin] = []
        previous_control_plane: list[pulumi.Resource] = []
        for machine in other_control_plane:
            join = LinuxNodeJoin(f"{name}-{machine.node.name}", cluster, machine, access, control_plane=True,
                                 after=previous_control_plane, opts=pulumi.ResourceOptions(parent=self))
            previous_control_plane = [join.join]
            self.joins.append(join)
        # The workers' join credentials and readiness waits run on the first control-plane node in lanes, so it
        # never starts more SSH sessions at once than sshd admits (provisioning.controlPlaneSessions).
        self.session_lane_of = cluster.session_lanes
        self.session_steps: dict[str, SessionLane] = {}
        for machine in machines.linux_nodes:
            if machine.role == "worker":
                before = self.session_lane_of[machine.node.name]
                join = LinuxNodeJoin(f"{name}-{machine.node.name}", cluster, machine, access, control_plane=False,
                                     lane=self.session_steps.get(before) if before else None,
                                     opts=pulumi.ResourceOptions(parent=self))
                self.session_steps[machine.node.name] = SessionLane(credentials=(join.credentials,), ready=(join.drain,))
                self.joins.append(join)

    def _kubernetes_provider(self, name: str, cluster: ClusterPlan, first: ProxmoxLinuxNode, renewal: Sequence[pulumi.Resource]) -> None:
        """The Kubernetes provider, on a credential of its own read from the first control-plane node, and the revocation
        of every other such credential once it has moved."""
        # The Kubernetes provider's own credential (render/scripts/provider-credential.sh), not admin.conf: kubeadm
        # renews admin.conf in every renewal round and upgrade, and a credential read again is unknown in that preview,
        # where the engine then cannot diff a single Kubernetes object (DiffUnavailable). This one changes only with
        # cluster.providerCredential: a new label replaces the step, the provider moves to the new credential, and
        # the revocation step below takes the old one back. Any other change of the step (a rotated SSH key, a bastion,
        # a new script, its logging) is ignored: pulumi-command's update would run the script again and issue a new
        # certificate for the same user in place, leaving the old one bound. It has no delete, so it never dials with
        # the connection it keeps. (`--replace` of it does the same: rotate with a new label, never that way.)
        label = cluster.provider_credential
        read = command.remote.Command(
            f"{name}-kubeconfig",
            connection=first.connection,
            create=bash_command(linux_bootstrap.render_provider_credential(label)),
            logging=command.remote.Logging.STDERR,
            triggers=[self.init.id, label],
            # Its previous stdout (the credential) must never travel to sshd as PULUMI_COMMAND_STDOUT.
            add_previous_output_in_env=False,
            # After a renewal round: no Kubernetes object is applied while control-plane components restart.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.init, *renewal],
                                        additional_secret_outputs=SECRET_STDOUT,
                                        ignore_changes=[i for i in COMMAND_INPUTS if i != "triggers"]),
        )
        self.provider_credential_expiry: pulumi.Output[str] = pulumi.Output.unsecret(
            read.stdout.apply(linux_bootstrap.provider_credential_expiry))
        self.api_server = f"https://{cluster.api_endpoint}"
        self.kubeconfig: pulumi.Output[str] = pulumi.Output.secret(read.stdout.apply(lambda text: point_at_server(text, self.api_server)))
        # With clusterIdentifier set and unchanged, pulumi-kubernetes replaces the provider only when it
        # changes: "the provider will _only_ be replaced when clusterIdentifier changes; all other changes to
        # provider configuration will be treated as updates" (provider schema; DiffConfig in
        # provider/pkg/provider/provider.go clears its replacements). Without it, a kubeconfig still unknown
        # in a preview (a renewal round) replaces the provider and, through it, every Kubernetes resource.
        # The cluster's name is its identity: it never changes for the life of the stack.
        self.provider = kubernetes.Provider(f"{name}-kubernetes", kubeconfig=self.kubeconfig,
                                            cluster_identifier=cluster.name,
                                            opts=pulumi.ResourceOptions(parent=self))
        # Every other provider credential's binding deleted, once the provider has moved to this one (it depends on
        # the provider); again with each new credential. What it keeps is read from the credential the provider holds,
        # not from the configuration, so a run that leaves the credential step out (`--exclude`, `--target`) never
        # revokes the provider's own. It runs with the current connection (an update runs it again: nothing left to
        # delete), so a rotated SSH key or a bastion never leaves it dialling with an old one.
        holder = pulumi.Output.unsecret(read.stdout.apply(linux_bootstrap.provider_credential_user))
        revoke = holder.apply(lambda user: bash_command(linux_bootstrap.render_provider_credential_revoke(user)))
        command.remote.Command(
            f"{name}-kubeconfig-revoke-others",
            connection=first.connection,
            create=revoke,
            update=revoke,
            logging=command.remote.Logging.STDOUT_AND_STDERR,
            triggers=[read.id],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.provider]),
        )


class WindowsJoins(pulumi.ComponentResource):
    """Every Windows node's join, in parallel, each after the cluster network's Windows prerequisites."""

    def __init__(self, name: str, cluster: ClusterPlan, machines: Machines, access: ControlPlaneAccess,
                 after: Sequence[pulumi.Resource] = (), lanes: Mapping[str, str | None] | None = None,
                 lane_steps: Mapping[str, SessionLane] | None = None, opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:bootstrap:WindowsJoins", name, None, opts)
        # The session lanes continue from the Linux workers' (KubeadmCluster.session_lane_of and session_steps).
        steps: dict[str, SessionLane] = dict(lane_steps or {})
        self.joins = []
        for machine in machines.windows_nodes:
            before = (lanes or {}).get(machine.node.name)
            join = WindowsNodeJoin(f"{name}-{machine.node.name}", cluster, machine, access, after=after,
                                   lane=steps.get(before) if before else None, opts=pulumi.ResourceOptions(parent=self))
            steps[machine.node.name] = SessionLane(credentials=(join.credentials,), ready=(join.drain,))
            self.joins.append(join)
        self.node_ready: dict[str, pulumi.Resource] = {join.node_name: join.drain for join in self.joins}
        self.register_outputs({"nodes": [j.node_name for j in self.joins]})
