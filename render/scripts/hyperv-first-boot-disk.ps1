# The first disk of a new Windows node VM, on its Hyper-V host: the golden image copied, and the node's own
# Administrator password written into the copy's first-boot answer file, so that the golden image holds none. Kept
# on each host by hyperv-host-tool.ps1; the VM converge (hyperv-create.ps1) reads it once, checks its SHA-256 and
# runs that text as a script block in its own session, only for a VM whose disk does not exist yet. Arguments: the
# golden image, the disk to make, and the guest credential (whose password OOBE sets).
## The image's answer file (images/windows/unattend.pkrtpl.xml, which sysprep leaves at Windows\Panther\unattend.xml)
## has no UserAccounts: the node's AdministratorPassword (Value, PlainText true) is added to its oobeSystem
## Microsoft-Windows-Shell-Setup component through the XML DOM, which escapes the value, as the unattend reference has it:
##   https://learn.microsoft.com/windows-hardware/customize/desktop/unattend/microsoft-windows-shell-setup-useraccounts-administratorpassword
## Mount-VHD -NoDriveLetter -Passthru, Get-Disk, Get-Partition (.Type Basic: C:, the image's last partition,
## images/windows/prepare.ps1), Add-/Remove-PartitionAccessPath -AccessPath (a folder: no drive letter is taken),
## Dismount-VHD:
##   https://learn.microsoft.com/powershell/module/hyper-v/mount-vhd
##   https://learn.microsoft.com/powershell/module/storage/add-partitionaccesspath
## The file is written as UTF-8 without a byte order mark (an XmlTextWriter over UTF8Encoding($false)), as its XML
## declaration says.
param([string]$GoldenVhdx, [string]$VhdPath, [System.Management.Automation.PSCredential]$Credential)
$ErrorActionPreference = 'Stop'
Set-StrictMode -Version Latest
$unattend = 'urn:schemas-microsoft-com:unattend'
if (-not (Test-Path -LiteralPath $GoldenVhdx)) { throw "Golden image $GoldenVhdx does not exist" }
## Windows tells a VHDX from a VHD by the file's extension (Microsoft's AttachVirtualDisk sample: "the system will
## use the file extension to determine the correct VHD format"), so the copy in progress keeps .vhdx.
$partial = [IO.Path]::ChangeExtension($VhdPath, '.partial.vhdx')
## The mount folder is on the system drive (Add-PartitionAccessPath mounts in NTFS folders only; VM storage is often
## ReFS), in the folder of this tool, which only SYSTEM and the Administrators may change (hyperv-host-tool.ps1).
$mountDir = Join-Path $env:ProgramData ('hybrid-cluster\mount-' + [IO.Path]::GetFileNameWithoutExtension($VhdPath))
## Every copy has the golden image's GPT disk GUID, and Windows gives a disk whose GUID another mounted disk has a new
## one (reported to break the copy's boot: GoogleCloudPlatform/gce-rescue#149): one copy mounted at a time per host,
## under a machine-wide named mutex, as several node converges run at once (provisioning.copiesPerHypervHost). A run
## that died holding it leaves it abandoned, which the next one takes over (WaitOne's AbandonedMutexException).
$lock = New-Object System.Threading.Mutex($false, 'Global\hybrid-cluster-first-boot-disk')
$held = $false
try {
    try { $held = $lock.WaitOne([TimeSpan]::FromMinutes(30)) } catch [System.Threading.AbandonedMutexException] { $held = $true }
    if (-not $held) { throw "another first-boot disk on this host has been mounted for 30 minutes; see Get-VHD -Path ... | Where-Object Attached" }
    ## A copy left by a run that was stopped (still attached, or half written) is made again from the start.
    if (Test-Path -LiteralPath $partial) {
        $stale = Get-VHD -Path $partial -ErrorAction SilentlyContinue
        if ($stale -and $stale.Attached) { Dismount-VHD -Path $partial }
        Remove-Item -LiteralPath $partial -Force
    }
    Write-Output "Copying $GoldenVhdx to $VhdPath"
    Copy-Item -LiteralPath $GoldenVhdx -Destination $partial -Force
    $null = New-Item -ItemType Directory -Path $mountDir -Force
    try {
        $disk = Mount-VHD -Path $partial -NoDriveLetter -Passthru | Get-Disk
        $windows = @(Get-Partition -DiskNumber $disk.Number | Where-Object { $_.Type -eq 'Basic' } | Sort-Object -Property Offset)[-1]
        $windows | Add-PartitionAccessPath -AccessPath $mountDir
        try {
            $answer = Join-Path $mountDir 'Windows\Panther\unattend.xml'
            if (-not (Test-Path -LiteralPath $answer)) { throw "$GoldenVhdx has no Windows\Panther\unattend.xml: build it with images/windows" }
            $doc = New-Object System.Xml.XmlDocument
            $doc.PreserveWhitespace = $true
            $doc.Load($answer)
            $names = New-Object System.Xml.XmlNamespaceManager($doc.NameTable)
            $names.AddNamespace('u', $unattend)
            $shell = $doc.SelectSingleNode("/u:unattend/u:settings[@pass='oobeSystem']/u:component[@name='Microsoft-Windows-Shell-Setup']", $names)
            if ($null -eq $shell) { throw "$GoldenVhdx's answer file has no oobeSystem Microsoft-Windows-Shell-Setup component: build it with images/windows" }
            $accounts = $shell.SelectSingleNode('u:UserAccounts', $names)
            if ($null -eq $accounts) { $accounts = $shell.PrependChild($doc.CreateElement('UserAccounts', $unattend)) }
            foreach ($old in @($accounts.SelectNodes('u:AdministratorPassword', $names))) { $null = $accounts.RemoveChild($old) }
            $admin = $accounts.AppendChild($doc.CreateElement('AdministratorPassword', $unattend))
            $admin.AppendChild($doc.CreateElement('Value', $unattend)).InnerText = $Credential.GetNetworkCredential().Password
            $admin.AppendChild($doc.CreateElement('PlainText', $unattend)).InnerText = 'true'
            $writer = New-Object System.Xml.XmlTextWriter($answer, (New-Object System.Text.UTF8Encoding($false)))
            try { $doc.Save($writer) } finally { $writer.Close() }
        } finally {
            $windows | Remove-PartitionAccessPath -AccessPath $mountDir
        }
    } finally {
        $mounted = Get-VHD -Path $partial -ErrorAction SilentlyContinue
        if ($mounted -and $mounted.Attached) { Dismount-VHD -Path $partial }
        Remove-Item -LiteralPath $mountDir -Force -ErrorAction SilentlyContinue
    }
} finally {
    if ($held) { $lock.ReleaseMutex() }
    $lock.Dispose()
}
Move-Item -LiteralPath $partial -Destination $VhdPath
Write-Output "$VhdPath carries the node's Administrator password for its first boot"
