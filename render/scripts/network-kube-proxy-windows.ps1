$ErrorActionPreference = 'Stop'
#@ inputs NetworkName HostEndpointName KubeadmConfigDir ClusterCidr
# kube-proxy-windows' entry script; render/network.py _kube_proxy_start_script says how it follows upstream.

$sandbox = $env:CONTAINER_SANDBOX_MOUNT_POINT
Import-Module -Force (Join-Path $sandbox 'kube-proxy/hns.psm1')

# calico-node-windows creates the HNS network; kube-proxy has nothing to program services into before it.
while (-not (Get-HnsNetwork | Where-Object Name -EQ $NetworkName)) {
    Write-Host "waiting for HNS network $NetworkName"
    Start-Sleep -Seconds 2
}
$network = Get-HnsNetwork | Where-Object Name -EQ $NetworkName

# kubeadm's kubeconfig names the service account files by their in-container paths; in a HostProcess
# container they live under the sandbox mount point.
$kubeconfigSource = Join-Path $sandbox "$KubeadmConfigDir/kubeconfig.conf"
$kubeconfig = Join-Path $env:ProgramData 'kube-proxy-windows/kubeconfig.conf'
New-Item -ItemType Directory -Force -Path (Split-Path -Parent $kubeconfig) | Out-Null
(Get-Content -Raw -Path $kubeconfigSource) -replace '/var/', "$sandbox/var/" | Set-Content -Path $kubeconfig

$proxyArgs = @(
    "--hostname-override=$env:NODE_NAME",
    '--proxy-mode=kernelspace',
    "--network-name=$NetworkName",
    "--cluster-cidr=$ClusterCidr",
    '--enable-dsr=true',
    "--kubeconfig=$kubeconfig",
    '--v=2'
)
if ($network.Type -EQ 'Overlay') {
    # VXLAN: kube-proxy SNATs through the address of Calico's host endpoint.
    while (-not (Get-HnsEndpoint | Where-Object Name -EQ $HostEndpointName)) {
        Write-Host "waiting for HNS endpoint $HostEndpointName"
        Start-Sleep -Seconds 2
    }
    $sourceVip = (Get-HnsEndpoint | Where-Object Name -EQ $HostEndpointName).IpAddress
    $proxyArgs += "--source-vip=$sourceVip"
}

# kube-proxy does not resync policy lists left by an earlier run, so a restart starts from none.
$policyLists = Get-HnsPolicyList
if ($policyLists) {
    $policyLists | Remove-HnsPolicyList
}

& (Join-Path $sandbox 'kube-proxy/kube-proxy.exe') @proxyArgs
exit $LASTEXITCODE
