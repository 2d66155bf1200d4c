"""A Linux node's host key read through the QEMU guest agent on its Proxmox node (render/host_keys.py,
render/scripts/guest-host-key.sh): shellchecked, and run against a stub `qm` that answers as qemu-server's
`qm guest cmd` and `qm guest exec` do (src/PVE/CLI/qm.pm: exec prints the agent's exec-status as JSON with
out-data decoded, only {"pid": N} once its --timeout passed)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from render.host_keys import render_guest_host_key
from tests.validators import shellcheck
from tools.providers import new_host_key

ED25519 = new_host_key("hk-lnx-1", 1)
# A real P-256 key's public half (ssh-keygen -t ecdsa), as a FIPS-mode node would present it.
ECDSA = ("ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBPWG1Q99viFGwFVC/2vyY5WY0OA1sljBz96"
         "IqTx0Spsnn4F3MGdJhqNNygUhzMK1LB10IFk0NoJFL0aB6L/n52w=")

# `qm guest cmd VMID ping` succeeds once the agent is up ($STUBS/agent-after pings in); `qm guest exec` answers
# from the guest files under $STUBS/guest, or never finishes cloud-init when $STUBS/cloud-init-hangs exists.
QM = r"""#!/usr/bin/env bash
set -euo pipefail
printf 'qm %s\n' "$*" >>"$STUBS/calls"
json_text() { python3 -c 'import json, sys; print(json.dumps(sys.stdin.read()))'; }
case "$1 $2" in
  "guest cmd")
    count=$(( $(cat "$STUBS/pings" 2>/dev/null || echo 0) + 1 ))
    echo "$count" >"$STUBS/pings"
    (( count > $(cat "$STUBS/agent-after") )) || { echo "QEMU guest agent is not running" >&2; exit 255; }
    echo '{}' ;;
  "guest exec")
    shift 5   # guest exec VMID --timeout T
    [[ $1 == -- ]] && shift
    case "$*" in
      "cloud-init status --wait")
        if [[ -e $STUBS/cloud-init-hangs ]]; then printf '{\n   "pid" : 4711\n}\n'; exit 0; fi
        printf '{\n   "exitcode" : 0,\n   "exited" : 1,\n   "out-data" : "\\nstatus: done\\n"\n}\n' ;;
      "cat "*)
        file="$STUBS/guest$2"
        if [[ -f $file ]]; then
          printf '{\n   "exitcode" : 0,\n   "exited" : 1,\n   "out-data" : %s\n}\n' "$(json_text <"$file")"
        else
          printf '{\n   "err-data" : "cat: %s: No such file or directory\\n",\n   "exitcode" : 1,\n   "exited" : 1\n}\n' "$2"
        fi ;;
      *) echo "unexpected guest command: $*" >&2; exit 2 ;;
    esac ;;
  *) echo "unexpected: $*" >&2; exit 2 ;;
esac
"""


def _stubbed(tmp_path: Path, agent_after: int = 0, keys: dict[str, str] | None = None) -> tuple[dict[str, str], Path]:
    stubs = tmp_path / "stubs"
    (stubs / "guest" / "etc" / "ssh").mkdir(parents=True)
    (stubs / "qm").write_text(QM)
    (stubs / "sleep").write_text("#!/usr/bin/env bash\nexit 0\n")
    for stub in ("qm", "sleep"):
        (stubs / stub).chmod(0o755)
    (stubs / "agent-after").write_text(str(agent_after))
    for name, line in (keys if keys is not None else {"ed25519": ED25519}).items():
        (stubs / "guest" / "etc" / "ssh" / f"ssh_host_{name}_key.pub").write_text(f"{line} root@hk-lnx-1\n")
    return {"PATH": f"{stubs}:/usr/bin:/bin", "STUBS": str(stubs)}, stubs


def _run(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([shutil.which("bash"), "-c", script], env=env, capture_output=True, text=True, timeout=60)


def test_the_script_passes_shellcheck(tmp_path):
    path = tmp_path / "host-key.sh"
    path.write_text(render_guest_host_key(321))
    shellcheck(path)


def test_it_waits_for_the_agent_and_cloud_init_then_prints_only_the_key(tmp_path):
    env, stubs = _stubbed(tmp_path, agent_after=3)
    result = _run(render_guest_host_key(321), env)
    assert result.returncode == 0, result.stderr
    # Standard output is the key line alone, without the file's comment: what the connections pin.
    assert result.stdout == ED25519 + "\n"
    calls = (stubs / "calls").read_text().splitlines()
    assert calls[:4] == ["qm guest cmd 321 ping"] * 4
    assert calls[4] == "qm guest exec 321 --timeout 1800 -- cloud-init status --wait"
    assert calls[5] == "qm guest exec 321 --timeout 60 -- cat /etc/ssh/ssh_host_ed25519_key.pub"
    assert "waiting for the QEMU guest agent of VM 321" in result.stderr


def test_a_node_without_ed25519_is_pinned_to_its_ecdsa_key(tmp_path):
    env, _ = _stubbed(tmp_path, keys={"ecdsa": ECDSA})
    result = _run(render_guest_host_key(321), env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ECDSA + "\n"


@pytest.mark.parametrize("setup, message", [
    (lambda stubs: (stubs / "agent-after").write_text("1000000"), "did not answer within 1s"),
    (lambda stubs: (stubs / "cloud-init-hangs").write_text(""), "cloud-init in VM 321 did not finish within 1s"),
    (lambda stubs: [p.unlink() for p in (stubs / "guest" / "etc" / "ssh").iterdir()], "has no ed25519 or ECDSA host key"),
    (lambda stubs: (stubs / "guest" / "etc" / "ssh" / "ssh_host_ed25519_key.pub").write_text("garbage\n"),
     "has no ed25519 or ECDSA host key"),
], ids=["no-agent", "cloud-init-hangs", "no-key", "not-a-key"])
def test_it_fails_loudly_and_prints_nothing_to_pin(tmp_path, setup, message):
    env, stubs = _stubbed(tmp_path)
    setup(stubs)
    result = _run(render_guest_host_key(321, wait_timeout_seconds=1), env)
    assert result.returncode != 0 and message in result.stderr, result.stderr
    assert result.stdout == ""


def test_inputs_that_would_break_the_script_are_refused():
    for vm_id in (42, True, "321"):
        with pytest.raises(ValueError):
            render_guest_host_key(vm_id)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        render_guest_host_key(321, wait_timeout_seconds=0)


# --- the Proxmox provider's own SSH client: known_hosts --------------------------------------------------------

def test_known_hosts_lines_pin_every_proxmox_node_and_the_check_finds_missing_and_extra_keys(tmp_path, capsys):
    from tests.conftest import hk_prod_spec
    from tools import known_hosts

    spec = hk_prod_spec()
    written = known_hosts.lines(spec)
    assert written == [f"{n.address} {n.host_key}" for n in spec.proxmox.nodes] and len(written) == 2
    assert known_hosts.check(spec, "\n".join(written)) == []
    # One node missing, and a trusted-on-first-use line for the other beside its pinned one.
    other = new_host_key("somewhere-else", 1)
    problems = known_hosts.check(spec, f"# comment\n{written[0]}\n10.10.10.11,pve-hk1-a {other}\n")
    assert problems == [
        "10.10.10.11 (pve-hk1-a): 1 other key(s) for it, which the provider would accept as well; remove them: "
        "ssh-keygen -R 10.10.10.11",
        f"10.10.10.12 (pve-hk2-a): its pinned key is missing; add `{written[1]}`"]
    file = tmp_path / "known_hosts"
    file.write_text("\n".join(written) + "\n")
    assert known_hosts.main(["--stack", "hk-prod", "--check", str(file)]) == 0
    file.write_text(written[0] + "\n")
    assert known_hosts.main(["--stack", "hk-prod", "--check", str(file)]) == 1
    assert "10.10.10.12 (pve-hk2-a): its pinned key is missing" in capsys.readouterr().err
    assert known_hosts.main(["--stack", "hk-prod"]) == 0
    assert capsys.readouterr().out.splitlines() == written
