"""The machines layer: Linux node VMs on Proxmox VE, Windows node VMs on Hyper-V, and the host settings
they need. Its output is a set of booted, addressed machines ready for kubeadm.

Every node is declared independently of every other, so all machines are created in parallel.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypedDict

import pulumi
import pulumi_command as command
import pulumi_proxmoxve as proxmoxve
import pulumi_tls as tls

from config.secrets import Secrets, present
from plan.cluster import Bastion, HypervHostPlan, LinuxNodePlan, MachinesPlan, SshHost, WindowsNodePlan
from render import hyperv, windows_activation
from render.host_keys import (
    HostKeyPair,
    pinned_key_of_user_data,
    public_line,
    render_install_host_key,
    render_snippet_private,
)
from render.linux_node import render_authorized_keys, render_prepare_script, render_user_data
from render.maintenance import render_vm_destroy
from render.readiness import render_wait_for_cloud_init
from render.shell import bash_command

from ..guards import machine_reservations
from .connections import ssh_connection
from .lifecycle import command_options


def first_mac(devices: Sequence[object] | None) -> str:
    """The MAC address of a VM's first NIC, from its configuration (`network_devices[0].mac_address`)."""
    mac = getattr(devices[0], "mac_address", None) if devices else None
    if not mac:
        raise ValueError("the VM's configuration has no MAC address for its first network device")
    return mac.lower()


class BastionArgs(TypedDict):
    """ssh_connection's bastion keywords, the same for every connection of the stack."""
    bastion: Bastion | None
    bastion_private_key: pulumi.Output[str] | None


def _pinned_connection(host: str, user: str, private_key: pulumi.Output[str] | None, bastion: BastionArgs,
                       host_key: pulumi.Input[str | None]) -> command.remote.ConnectionArgs:
    return ssh_connection(host, user, host_key=host_key, private_key=private_key, **bastion)


@dataclass(frozen=True)
class LinuxNodeArgs:
    node: LinuxNodePlan
    # The node's SSH connection, given the host key it is pinned to (None: trusting the node once).
    connect: Callable[[pulumi.Input[str | None]], command.remote.ConnectionArgs]
    # The connection to the Proxmox node that stores the node's snippet.
    proxmox_connection: command.remote.ConnectionArgs
    provider: proxmoxve.Provider
    # Resources that must accept the change before any machine is touched (the Kubernetes version pin).
    guards: tuple[pulumi.Resource, ...] = ()
    # The VM this one waits for on its Proxmox node (provisioning.clonesPerProxmoxNode lanes), if any.
    after: tuple[pulumi.Resource, ...] = ()


class ProxmoxLinuxNode(pulumi.ComponentResource):
    """One Linux node: its SSH host key (made here, given at first boot, pinned by every connection to it), its
    cloud-init snippet, the VM cloned from its distro's template, and the wait until cloud-init has prepared it for
    kubeadm."""

    def __init__(self, name: str, args: LinuxNodeArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:machines:ProxmoxLinuxNode", name, None, opts)
        node = args.node
        self.node, self.role = node, node.role
        init, vm = node.init, node.vm

        # The node's SSH host key, made by the program (ed25519; the private half a secret in the state) and given to
        # the node in its first boot's cloud-init `ssh_keys`, so that even the first connection to a new VM is pinned.
        self.host_key_pair = tls.PrivateKey(f"{name}-host-key", algorithm="ED25519",
                                            opts=pulumi.ResourceOptions(parent=self))
        public = pulumi.Output.unsecret(self.host_key_pair.public_key_openssh.apply(public_line))
        private = self.host_key_pair.private_key_openssh
        render_user_data(init)   # the rendering's checks, now: the key's rendering below waits for the key
        user_data = pulumi.Output.all(private, public).apply(lambda keys: render_user_data(init, HostKeyPair(*keys)))

        # First boot only: cloud-init runs once per instance, and both the snippet's content and the VM's
        # reference to it force replacement in the provider, so a later change to what the snippet holds
        # (mirrors, NTP, pins) must not reach existing nodes through it: ignore_changes keeps it as
        # created. New nodes get the current rendering; existing ones are converged by the layers above.
        self.user_data = proxmoxve.FileLegacy(
            f"{name}-user-data",
            content_type="snippets",
            datastore_id=vm.snippets,
            node_name=vm.proxmox_node,
            source_raw=proxmoxve.FileLegacySourceRawArgs(
                data=user_data,
                file_name=vm.snippet_file,
            ),
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, delete_before_replace=True,
                                        ignore_changes=["sourceRaw"], depends_on=[*args.guards, *args.after]),
        )

        self.vm = self._clone(name, args)
        if node.lost:
            # Deleted before the VM leaves the state (it depends on it): destroys the VM on its Proxmox node if it
            # still exists, and succeeds if it is gone (render/scripts/vm-destroy.sh). Nothing runs on create.
            command.remote.Command(
                f"{name}-vm-destroy",
                connection=args.proxmox_connection,
                delete=bash_command(render_vm_destroy(vm.vm_id, node.name)),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.vm]),
            )

        # This VM instance: the MAC Proxmox gave its first NIC when it cloned it, as the VM's configuration
        # holds it. The VM's own id is its VMID (bpg vmCreateClone: `d.SetId(strconv.Itoa(vmID))`), the same for
        # every instance, so every per-node step is keyed on this instead: a VM lost and re-created, or
        # replaced, is a new instance whose steps run again. Not `mac_addresses`: with the QEMU agent on, the
        # provider fills that from the guest's interfaces, loopback (00:00:00:00:00:00) first
        # (vm/network/network.go ReadNetworkValues). tools/mock/providers.py has the provider facts.
        self.instance: pulumi.Output[str] = self.vm.network_devices.apply(first_mac)
        self._converge(name, args, public, private)
        self.summary = node.summary
        self.register_outputs({"summary": self.summary, "vm_id": self.vm.vm_id, "ready": self.ready.stdout})

    def _clone(self, name: str, args: LinuxNodeArgs) -> proxmoxve.VmLegacy:
        """The VM, cloned from its distro's template on its Proxmox node, booting with its snippet."""
        node, vm = args.node, args.node.vm
        return proxmoxve.VmLegacy(
            f"{name}-vm",
            name=node.name,
            node_name=vm.proxmox_node,
            vm_id=vm.vm_id,
            description=vm.description,
            tags=vm.tags,
            clone=proxmoxve.VmLegacyCloneArgs(
                vm_id=vm.template_vm_id,
                node_name=vm.template_node,
                datastore_id=vm.vm_disks,
                full=True,
                # Every node of a distro clones the same template at once. The provider re-issues a
                # clone that Proxmox failed: "Sometimes Proxmox errors with timeout when creating
                # multiple clones at once" (bpg/terraform-provider-proxmox docs, virtual_environment_vm
                # clone.retries). That is all it does: no locking or queueing of its own.
                retries=3,
            ),
            cpu=proxmoxve.VmLegacyCpuArgs(cores=vm.cpu, sockets=1, type=vm.cpu_type),
            # No ballooning: the kubelet sizes allocatable memory once, at start.
            memory=proxmoxve.VmLegacyMemoryArgs(dedicated=vm.memory_mb, floating=0),
            scsi_hardware="virtio-scsi-single",
            disks=[
                proxmoxve.VmLegacyDiskArgs(
                    interface="scsi0", datastore_id=vm.vm_disks, size=vm.disk_gb,
                    discard="on", iothread=True, ssd=True,
                )
            ],
            network_devices=[
                # The node network's NIC takes a jumbo-frame underlay's MTU (virtio tells the guest; Proxmox VE 8
                # leaves an unset one at 1500, VE 9 takes the bridge's; Proxmox refuses to start a VM whose NIC MTU
                # exceeds its bridge's, qemu-server print_netdevice_full); unset at 1500, as before. At creation only:
                # ignore_changes below.
                proxmoxve.VmLegacyNetworkDeviceArgs(bridge=nic.bridge, model="virtio", vlan_id=nic.vlan_id, mtu=nic.mtu)
                for nic in vm.nics
            ],
            agent=proxmoxve.VmLegacyAgentArgs(enabled=True),
            operating_system=proxmoxve.VmLegacyOperatingSystemArgs(type="l26"),
            initialization=proxmoxve.VmLegacyInitializationArgs(
                datastore_id=vm.cloud_init,
                ip_configs=[
                    proxmoxve.VmLegacyInitializationIpConfigArgs(
                        ipv4=proxmoxve.VmLegacyInitializationIpConfigIpv4Args(address=nic.address, gateway=nic.gateway))
                    for nic in vm.nics
                ],
                dns=proxmoxve.VmLegacyInitializationDnsArgs(servers=vm.dns_servers, domain=vm.search_domain),
                user_data_file_id=self.user_data.id,
            ),
            on_boot=True,
            started=True,
            # Never let the provider reboot a member to apply a change ("If `false`, updates that require
            # taking the VM offline fail instead of being applied automatically", bpg provider's
            # reboot_after_update, pulumi_proxmoxve VmLegacy docs; the default is true): several VMs
            # updated in one `pulumi up` would reboot at once, control-plane nodes included.
            reboot_after_update=False,
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                # Losing a control-plane VM loses an etcd member: removing one is a deliberate act, prepared
                # by `retire` (or `lost`) in the run before (docs/lifecycle.md: Remove a node).
                protect=node.protected,
                # Its id and name are fixed, so a replacement must remove the old VM first.
                delete_before_replace=True,
                # A new template is for new nodes; it must not rebuild existing ones. A new MTU likewise: Proxmox
                # re-plugs a running VM's NIC to change it (qemu-server vmconfig_update_net, network hotplug on by
                # default), every VM at once with no drain.
                ignore_changes=["clone", "networkDevices[0].mtu"],
                # A lost node's VM leaves the state without the provider's delete, which fails for a VM that no
                # longer exists (it reads the VM's status first: tools/mock/providers.py); its destroy step below removes
                # the VM if it is still there.
                retain_on_delete=node.lost,
                depends_on=[*args.guards, *args.after],
            ),
        )

    def _converge(self, name: str, args: LinuxNodeArgs, public: pulumi.Output[str],
                  private: pulumi.Output[str]) -> None:
        """The steps over SSH once the VM runs: its snippet made private, its host key, the wait for its first
        boot, its preparation and its admin user's keys."""
        node, init = args.node, args.node.init
        # The snippet holds the private host key: root only on the Proxmox node (the provider's SFTP upload leaves it
        # 0644). Again with each instance and each new key, which is when a rebuild uploads the snippet anew.
        self.snippet_private = command.remote.Command(
            f"{name}-user-data-private",
            connection=args.proxmox_connection,
            create=self.user_data.id.apply(lambda volume: bash_command(render_snippet_private(volume))),
            triggers=[self.instance, public],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.user_data, self.vm]),
        )
        # The key the node presents: the one its snippet gave it, or, for a node whose snippet predates the key (made
        # by an earlier release: cloud-init generated keys of its own), the program's key written in place over a
        # connection that trusts the node once (render/scripts/node-host-key.sh; docs/security.md, "Host keys"). Again
        # for each new instance and each new key; nothing else runs it again (a credential change would otherwise dial
        # an adopted node unpinned once more). Every other connection to the node pins the key, after this step.
        self.host_key: pulumi.Output[str]
        if node.lost:
            self.host_key = public
        else:
            # The snippet's content as the state holds it (ignore_changes keeps what it was created with; the provider's
            # read never sets it: bpg proxmoxtf/resource/file.go fileRead, v0.111.1).
            booted_with = pulumi.Output.unsecret(self.user_data.source_raw.apply(
                lambda raw: pinned_key_of_user_data(raw.data) if raw is not None and raw.data else None))
            key_material: pulumi.Output[str] = pulumi.Output.secret(
                pulumi.Output.all(private, public).apply(lambda keys: f"{keys[0]}{keys[1]}\n"))
            install = command.remote.Command(
                f"{name}-host-key-install",
                connection=args.connect(booted_with),
                create=bash_command(render_install_host_key()),
                stdin=key_material,
                triggers=[self.instance, public],
                opts=command_options(node, parent=self, depends_on=[self.vm], delete_before_replace=True,
                                     ignore_changes=["connection", "create"]),
            )
            self.host_key = pulumi.Output.all(public, install.id).apply(lambda values: values[0])
        self.connection = args.connect(self.host_key)
        first_boot = command.remote.Command(
            f"{name}-cloud-init",
            connection=self.connection,
            create=bash_command(render_wait_for_cloud_init()),
            triggers=[self.instance],
            opts=command_options(node, parent=self, depends_on=[self.vm], delete_before_replace=True),
        )
        # The node's preparation over SSH. Created (for each instance) with the stack's current settings and
        # Kubernetes version: the first-boot snippet keeps what it was created with, so a VM re-created
        # later booted an older preparation, which this brings to today's. Afterwards, the same idempotent
        # script without the Kubernetes packages is the update: the way a later change (mirrors, NTP)
        # reaches this node, and only this node's script re-runs; the upgrade chain moves the version, so a
        # version change leaves this step alone (`create` is ignored on update, never on a replacement:
        # tools/mock/engine.py).
        self.ready = command.remote.Command(
            f"{name}-prepare",
            connection=self.connection,
            create=bash_command(render_prepare_script(init)),
            update=bash_command(render_prepare_script(init, install_kubernetes=False)),
            triggers=[self.instance],
            opts=command_options(node, parent=self, depends_on=[first_boot], delete_before_replace=True,
                                 ignore_changes=["create"]),
        )

        # The admin user's SSH keys, kept equal to access.sshPublicKeys: the first step of rotating the node
        # key (add the new public key, switch nodeSshPrivateKey, remove the old one) reaches only these.
        keys = bash_command(render_authorized_keys(init))
        self.authorized_keys = command.remote.Command(
            f"{name}-authorized-keys",
            connection=self.connection,
            create=keys,
            update=keys,
            triggers=[self.instance],
            logging=command.remote.Logging.STDOUT_AND_STDERR,
            opts=command_options(node, parent=self, depends_on=[first_boot], delete_before_replace=True),
        )


class HypervHost(pulumi.ComponentResource):
    """Settings on one Hyper-V host that its Windows node VMs rely on."""

    def __init__(self, name: str, host: HypervHostPlan, connection: command.remote.ConnectionArgs,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:machines:HypervHost", name, None, opts)
        self.host_name = host.ssh.name
        # The tool that gives a new node's disk its own password before its first boot (render/hyperv.py): every VM
        # converge on this host checks and runs it.
        install_tool = hyperv.ssh_command(hyperv.render_host_tool_install())
        self.prerequisites: list[pulumi.Resource] = [command.remote.Command(
            f"{name}-first-boot-tool",
            connection=connection,
            create=install_tool,
            update=install_tool,
            delete=hyperv.ssh_command(hyperv.render_host_tool_remove()),
            opts=pulumi.ResourceOptions(parent=self),
        )]
        if host.disable_lso:
            offload = hyperv.HostNicOffload(adapter_names=host.offload_adapters)
            self.prerequisites.append(command.remote.Command(
                f"{name}-nic-offload",
                connection=connection,
                create=hyperv.ssh_command(hyperv.render_offload_disable(offload)),
                delete=hyperv.ssh_command(hyperv.render_offload_restore(offload)),
                opts=pulumi.ResourceOptions(parent=self),
            ))
        self.register_outputs({"address": host.ssh.address, "lso_disabled": host.disable_lso})


class HypervWindowsNode(pulumi.ComponentResource):
    """One Windows node VM on its Hyper-V host, converged by PowerShell over SSH."""

    def __init__(self, name: str, node: WindowsNodePlan, host: HypervHost,
                 connection: command.remote.ConnectionArgs, password_secret: pulumi.Output[str],
                 guards: tuple[pulumi.Resource, ...] = (), previous_secret: pulumi.Output[str] | None = None,
                 after: tuple[pulumi.Resource, ...] = (), opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:machines:HypervWindowsNode", name, None, opts)
        summary, vm, activation = node.summary, node.vm, node.activation
        version = node.admin_password_version
        # This node's own password (render/hyperv.py node_admin_password). Later layers reach the guest the same way:
        # PowerShell Direct from its host with it, which every guest step reads as its stdin line 1.
        admin_password: pulumi.Output[str] = pulumi.Output.secret(password_secret.apply(
            lambda secret: hyperv.node_admin_password(secret, node.name, version)))
        self.node, self.host_connection, self.admin_password = node, connection, admin_password
        self.password_line: pulumi.Output[str] = admin_password.apply(lambda password: f"{password}\n")

        def candidates(secrets: list[str]) -> str:
            """The node's password, then those a running guest may still have: its previous version's and, during a
            rotation of windowsAdminPassword, those derived from the previous secret and the previous secret itself
            (the one password nodes made by earlier releases all have: their upgrade is such a rotation, since their
            golden images hold it). The current secret itself never leaves the machine that runs Pulumi."""
            secret, previous = secrets
            earlier = [hyperv.node_admin_password(secret, node.name, version - 1)] if version > 1 else []
            if previous:
                earlier += [*(hyperv.node_admin_password(previous, node.name, v) for v in (version, version - 1)
                              if v >= 1), previous]
            return hyperv.guest_passwords(hyperv.node_admin_password(secret, node.name, version), earlier)
        # Before anything signs in to the guest: a guest still at an earlier password gets the node's. It runs again
        # only when the passwords change.
        # Typed here: mypy infers Output.secret's type argument only with an expected type (Command's __init__ is overloaded).
        passwords: pulumi.Output[str] = pulumi.Output.secret(
            pulumi.Output.all(password_secret, previous_secret or "").apply(candidates))
        password = command.remote.Command(
            f"{name}-guest-password",
            connection=connection,
            create=hyperv.ssh_command(hyperv.render_guest_password(vm)),
            update=hyperv.ssh_command(hyperv.render_guest_password(vm)),
            stdin=passwords,
            logging=command.remote.Logging.STDOUT_AND_STDERR,
            opts=command_options(node, parent=self, depends_on=[*host.prerequisites, *guards]),
        )
        converge = hyperv.ssh_command(hyperv.render_create(vm))
        self.vm = command.remote.Command(
            f"{name}-vm",
            connection=connection,
            create=converge,
            # Size, switch or VLAN changes converge the existing VM; a new name, computer name or host replaces it.
            update=converge,
            delete=hyperv.ssh_command(hyperv.render_delete(vm)),
            # The guest password reaches the script on standard input only.
            stdin=admin_password,
            # A new computer name is a new node: renaming a joined Windows node would orphan its Node
            # object and kubelet identity, so the VM is replaced (drained and reset first) instead.
            triggers=[summary["name"], vm.vm_folder, host.host_name, vm.computer_name],
            # The same VM name and address: the old VM must be gone before its replacement starts. A lost
            # node's converge is frozen, but its delete still removes the VM from its (reachable) host.
            # `after`: the VM this one waits for on its host (provisioning.copiesPerHypervHost lanes).
            opts=command_options(node, retain=False, parent=self,
                                 depends_on=[*host.prerequisites, *guards, password, *after], delete_before_replace=True),
        )
        # Activation (windows.activation) is its own step after the VM converge: changing it re-runs only
        # this step, and a replaced VM (new id) is activated again.
        self.ready: pulumi.Resource = self.vm
        if activation is not None:
            activate = hyperv.ssh_command(windows_activation.render_activation(activation))
            self.ready = command.remote.Command(
                f"{name}-activation",
                connection=connection,
                create=activate,
                update=activate,
                stdin=admin_password,
                triggers=[self.vm.id],
                opts=command_options(node, parent=self, depends_on=[self.vm], delete_before_replace=True),
            )
        # This VM instance: the converge command's id, new with every create (pulumi-command assigns
        # NewUniqueHex(name, 8, 0)), so a replaced VM re-runs every step keyed on it.
        self.instance: pulumi.Output[str] = self.vm.id
        self.summary = summary
        self.register_outputs({"summary": summary, "converged": self.vm.stdout, "ready": self.ready.id})


class Machines(pulumi.ComponentResource):
    """All machines of the cluster, with the Proxmox provider they are created through."""

    def __init__(self, name: str, plan: MachinesPlan, secrets: Secrets, guards: tuple[pulumi.Resource, ...] = (),
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:machines:Machines", name, None, opts)
        self.provider = proxmoxve.Provider(
            f"{name}-proxmox",
            endpoint=plan.proxmox_endpoint,
            insecure=plan.proxmox_insecure,
            api_token=secrets.proxmox_api_token,
            # Snippet uploads go over SSH to the node that stores them.
            ssh=proxmoxve.ProviderSshArgs(
                username=plan.proxmox_ssh_user,
                private_key=secrets.proxmox_ssh_private_key,
                nodes=[proxmoxve.ProviderSshNodeArgs(name=n.name, address=n.address) for n in plan.proxmox_nodes],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        bastion = BastionArgs(bastion=plan.bastion, bastion_private_key=secrets.bastion_ssh_private_key)

        def connect(host: SshHost, private_key: pulumi.Output[str] | None,
                    password: pulumi.Output[str] | None = None) -> command.remote.ConnectionArgs:
            return ssh_connection(host.address, host.user, port=host.port, host_key=host.host_key,
                                  private_key=private_key, password=password, **bastion)
        # The same SSH user and key as the provider's snippet uploads; the reboot chain runs `qm` with them.
        self.proxmox_connections = {n.name: connect(n, secrets.proxmox_ssh_private_key) for n in plan.proxmox_nodes}

        # Each node's VM id and address stay reserved until its machine is deleted (components/guards.py).
        reserved = machine_reservations(plan, self)
        created: dict[str, ProxmoxLinuxNode] = {}
        for node in plan.linux:
            before = plan.clone_after.get(node.name)
            created[node.name] = ProxmoxLinuxNode(
                f"{name}-{node.name}",
                LinuxNodeArgs(
                    node=node,
                    connect=functools.partial(_pinned_connection, node.ip, plan.admin_user,
                                              secrets.node_ssh_private_key, bastion),
                    proxmox_connection=self.proxmox_connections[node.vm.proxmox_node],
                    provider=self.provider, guards=(*guards, *reserved[node.name]),
                    after=(created[before].vm,) if before is not None else (),
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.linux_nodes = list(created.values())

        host_connections = {host.ssh.name: connect(host.ssh, secrets.hyperv_ssh_private_key, secrets.hyperv_ssh_password)
                            for host in plan.hyperv_hosts}
        self.hyperv_hosts = {
            host.ssh.name: HypervHost(f"{name}-{host.ssh.name}", host, host_connections[host.ssh.name],
                                      opts=pulumi.ResourceOptions(parent=self))
            for host in plan.hyperv_hosts
        }
        windows_created: dict[str, HypervWindowsNode] = {}
        for windows_node in plan.windows:
            before = plan.copy_after.get(windows_node.name)
            windows_created[windows_node.name] = HypervWindowsNode(
                f"{name}-{windows_node.name}",
                windows_node,
                self.hyperv_hosts[windows_node.hyperv_host],
                host_connections[windows_node.hyperv_host],
                present(secrets.windows_admin_password, "windowsAdminPassword"),
                guards=(*guards, *reserved[windows_node.name]),
                previous_secret=secrets.windows_admin_password_previous,
                after=(windows_created[before].vm,) if before is not None else (),
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.windows_nodes = list(windows_created.values())
        machines: list[ProxmoxLinuxNode | HypervWindowsNode] = [*self.linux_nodes, *self.windows_nodes]
        self.nodes = [n.summary for n in machines]
        self.instances: dict[str, pulumi.Output[str]] = {n.node.name: n.instance for n in machines}
        self.register_outputs({"nodes": self.nodes})


@dataclass(frozen=True)
class NodeStep:
    """How a step runs on a node's own operating system: a bash script over SSH on a Linux node; a PowerShell script on
    a Windows node's Hyper-V host, which reaches the guest by PowerShell Direct with the guest password on stdin."""
    encode: Callable[[str], str]
    connection: command.remote.ConnectionArgs
    stdin: pulumi.Output[str] | None


def node_step(machine: ProxmoxLinuxNode | HypervWindowsNode) -> NodeStep:
    if isinstance(machine, ProxmoxLinuxNode):
        return NodeStep(bash_command, machine.connection, None)
    return NodeStep(hyperv.ssh_command, machine.host_connection, machine.password_line)
