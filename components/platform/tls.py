"""cert-manager and the stack's ClusterIssuer (config `tls`): an internal CA whose key pair comes from Pulumi
secrets, or an ACME CA answered through the samples' Gateway, and approver-policy with the policies that say which
names each namespace may have from it. Certificates for the Gateway's HTTPS listener are
issued and renewed by cert-manager itself (render/tls.py)."""
from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_command as command
import pulumi_kubernetes as kubernetes

from config.compat import CHARTS
from plan.platform import TlsPlan
from render import policy, tls
from render.shell import bash_command

from ..cluster.bootstrap import ControlPlaneAccess
from .k8s import helm_release, kubernetes_object, resource_name


class Tls(pulumi.ComponentResource):
    def __init__(self, name: str, plan: TlsPlan, provider: pulumi.ProviderResource,
                 ca: tuple[pulumi.Output[str], pulumi.Output[str]] | None, linux_ready: Sequence[pulumi.Resource],
                 access: ControlPlaneAccess, gateway_api_crds: Sequence[pulumi.Resource] = (),
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("hybrid:platform:Tls", name, None, opts)
        if plan.gateway_api and not gateway_api_crds:
            raise ValueError("cert-manager's Gateway API support needs the resource that installs the Gateway API's CRDs")
        release = f"{name}-cert-manager"
        # With its Gateway API support on, cert-manager exits at start-up until the Gateway API's CRDs exist
        # (v1.21.1 pkg/controller/context.go): after them.
        chart = helm_release(release, CHARTS["cert-manager"], tls.CERT_MANAGER_NAMESPACE,
                             tls.cert_manager_values(plan.gateway_api, plan.budget), provider=provider, parent=self,
                             depends_on=[*linux_ready, *gateway_api_crds])
        issuer_after: list[pulumi.Resource] = [chart]
        if plan.ca:
            if ca is None:
                raise ValueError("tls.ca needs the secrets tlsCaCertificate and tlsCaKey")
            metadata = tls.ca_secret_metadata()
            # Typed here: mypy infers Output.secret's type argument only with an expected type.
            key_pair: pulumi.Output[dict[str, str]] = pulumi.Output.secret(pulumi.Output.all(*ca).apply(
                lambda pair: {"tls.crt": pair[0], "tls.key": pair[1]}))
            issuer_after.append(kubernetes.core.v1.Secret(
                f"{name}-{resource_name(metadata)}", metadata=metadata["metadata"], type=metadata["type"],
                string_data=key_pair, opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[chart])))
        # approver-policy's webhook certificate comes from cert-manager's cainjector (its templates/webhook.yaml):
        # after cert-manager. Its policies are its chart's CRD, and its webhook validates them: after it.
        approver = helm_release(f"{name}-approver-policy", CHARTS["approver-policy"], tls.CERT_MANAGER_NAMESPACE,
                                tls.approver_policy_values(plan.budget), provider=provider, parent=self, depends_on=[chart])
        if plan.budget:
            budget = tls.approver_policy_disruption_budget()
            kubernetes_object(f"{name}-{resource_name(budget)}", budget, provider=provider, parent=self,
                              depends_on=[approver])
        # The policies pass approver-policy's webhook (failurePolicy Fail), which serves once cainjector has put the
        # CA in its configuration: nothing in the chart waits for that (cert-manager's own chart has its
        # startupapicheck Job for its webhook; approver-policy's has none), so a dry run of each is admitted first.
        rendered = [tls.certificate_request_policy(grant) for grant in plan.grants]
        policies: list[pulumi.Resource] = []
        if rendered:
            probe = bash_command(policy.render_dry_run_probe(
                [policy.probe_object(p) for p in rendered], "a CertificateRequestPolicy (approver-policy's webhook)"))
            webhook_ready = command.remote.Command(
                f"{name}-approver-policy-webhook", connection=access.connection, create=probe, update=probe,
                logging=command.remote.Logging.STDERR,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[access.init, approver]))
            policies = [kubernetes_object(f"{name}-{resource_name(p)}", p, provider=provider, parent=self,
                                          depends_on=[webhook_ready]) for p in rendered]
        if plan.grants:
            role = tls.policy_user_role(plan.grants)
            binding = tls.policy_user_binding(tls.chart_fullname(release, tls.CERT_MANAGER_CHART))
            policies.append(kubernetes_object(f"{name}-{resource_name(role)}", role, provider=provider, parent=self))
            policies.append(kubernetes_object(f"{name}-{resource_name(binding)}", binding, provider=provider,
                                              parent=self))
        # ClusterIssuer is the chart's CRD: after the chart (and the CA's Secret), and after the policies, so that its
        # first request is decided as soon as approver-policy has read them.
        self.issuer = kubernetes_object(f"{name}-{resource_name(plan.issuer)}", plan.issuer, provider=provider,
                                        parent=self, depends_on=issuer_after + policies)
        self.register_outputs({"issuer": plan.issuer["metadata"]["name"]})
