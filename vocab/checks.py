"""Input checks the renderers share: a rendered object or script is refused before it is built wrong.

The patterns here are also the config layer's field types (config/model.py), so a value the stack file
accepts is a value every renderer accepts: one definition for both.
"""
from __future__ import annotations

import base64
import hashlib
import ipaddress
import re

# Kubernetes DNS-1123 label: namespaces, RuntimeClasses, most object names
# (https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# DNS-1123 subdomain: lower-case labels joined by dots, 253 characters at most (same page): node
# names, cluster domains, the search domain cloud-init writes (its FQDN check is lower-case).
DNS_SUBDOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$")
# A host name as resolvers take it (RFC 1123 section 2.1: letters, digits, hyphens; any case), ASCII only.
HOST_NAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*$")
# A host name routes match: a lower-case FQDN of two labels or more, optionally a *. wildcard
# (Ingress spec.rules[].host and Gateway API HTTPRoute spec.hostnames take the same form).
ROUTE_HOST = re.compile(r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$")
# A registry host as image references name it (docker.io, registry.k8s.io): containerd's hosts
# directory is named after it, on Windows too, where a ':port' would not be a valid folder name.
REGISTRY_HOST = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")
# An http(s) URL with a host, an optional port and a plain path: no user:password@ part, no query.
HTTP_ENDPOINT = re.compile(r"^https?://[A-Za-z0-9.-]+(:\d{1,5})?(/[A-Za-z0-9._~/-]*)?$")
# A label value (at most 63 characters, alphanumeric at both ends), as k8s.io/apimachinery/pkg/util/validation
# IsValidLabelValue checks it.
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
# maxUnavailable as Kubernetes writes it: a count of nodes, or a share of a pool from 1% to 100%.
_MAX_UNAVAILABLE_SHARE = re.compile(r"^([1-9][0-9]?|100)%$")
MAX_UNAVAILABLE_NODES = 1000


def is_max_unavailable(value: object) -> bool:
    """A count of nodes (3) or a share of a pool ("20%"): the one check, for the stack's rollout.maxUnavailable and for
    the wave planner."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 1 <= value <= MAX_UNAVAILABLE_NODES
    return isinstance(value, str) and bool(_MAX_UNAVAILABLE_SHARE.fullmatch(value))


# A POSIX login name as useradd takes it by default (shadow-utils NAME_REGEX).
POSIX_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
# NetBIOS computer names: at most 15 characters; Windows also rejects names made only of digits.
# Letters, digits and hyphens keep it DNS-safe as well.
# https://learn.microsoft.com/troubleshoot/windows-server/active-directory/naming-conventions-for-computer-domain-site-ou
NETBIOS_NAME = re.compile(r"^(?!-)(?![0-9]+$)[A-Za-z0-9-]{1,15}(?<!-)$")
# An absolute Windows path (drive or UNC) without control characters or the characters Windows file
# names cannot hold (" * ? < > |; https://learn.microsoft.com/windows/win32/fileio/naming-a-file).
WINDOWS_PATH = re.compile(r"^([A-Za-z]:\\|\\\\)[^\x00-\x1f\x7f\"*?<>|]*$")
# Characters that are wildcards to Hyper-V's -Name parameters and Get-NetAdapter -Name.
WILDCARD_CHARS = frozenset("*?[]`")
# Loki tenant IDs: up to 150 of letters, digits and ! - _ . * ' ( ), and not "." or ".."
# (https://grafana.com/docs/enterprise-logs/latest/operations/multi-tenancy/ and its Restrictions list).
LOKI_TENANT = re.compile(r"^(?!\.{1,2}$)[A-Za-z0-9!_.*'()-]{1,150}$")


# A full release version as the pins write it ("1.36.4", "2.3.5"; no leading v).
VERSION = re.compile(r"^\d+\.\d+\.\d+$")
# A pinned image reference: registry host (optional port), path, an optional tag, an optional digest.
IMAGE = re.compile(r"^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+(:[A-Za-z0-9._-]+)?(@sha256:[0-9a-f]{64})?$")


# The public key earlier releases of tools.init wrote when they found none: valid in form only (an ed25519 key of zero
# bytes), clearly not anyone's key; config.rules refuses a stack that still has it.
PLACEHOLDER_SSH_KEY = ("ssh-ed25519 " + base64.b64encode(b"\0\0\0\x0bssh-ed25519\0\0\0\x20" + bytes(32)).decode()
                       + " PLACEHOLDER-replace-with-your-own-key")


def require(condition: bool, message: str) -> None:
    """Raise ValueError(message) unless condition holds."""
    if not condition:
        raise ValueError(message)


# An SSH host key that pulumi-command can pin: `hostKey` goes through ssh.ParseAuthorizedKey and ssh.FixedHostKey, and
# the client then offers the server only that key's algorithm (pulumi-command v1.2.1 provider/pkg/provider/remote/
# connection.go, SSHConfig: `hostKeyAlgorithms = []string{publicKey.Type()}`). For an RSA key that is "ssh-rsa",
# SHA-1 signatures, which OpenSSH 8.8 and later refuse by default (OpenSSH 8.8 release notes), so RSA is not offered.
PINNABLE_HOST_KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521")


def is_pinnable_host_key(value: str) -> bool:
    """`<type> <base64>` (no comment), of a type in PINNABLE_HOST_KEY_TYPES, whose base64 decodes to an SSH key blob
    that starts with the same type name (RFC 4253 section 6.6: a length-prefixed string), as ParseAuthorizedKey needs."""
    kind, _, blob = value.partition(" ")
    if kind not in PINNABLE_HOST_KEY_TYPES or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", blob):
        return False
    try:
        raw = base64.b64decode(blob, validate=True)
    except ValueError:
        return False
    length = int.from_bytes(raw[:4], "big")
    return len(raw) > 4 + length and raw[4:4 + length] == kind.encode()


_ARMOR = re.compile(r"\A\s*-----BEGIN PGP PUBLIC KEY BLOCK-----\r?\n(?:[A-Za-z][A-Za-z-]*: [^\r\n]*\r?\n)*\r?\n"
                    r"(?P<body>[A-Za-z0-9+/=\r\n]+?)(?:\r?\n=[A-Za-z0-9+/]{4})?\r?\n"
                    r"-----END PGP PUBLIC KEY BLOCK-----\s*\Z")
PUBLIC_KEY_PACKET, PUBLIC_SUBKEY_PACKET = 6, 14


def openpgp_packets(data: bytes) -> list[tuple[int, bytes]]:
    """The (tag, body) of each packet of a transferable key (RFC 9580 section 4.2: old and new packet headers); raises
    ValueError on a truncated or indeterminate-length packet."""
    packets, at = [], 0
    while at < len(data):
        header = data[at]
        if not header & 0x80:
            raise ValueError("not an OpenPGP packet")
        if header & 0x40:                       # new format: the tag in 6 bits, the length in 1, 2 or 5 octets
            tag, at = header & 0x3F, at + 1
            first = data[at]
            if first < 192:
                length, at = first, at + 1
            elif first < 224:
                length, at = ((first - 192) << 8) + data[at + 1] + 192, at + 2
            elif first == 255:
                length, at = int.from_bytes(data[at + 1:at + 5], "big"), at + 5
            else:
                raise ValueError("partial body lengths do not occur in a key")
        else:                                   # old format: the tag in 4 bits, the length type in 2
            tag, kind, at = (header >> 2) & 0x0F, header & 0x03, at + 1
            if kind == 3:
                raise ValueError("indeterminate lengths do not occur in a key")
            size = (1, 2, 4)[kind]
            length, at = int.from_bytes(data[at:at + size], "big"), at + size
        if at + length > len(data):
            raise ValueError("truncated packet")
        packets.append((tag, data[at:at + length]))
        at += length
    return packets


def openpgp_public_key(value: str) -> list[tuple[int, bytes]]:
    """The packets of an ASCII-armored OpenPGP public key (gpg --armor --export) that holds exactly one key, as gpg's
    --recipient-file needs ("a file containing exactly one key", gpg(1)); raises ValueError otherwise."""
    found = _ARMOR.match(value)
    if not found:
        raise ValueError("not an ASCII-armored OpenPGP public key block")
    try:
        packets = openpgp_packets(base64.b64decode("".join(found.group("body").split()), validate=True))
    except (ValueError, IndexError) as error:
        raise ValueError(f"not an OpenPGP public key: {error}") from None
    if [tag for tag, _ in packets].count(PUBLIC_KEY_PACKET) != 1 or packets[0][0] != PUBLIC_KEY_PACKET:
        raise ValueError("must hold exactly one public key")
    return packets


SIGNATURE_PACKET, FEATURES_SUBPACKET = 2, 30
# Features flags (RFC 9580 section 5.2.3.32): 0x02 is LibrePGP's OCB AEAD, which GnuPG 2.3 and later write to a key
# that advertises it (gnupg-2.4 g10/encrypt.c, pkclist.c) and GnuPG 2.2 cannot read.
FEATURE_AEAD = 0x02


def _subpackets(data: bytes) -> list[tuple[int, bytes]]:
    found, at = [], 0
    while at < len(data):
        first = data[at]
        if first < 192:
            length, at = first, at + 1
        elif first < 255:
            length, at = ((first - 192) << 8) + data[at + 1] + 192, at + 2
        else:
            length, at = int.from_bytes(data[at + 1:at + 5], "big"), at + 5
        if length < 1 or at + length > len(data):
            raise ValueError("truncated signature subpacket")
        found.append((data[at] & 0x7F, data[at + 1:at + length]))
        at += length
    return found


def openpgp_features(packets: list[tuple[int, bytes]]) -> int:
    """The Features flags the key's version 4 signatures advertise in their hashed area (RFC 4880 section 5.2.3),
    or-ed together."""
    flags = 0
    for tag, body in packets:
        if tag != SIGNATURE_PACKET or body[:1] != b"\x04" or len(body) < 6:
            continue
        hashed = body[6:6 + int.from_bytes(body[4:6], "big")]
        for kind, data in _subpackets(hashed):
            if kind == FEATURES_SUBPACKET and data:
                flags |= data[0]
    return flags


def openpgp_fingerprint(value: str) -> str:
    """The fingerprint of the (version 4) key, as gpg prints it: SHA-1 over 0x99, the two-octet length and the public
    key packet's body (RFC 4880 section 12.2)."""
    body = openpgp_public_key(value)[0][1]
    require(body[:1] == b"\x04", "only version 4 OpenPGP keys (what gpg makes by default) are accepted")
    return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body, usedforsecurity=False).hexdigest().upper()


def is_openpgp_public_key(value: str) -> bool:
    """One version 4 key that does not ask for AEAD (every GnuPG from 2.2 on then writes and reads the same format)."""
    try:
        openpgp_fingerprint(value)
        return not openpgp_features(openpgp_public_key(value)) & FEATURE_AEAD
    except (ValueError, IndexError):
        return False


def is_ip_address(value: str) -> bool:
    """An IPv4 or IPv6 address literal (not a name)."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def is_host(value: str) -> bool:
    """An IPv4 address or a host name (HOST_NAME)."""
    try:
        ipaddress.IPv4Address(value)
        return True
    except ValueError:
        return bool(HOST_NAME.match(value)) and not value.replace(".", "").isdigit()


def is_plain_text(value: str) -> bool:
    """Non-empty, no surrounding spaces, no control characters: safe as a quoted script value."""
    return bool(value) and value == value.strip() and not re.search(r"[\x00-\x1f\x7f]", value)


def check_machine(machine: str) -> None:
    """The id of the machine an upgrade step is rendered for (components/cluster/upgrade.py passes the VM
    resource's id): a replaced machine changes its steps' text, and so re-runs only its own node's steps."""
    if not is_plain_text(machine) or len(machine) > 200:
        raise ValueError(f"machine id {machine!r} must be 1-200 printable characters")


def check_version(value: str, what: str = "version") -> None:
    require(bool(VERSION.match(value)), f"{what} {value!r} must be MAJOR.MINOR.PATCH")


def check_image(value: str, what: str = "image") -> None:
    require(bool(IMAGE.match(value)), f"{what} {value!r} is not a pinned image reference")


def check_node_name(value: str, what: str = "node name") -> None:
    """A Node's name (or a Pod's, such as etcd-<node>): a lower-case DNS subdomain."""
    require(len(value) <= 253 and bool(DNS_SUBDOMAIN.match(value)), f"{what} {value!r} is not a lowercase DNS subdomain")


def check_vm_id(vm_id: int) -> None:
    require(not isinstance(vm_id, bool) and isinstance(vm_id, int) and 100 <= vm_id <= 999_999_999,
            f"vm id {vm_id!r} must be 100-999999999 (Proxmox VMIDs)")


def check_timeout(seconds: int) -> None:
    require(not isinstance(seconds, bool) and isinstance(seconds, int) and seconds > 0,
            f"timeout {seconds!r} must be a positive number of seconds")
