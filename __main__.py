"""The hybrid cluster as one Pulumi program: validated configuration, then each layer on the one before."""
import pulumi

from components.bootstrap import KubeadmCluster
from components.machines import Machines
from config.loader import SpecError, from_pulumi_runtime, load
from config.secrets import read_secrets

try:
    stack = load(from_pulumi_runtime())
except SpecError as error:
    # Nothing has been declared yet: report every problem and stop before any resource exists.
    raise pulumi.RunError(str(error)) from None

for warning in stack.warnings:
    pulumi.log.warn(f"config {warning}")

spec = stack.spec
secrets = read_secrets(spec)

machines = Machines(spec.cluster.name, spec, secrets)
# Windows joins will also wait for the cluster network's Windows prerequisites (platform layer).
cluster = KubeadmCluster(f"{spec.cluster.name}-kubeadm", spec, machines)

pulumi.export("apiServer", cluster.api_server)
pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("nodes", machines.nodes)
