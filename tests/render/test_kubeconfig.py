from __future__ import annotations

import pytest
import yaml

from render.kubeconfig import point_at_server

ADMIN_CONF = """apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: Q0E=
    server: https://10.30.30.11:6443
  name: hk-prod
contexts:
- context: {cluster: hk-prod, user: kubernetes-admin}
  name: kubernetes-admin@hk-prod
current-context: kubernetes-admin@hk-prod
users:
- name: kubernetes-admin
  user: {client-certificate-data: Q0VSVA==, client-key-data: S0VZ}
"""


def test_server_is_rewritten_and_nothing_else_changes():
    before = yaml.safe_load(ADMIN_CONF)
    after = yaml.safe_load(point_at_server(ADMIN_CONF, "https://10.30.30.10:6443"))
    assert after["clusters"][0]["cluster"]["server"] == "https://10.30.30.10:6443"
    after["clusters"][0]["cluster"]["server"] = before["clusters"][0]["cluster"]["server"]
    assert after == before


@pytest.mark.parametrize("text", ["", "kind: Config\n", "- a\n"])
def test_rejects_what_is_not_a_kubeconfig(text):
    with pytest.raises(ValueError):
        point_at_server(text, "https://x:6443")
