"""Input that loads but breaks at `pulumi up` or after (#39 item 7): each is refused or warned about at its key path,
with the fix; a secret's format is checked when the program reads it, before anything uses it, and the message never
holds its value."""
from __future__ import annotations

import base64
import dataclasses
import shutil
import subprocess

import pytest

from config.loader import load
from config.secret_keys import SECRETS, format_problem
from tests.conftest import hk_prod_values, problems, raw_config
from tools.mock.program import placeholder, run_program
from vocab.checks import PLACEHOLDER_SSH_KEY


def refused(mutate) -> list[str]:
    values = hk_prod_values()
    mutate(values)
    return problems(values)


def test_a_service_range_wider_than_kubeadm_accepts_is_refused():
    def wide(values):
        values["cluster"]["serviceCidr"] = "10.96.0.0/11"
    assert any(p.startswith("cluster.serviceCidr: /11 is larger than kubeadm accepts (at most /12") for p in refused(wide))


@pytest.mark.parametrize("key, index, value, inside", [
    ("dns", 0, "10.96.0.10", "cluster.serviceCidr"), ("ntp", 0, "10.244.1.1", "cluster.podCidr")])
def test_dns_and_ntp_servers_inside_the_cluster_ranges_are_refused(key, index, value, inside):
    def put(values):
        if key == "dns":
            values["network"]["dnsServers"][index] = value
        else:
            values["ntpServers"][index] = value
    path = f"network.dnsServers[{index}]" if key == "dns" else f"ntpServers[{index}]"
    assert any(p.startswith(f"{path}: {value} is inside {inside}") for p in refused(put))


@pytest.mark.parametrize("node_ports, listed", [("6000-7000", "6443 (the API server)"),
                                                ("10000-11000", "10250 (kubelet)"), ("1-1000", "22 (sshd)")])
def test_a_node_port_range_around_the_nodes_own_ports_is_refused(node_ports, listed):
    def put(values):
        values["cluster"]["nodePortRange"] = node_ports
        values["windows"]["dynamicPortStart"] = 33000
    found = [p for p in refused(put) if p.startswith("cluster.nodePortRange:")]
    assert len(found) == 1 and listed in found[0]


def test_a_cron_expression_for_the_etcd_snapshot_timer_is_refused_and_systemd_agrees():
    cron, calendar = "0 2 * * *", "*-*-* 00/6:00:00"

    def put(values):
        values["etcdBackup"]["schedule"] = cron
    assert any(p.startswith("etcdBackup.schedule: '0 2 * * *' is a cron expression") for p in refused(put))
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed: the calendar expressions were not checked by systemd")
    # The real parser: the cron expression is not an OnCalendar expression, the default and the suggestions are.
    assert subprocess.run(["systemd-analyze", "calendar", cron], capture_output=True).returncode != 0
    for good in (calendar, "*-*-* 02:00:00", hk_prod_values()["etcdBackup"]["schedule"]):
        assert subprocess.run(["systemd-analyze", "calendar", good], capture_output=True).returncode == 0, good


def test_hyper_vs_default_switch_and_an_iso_for_a_golden_vhdx_are_refused():
    def put(values):
        host = values["hyperv"]["hosts"][0]
        host["switchName"] = "Default Switch"
        host["goldenImages"]["win2022"] = "D:\\iso\\SERVER_EVAL_x64FRE_en-us.iso"
    found = refused(put)
    assert any(p.startswith("hyperv.hosts[0].switchName: Default Switch is Hyper-V's internal NAT switch") for p in found)
    assert any(p.startswith("hyperv.hosts[0].goldenImages.win2022: D:\\iso\\SERVER_EVAL_x64FRE_en-us.iso is an "
                            "installation ISO") for p in found)


def test_the_placeholder_key_tools_init_writes_is_refused():
    def put(values):
        values["access"]["sshPublicKeys"].append(PLACEHOLDER_SSH_KEY)
    index = len(hk_prod_values()["access"]["sshPublicKeys"])
    assert any(p.startswith(f"access.sshPublicKeys[{index}]: is the placeholder tools.init writes") for p in refused(put))


def test_a_windows_kube_proxy_image_not_confirmed_is_warned_about_and_not_without_windows_nodes():
    values = hk_prod_values()
    warnings = [str(w) for w in load(raw_config(values)).warnings]
    assert any(w.startswith("cluster.kubernetesVersion: the Windows kube-proxy image docker.io/sigwindowstools/kube-proxy:"
                            "v1.36.4-calico-hostprocess could not be confirmed") for w in warnings)
    values["nodes"]["windows"] = []
    assert not any("kube-proxy image" in str(w) for w in load(raw_config(values)).warnings)


def _openssh(cipher: bytes) -> str:
    def field(value: bytes) -> bytes:
        return len(value).to_bytes(4, "big") + value
    body = b"openssh-key-v1\0" + field(cipher) + field(b"bcrypt" if cipher != b"none" else b"none") + field(b"")
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{base64.b64encode(body).decode()}\n-----END OPENSSH PRIVATE KEY-----\n"


@pytest.mark.parametrize("kind, value, message", [
    ("proxmox-token", "root@pam!tok", "is not a Proxmox API token USER@REALM!TOKENID=UUID"),
    ("proxmox-token", "root@pam!tok=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n", "has white space around it"),
    ("proxmox-token", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "is not a Proxmox API token"),
    ("ssh-private-key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIKQN0xz5t5mrUBqCIba2ISZ+fvqVp3mvJbSAPrDaapP me@host",
     "is a public key (the .pub file)"),
    ("ssh-private-key", _openssh(b"aes256-ctr"), "is protected by a passphrase"),
    ("ssh-private-key", "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n"
                        "-----END RSA PRIVATE KEY-----\n", "is protected by a passphrase"),
    ("ssh-private-key", "hunter2", "is not an SSH private key"),
    ("password", "", "is empty"), ("password", "  \n", "is empty"),
    ("pem-certificate", "MIIB...", "is not a PEM certificate"),
    ("pem-private-key", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----",
     "is not an unencrypted PEM private key"),
])
def test_secret_formats(kind, value, message):
    assert (format_problem(kind, value) or "").startswith(message)


def test_well_formed_secrets_pass():
    assert format_problem("proxmox-token", "pulumi@pve!hybrid-cluster=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0") is None
    assert format_problem("ssh-private-key", _openssh(b"none")) is None
    assert format_problem("ssh-private-key", "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----") is None
    assert all(format_problem(secret.kind, placeholder(key)) is None for key, secret in SECRETS.items())


def test_a_real_openssh_key_passes_and_its_public_half_does_not(tmp_path):
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "plain")], check=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "a passphrase", "-f", str(tmp_path / "locked")], check=True)
    assert format_problem("ssh-private-key", (tmp_path / "plain").read_text()) is None
    assert format_problem("ssh-private-key", (tmp_path / "plain.pub").read_text()).startswith("is a public key")
    assert format_problem("ssh-private-key", (tmp_path / "locked").read_text()).startswith("is protected by a passphrase")


@pytest.mark.parametrize("key, value", [("proxmoxApiToken", "root@pam!tok"),
                                        ("nodeSshPrivateKey", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 me@host"),
                                        ("windowsAdminPassword", "")])
def test_a_malformed_secret_stops_the_program_naming_the_key_and_never_the_value(key, value):
    with pytest.raises(Exception) as raised:
        run_program(raw_config(hk_prod_values()), secrets={key: value}, preview=True)
    text = str(raised.value)
    assert f"secret {key} " in text and (value == "" or value not in text)


def test_the_time_zone_is_the_stacks_with_utc_by_default_and_checked():
    import yaml

    from plan.nodes import linux_node_init
    from render.linux_node import render_user_data
    values = hk_prod_values()
    spec = load(raw_config(values)).spec
    assert spec.timezone == "Asia/Hong_Kong"
    user_data = yaml.safe_load(render_user_data(linux_node_init(spec, spec.nodes.linux[0])).split("\n", 1)[1])
    assert user_data["timezone"] == "Asia/Hong_Kong"
    del values["timezone"]
    assert load(raw_config(values)).spec.timezone == "Etc/UTC"
    values["timezone"] = "Hong Kong"
    assert any(p.startswith("timezone: must be an IANA time zone name") for p in problems(values))
    values["timezone"] = "Asia/Atlantis"
    assert any(p.startswith("timezone: must be an IANA time zone name") for p in problems(values))


def test_a_changed_time_zone_is_set_on_existing_nodes_and_an_unchanged_one_left(tmp_path):
    import os

    from plan.nodes import linux_node_init
    from render.linux_node import render_prepare_script
    from tests.render.test_linux_node import run_sourced
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "timedatectl").write_text('#!/bin/sh\necho "$@" >> "$T/timedatectl.log"\n')
    (stub / "timedatectl").chmod(0o755)
    current = os.path.realpath("/etc/localtime")
    zones = "/usr/share/zoneinfo/"
    spec = load(raw_config(hk_prod_values())).spec
    for zone in ("Asia/Hong_Kong", "Europe/Berlin"):
        if current == os.path.realpath(zones + zone):
            continue
        node = dataclasses.replace(linux_node_init(spec, spec.nodes.linux[0]), timezone=zone)
        run_sourced(render_prepare_script(node), tmp_path, f'PATH="{stub}:$PATH"; configure_timezone')
        assert (tmp_path / "timedatectl.log").read_text().splitlines()[-1] == f"set-timezone {zone}"
    if current.startswith(zones):
        (tmp_path / "timedatectl.log").unlink(missing_ok=True)
        node = dataclasses.replace(linux_node_init(spec, spec.nodes.linux[0]), timezone=current[len(zones):])
        run_sourced(render_prepare_script(node), tmp_path, f'PATH="{stub}:$PATH"; configure_timezone')
        assert not (tmp_path / "timedatectl.log").exists()


def test_prometheus_keeps_its_metrics_on_a_longhorn_volume_when_the_stack_has_longhorn():
    """#39 item 6: 15 days of metrics on an emptyDir although the stack has block storage. The values' shape is the
    chart's documented storageSpec (values.yaml "Using PersistentVolumeClaim"); no Prometheus CRD schema is vendored
    to check it against."""
    recording = run_program(raw_config(hk_prod_values()))
    stack = recording.named("hk-prod-observability-kube-prometheus-stack")
    claim = stack.inputs["values"]["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim == {"storageClassName": "longhorn", "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "50Gi"}}}
    assert recording.named("hk-prod-storage-storageclass-longhorn").urn in recording.waits_for(stack.urn)
    values = hk_prod_values()
    del values["storage"]["longhorn"]
    values["storage"]["defaultClass"] = "nfs-files"
    loaded = load(raw_config(values))
    assert any(w.path == "observability.metrics" and "emptyDir" in w.message for w in loaded.warnings)
    spec = run_program(raw_config(values)).named("hk-prod-observability-kube-prometheus-stack").inputs["values"]
    assert "storageSpec" not in spec["prometheus"]["prometheusSpec"]


def test_review_findings_on_input_checks():
    """A token whose user is an e-mail address (Proxmox allows '@' in the user part); cron forms with names and six
    fields; a NodePort range over Calico's VXLAN port or Linux's ephemeral ports."""
    assert format_problem("proxmox-token", "alice@example.com@oidc!pulumi=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0") is None
    for cron in ("0 2 * * MON-FRI", "0 0 2 * * *", "*/15 * * * *"):
        def put(values, cron=cron):
            values["etcdBackup"]["schedule"] = cron
        assert any(p.startswith("etcdBackup.schedule:") and "is a cron expression" in p for p in refused(put)), cron
    for calendar in ("Mon..Fri *-*-* 02:00:00", "daily", "*-*-* 00/6:00:00", "Sat *-*-1..7 18:00:00"):
        def put(values, calendar=calendar):
            values["etcdBackup"]["schedule"] = calendar
        assert not [p for p in refused(put) if p.startswith("etcdBackup.schedule")], calendar

    def vxlan(values):
        values["cluster"]["nodePortRange"] = "4000-5000"
    assert any("4789 (Calico VXLAN)" in p for p in refused(vxlan))

    def ephemeral(values):
        values["cluster"]["nodePortRange"] = "30000-40000"
        values["windows"]["dynamicPortStart"] = 45000
        values["windows"]["dynamicPortCount"] = 20000
    assert any(p.startswith("cluster.nodePortRange: 30000-40000 overlaps Linux's ephemeral ports 32768-60999")
               for p in refused(ephemeral))


def test_a_vlan_aware_proxmox_bridge_gets_the_tag_on_the_linux_nics():
    """#39 item 6: a VLAN on a VLAN-aware bridge tagged only the Windows NICs. hk-prod's vmbr30 is on VLAN 30 itself
    (no tag, unchanged); with proxmoxVlanAware the Linux NICs carry vlanId."""
    recording = run_program(raw_config(hk_prod_values()))
    vms = recording.by_type("proxmoxve:index/vmLegacy:VmLegacy")
    assert vms and all("vlanId" not in nic for vm in vms for nic in vm.inputs["networkDevices"])
    values = hk_prod_values()
    values["network"]["nodes"]["proxmoxBridge"] = "vmbr0"
    assert any("vmbr0 with vlanId 30: the Linux NICs carry no tag" in str(w)
               for w in load(raw_config(values)).warnings)
    values["network"]["nodes"]["proxmoxVlanAware"] = True
    assert not [w for w in load(raw_config(values)).warnings if "proxmoxBridge" in w.path]
    vms = run_program(raw_config(values)).by_type("proxmoxve:index/vmLegacy:VmLegacy")
    assert {nic.get("vlanId") for vm in vms for nic in vm.inputs["networkDevices"]} == {30}
    del values["network"]["nodes"]["vlanId"]
    assert any(p.startswith("network.nodes.proxmoxVlanAware: tags the Linux NICs with vlanId") for p in problems(values))


def test_the_search_domain_reaches_the_windows_nodes():
    """#39 item 6: network.searchDomain reached only the Linux nodes. The Windows guest's settings step sets its DNS
    suffix search list (Set-DnsClientGlobalSetting -SuffixSearchList) when the stack names one, and leaves it
    otherwise."""
    from plan.nodes import windows_params
    from render.windows_bootstrap import render_prepare_steps
    spec = load(raw_config(hk_prod_values())).spec
    settings = dict(render_prepare_steps(windows_params(spec, spec.nodes.windows[0])))["host-settings"]
    assert "$SearchDomain = 'hk-prod.internal'" in settings.splitlines()
    assert "Set-DnsClientGlobalSetting -SuffixSearchList @($SearchDomain)" in settings
    values = hk_prod_values()
    del values["network"]["searchDomain"]
    spec = load(raw_config(values)).spec
    settings = dict(render_prepare_steps(windows_params(spec, spec.nodes.windows[0])))["host-settings"]
    assert "$SearchDomain = ''" in settings.splitlines()


def test_the_linux_vms_cpu_model_is_the_sites():
    """#39 item 6: every Linux VM had CPU type `host` (no live migration between Proxmox nodes of different CPUs).
    It stays the default; proxmox.cpuType names another, and a malformed one is refused at its key path."""
    vms = run_program(raw_config(hk_prod_values())).by_type("proxmoxve:index/vmLegacy:VmLegacy")
    assert vms and {vm.inputs["cpu"]["type"] for vm in vms} == {"host"}
    values = hk_prod_values()
    values["proxmox"]["cpuType"] = "x86-64-v2-AES"
    vms = run_program(raw_config(values)).by_type("proxmoxve:index/vmLegacy:VmLegacy")
    assert {vm.inputs["cpu"]["type"] for vm in vms} == {"x86-64-v2-AES"}
    # Never rebooted by the provider to apply it.
    assert all(vm.inputs["rebootAfterUpdate"] is False for vm in vms)
    values["proxmox"]["cpuType"] = "host,flags=+aes"
    assert any(p.startswith("proxmox.cpuType:") for p in problems(values))
    # The provider compares case-sensitively (review): refused with the right spelling, at the key path.
    values["proxmox"]["cpuType"] = "x86-64-v2-aes"
    assert "proxmox.cpuType: x86-64-v2-aes is written x86-64-v2-AES (the provider compares CPU models " \
           "case-sensitively)" in problems(values)
    values["proxmox"]["cpuType"] = "custom-rack-b"
    assert not [p for p in problems(values) if p.startswith("proxmox.cpuType")]
    values["proxmox"]["cpuType"] = "EPYC-Genoa"          # added by later provider releases (review of #39)
    assert not [w for w in load(raw_config(values)).warnings if w.path == "proxmox.cpuType"]
    values["proxmox"]["cpuType"] = "EPYC-Turin"
    warnings = [str(w) for w in load(raw_config(values)).warnings]
    assert any("EPYC-Turin is not a CPU model the Proxmox provider is known to accept" in w for w in warnings)


def test_the_windows_nodes_take_the_stacks_time_zone():
    """#39 item 6: `timezone` reached only the Linux nodes; the Windows nodes kept their image's zone. The guest's
    settings step sets the Windows zone CLDR matches (Set-TimeZone -Id), checked first so that a second run changes
    nothing; a zone CLDR does not map is refused where the stack has Windows nodes, and accepted where it has none."""
    from plan.nodes import windows_params
    from render.windows_bootstrap import render_prepare_steps
    from tests.validators import powershell_errors
    spec = load(raw_config(hk_prod_values())).spec
    settings = dict(render_prepare_steps(windows_params(spec, spec.nodes.windows[0])))["host-settings"]
    assert "$TimeZone = 'China Standard Time'" in settings.splitlines()
    assert "if ($TimeZone -and (Get-TimeZone).Id -ne $TimeZone) {" in settings
    assert "Set-TimeZone -Id $TimeZone" in settings and powershell_errors(settings) == []
    values = hk_prod_values()
    values["timezone"] = "Etc/UTC"
    spec = load(raw_config(values)).spec
    assert "$TimeZone = 'UTC'" in dict(render_prepare_steps(windows_params(spec, spec.nodes.windows[0])))[
        "host-settings"].splitlines()
    # A zone CLDR (tzlocal 5.4.4) does not map: Chile's Aysén region, split from America/Santiago in tzdata 2025b.
    values["timezone"] = "America/Coyhaique"
    assert any(p.startswith("timezone: America/Coyhaique has no Windows time zone") for p in problems(values))
    values["nodes"]["windows"] = []
    values.pop("hyperv", None)
    assert not [p for p in problems(values) if p.startswith("timezone")]


def test_a_hyper_v_switch_on_an_access_port_leaves_the_windows_nics_untagged():
    """#39 item 6, the Hyper-V side of proxmoxVlanAware: vlanId tagged every Windows NIC, which an external switch
    whose uplink is an access port on that VLAN drops. hypervVlanTagged false leaves them untagged."""
    from plan.nodes import hyperv_vm
    spec = load(raw_config(hk_prod_values())).spec
    node = spec.nodes.windows[0]
    host = next(h for h in spec.hyperv.hosts if h.name == node.hyperv_host)
    assert hyperv_vm(spec, node, host).vlan_id == 30
    values = hk_prod_values()
    values["network"]["nodes"]["hypervVlanTagged"] = False
    spec = load(raw_config(values)).spec
    assert hyperv_vm(spec, spec.nodes.windows[0], host).vlan_id is None
    # The Linux side is its own setting: a VLAN-aware Proxmox bridge still tags the Linux NICs.
    values["network"]["nodes"]["proxmoxVlanAware"] = True
    vms = run_program(raw_config(values)).by_type("proxmoxve:index/vmLegacy:VmLegacy")
    assert {nic.get("vlanId") for vm in vms for nic in vm.inputs["networkDevices"][:1]} == {30}
    # Only the node network reaches the Windows VMs: the key elsewhere is warned about.
    if values["network"].get("management"):
        values["network"]["management"]["hypervVlanTagged"] = False
        assert any(w.path == "network.management.hypervVlanTagged" for w in load(raw_config(values)).warnings)


def test_a_jumbo_frame_underlay_reaches_new_linux_nics_and_calico_fits_the_windows_ones():
    """#39 item 6: network.underlayMtu only bounded calico.mtu; the VMs' NICs stayed at 1500 (Proxmox VE 8 leaves an
    unset virtio MTU there), so a jumbo-frame site's VXLAN packets did not fit. At 1500 nothing changes; above it each
    Linux VM's node NIC is made with it, and never changed on an existing VM (Proxmox re-plugs a running VM's NIC to
    change it: review of #39). With Windows nodes calico.mtu must fit their 1500-byte NICs, whatever the underlay."""
    vms = run_program(raw_config(hk_prod_values())).by_type("proxmoxve:index/vmLegacy:VmLegacy")
    assert all("mtu" not in nic for vm in vms for nic in vm.inputs["networkDevices"])
    assert all("networkDevices[0].mtu" in vm.ignore_changes for vm in vms)
    values = hk_prod_values()
    values["network"]["underlayMtu"] = 9000
    values["calico"] = {**values.get("calico", {}), "mtu": 8950}
    assert any(p.startswith("calico.mtu: 8950 with Windows nodes") for p in problems(values))
    values["calico"]["mtu"] = 1450                     # a working jumbo site with Windows nodes stays accepted
    assert not [p for p in problems(values) if p.startswith(("network.underlayMtu", "calico.mtu"))]
    values["calico"]["mtu"] = 8950
    values["nodes"]["windows"] = []
    values.pop("hyperv", None)
    assert not [p for p in problems(values) if p.startswith(("network.underlayMtu", "calico.mtu"))]
    built = run_program(raw_config(values))
    vms = built.by_type("proxmoxve:index/vmLegacy:VmLegacy")
    assert vms and {nic.get("mtu") for vm in vms for nic in vm.inputs["networkDevices"][:1]} == {9000}
    # The management NIC keeps its bridge's MTU.
    assert all("mtu" not in nic for vm in vms for nic in vm.inputs["networkDevices"][1:])
    # An existing cluster whose underlay changes: no VM is updated (no NIC re-plugged).
    values["network"]["underlayMtu"] = 9216
    run = run_program(raw_config(values), state=built.state)
    assert not [s for s in run.plan.steps if s.type == "proxmoxve:index/vmLegacy:VmLegacy" and s.op != "same"]


def test_loki_streams_carry_the_clusters_name():
    """#39 item 6: a Loki shared by a site and its recovery site's cluster could not tell their logs apart: every
    stream of the Linux and Windows Fluent Bit outputs (the audit log's included) carries cluster=<cluster.name>."""
    recording = run_program(raw_config(hk_prod_values()))
    loki_lines = [(r.name, line.split(None, 1)[1]) for r in recording.resources if "fluent-bit" in r.name
                  for line in str(r.inputs).replace("\\n", "\n").splitlines()
                  if line.strip().startswith("labels") and "job=" in line]
    assert {name for name, _ in loki_lines} == {"hk-prod-observability-fluent-bit",
                                                 "hk-prod-observability-configmap-logging-fluent-bit-windows"}
    assert {labels.split(", ")[0] for _, labels in loki_lines} == {"job=fluent-bit", "job=kube-apiserver-audit"}
    assert all(labels.endswith("cluster=hk-prod") for _, labels in loki_lines), loki_lines


def test_a_backup_time_the_clock_skips_is_warned_about():
    """Review of #39: backup.schedule is read in `timezone`, and Velero skips a time the clock jumps over. Hong Kong has
    no clock change (no warning at 02:00); Berlin's spring change skips 02:00-03:00 (warned), not 04:00."""
    values = hk_prod_values()
    assert not [w for w in load(raw_config(values)).warnings if w.path == "backup.schedule"]
    values["timezone"] = "Europe/Berlin"
    warnings = [str(w) for w in load(raw_config(values)).warnings if w.path == "backup.schedule"]
    assert warnings and "2:00 does not exist in Europe/Berlin on the day its clocks go forward (March 28" in warnings[0]
    values["backup"]["schedule"] = "0 4 * * *"
    assert not [w for w in load(raw_config(values)).warnings if w.path == "backup.schedule"]
    # Weekdays only: the change falls on a Sunday, so no warning for a schedule that is not daily.
    values["backup"]["schedule"] = "0 2 * * 1-5"
    assert not [w for w in load(raw_config(values)).warnings if w.path == "backup.schedule"]
    # Out of range: an error at the key, never a traceback (review of #39).
    for schedule, message in (("0 24 * * *", "hour 24 is out of 0-23"), ("60 2 * * *", "minute 60 is out of 0-59")):
        values["backup"]["schedule"] = schedule
        assert f"backup.schedule: {message}: Velero would refuse the schedule" in problems(values)


def test_the_smb_dialect_and_the_off_site_retention_are_the_sites():
    """#39 item 6: the Linux nodes mounted SMB 3.0 always (a server that speaks 3.1.1 only refused them), and the
    off-site copies were kept as long as this site's. Both default to what they were."""
    from plan.platform import backup_plan, storage_params
    from render.storage import smb_mount_options
    values = hk_prod_values()
    spec = load(raw_config(values)).spec
    params = storage_params(spec)
    assert params is not None and params.smb is not None and smb_mount_options(params.smb)[0] == "vers=3.0"
    plan = backup_plan(spec)
    assert plan is not None and plan.offsite_retention_days == plan.retention_days == 30
    values["storage"]["smb"]["version"] = "3.1.1"
    values["backup"]["offsiteRetentionDays"] = 90
    spec = load(raw_config(values)).spec
    assert smb_mount_options(storage_params(spec).smb)[0] == "vers=3.1.1"
    recording = run_program(raw_config(values))
    ttls = {s.inputs["metadata"]["name"]: s.inputs["spec"]["template"]["ttl"]
            for s in recording.by_type("kubernetes:velero.io/v1:Schedule")}
    assert ttls == {"daily-primary": "720h0m0s", "daily-offsite": "2160h0m0s"}
    values["storage"]["smb"]["version"] = "1.0"
    assert any(p.startswith("storage.smb.version:") for p in problems(values))
    del values["backup"]["offsite"]
    assert any(p.startswith("backup.offsiteRetentionDays: there are no off-site copies") for p in problems(values))
