"""The check that a backup bucket is immutable as its stack says (config `backup.*.objectLock`): a program the first
control-plane node runs with its own python3 (cloud-init's interpreter, on every node), standard library only, so
that nothing is installed for it. It asks the store for the bucket's Object Lock configuration (S3
GetObjectLockConfiguration: `GET /<bucket>?object-lock`, path-style as Velero's locations use) signed with AWS
Signature Version 4, and fails unless lock is enabled with the stack's default retention mode and days.

The signing follows AWS's "Signature Version 4 signing process" (canonical request, string to sign, derived key) and
is tested against AWS's published vectors: the SigV4 test suite's get-vanilla and the S3 API reference's "Example:
GET Object" (tests/program/test_object_lock.py). The response is S3's ObjectLockConfiguration document (S3 API reference,
GetObjectLockConfiguration): ObjectLockEnabled, and Rule/DefaultRetention with Mode and Days or Years.

Run as `python3 -c PROGRAM ENDPOINT BUCKET REGION MODE DAYS CA_PEM` with the access key and the secret key on
stdin, one per line; it prints what it found and exits 1 on any difference. Pure functions above `main`.
"""
from __future__ import annotations

import datetime
import hashlib
import hmac
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
S3_NAMESPACE = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def authorization(method: str, path: str, query: str, headers: dict[str, str], payload_sha256: str,
                  access_key: str, secret_key: str, region: str, service: str, amz_date: str) -> str:
    """The Authorization header of a request whose `headers` (names in any case, values as sent) are all signed.
    `path` is already URI-encoded; `query` is the canonical query string (names sorted, each `name=value`)."""
    names = sorted(name.lower() for name in headers)
    values = {name.lower(): " ".join(value.split()) for name, value in headers.items()}
    canonical = "\n".join([method, path, query, *(f"{name}:{values[name]}" for name in names), "",
                           ";".join(names), payload_sha256])
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret_key}".encode(), amz_date[:8]), region), service), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={';'.join(names)}, Signature={signature}"


def lock_request(endpoint: str, bucket: str, region: str, access_key: str, secret_key: str,
                 now: datetime.datetime) -> urllib.request.Request:
    """The signed GetObjectLockConfiguration request for `bucket` at `endpoint`, path-style."""
    parts = urllib.parse.urlsplit(endpoint)
    path = (parts.path.rstrip("/") + "/" + urllib.parse.quote(bucket, safe="")) or "/"
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    headers = {"host": parts.netloc, "x-amz-content-sha256": EMPTY_SHA256, "x-amz-date": amz_date}
    # The subresource has no value: its canonical form is "object-lock=".
    headers["Authorization"] = authorization("GET", path, "object-lock=", headers, EMPTY_SHA256, access_key,
                                             secret_key, region, "s3", amz_date)
    del headers["host"]             # urllib sends it from the URL, as signed
    return urllib.request.Request(f"{parts.scheme}://{parts.netloc}{path}?object-lock", headers=headers)


def read_lock(document: bytes) -> tuple[bool, str | None, int | None, int | None]:
    """ObjectLockEnabled, and the default retention's mode, days and years (None where absent)."""
    root = ElementTree.fromstring(document)

    def text(path: str) -> str | None:
        found = root.find("/".join(S3_NAMESPACE + part for part in path.split("/")))
        if found is None:                   # some stores answer without the namespace
            found = root.find(path)
        return found.text.strip() if found is not None and found.text else None

    days, years = text("Rule/DefaultRetention/Days"), text("Rule/DefaultRetention/Years")
    return (text("ObjectLockEnabled") == "Enabled", text("Rule/DefaultRetention/Mode"),
            int(days) if days else None, int(years) if years else None)


def differences(found: tuple[bool, str | None, int | None, int | None], mode: str, days: int) -> list[str]:
    enabled, found_mode, found_days, found_years = found
    if not enabled:
        return ["Object Lock is not enabled on the bucket"]
    problems = []
    if found_mode != mode.upper():
        problems.append(f"its default retention mode is {found_mode or 'none'}, not {mode.upper()}")
    if found_days != days:
        held = f"{found_days} days" if found_days else f"{found_years} years" if found_years else "none"
        problems.append(f"its default retention is {held}, not {days} days")
    return problems


def main(argv: list[str]) -> int:
    endpoint, bucket, region, mode, days, ca = argv
    access_key, secret_key = sys.stdin.readline().strip(), sys.stdin.readline().strip()
    # datetime.UTC is Python 3.11's; the nodes' python3 is 3.9 (Rocky 9) or 3.10 (Ubuntu 22.04).
    now = datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017
    request = lock_request(endpoint, bucket, region, access_key, secret_key, now)
    context = ssl.create_default_context(cadata=ca) if ca else ssl.create_default_context()
    # The stack's caCertificate may be the intermediate that signed the store's certificate: trusted as given, as Go's
    # verifier (Velero's) does with any certificate in its pool (OpenSSL's X509_V_FLAG_PARTIAL_CHAIN, 0x80000).
    context.verify_flags |= getattr(ssl, "VERIFY_X509_PARTIAL_CHAIN", 0x80000)
    where = f"{endpoint}/{bucket}"
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            document = response.read()
    except urllib.error.HTTPError as error:
        body = error.read().decode(errors="replace")
        if "ObjectLockConfigurationNotFound" in body:
            print(f"error: {where}: Object Lock is not enabled on the bucket", file=sys.stderr)
        elif error.code == 403:
            print(f"error: {where}: refused (HTTP 403): the key may lack s3:GetBucketObjectLockConfiguration, or the "
                  f"signature was refused (a wrong key, or this node's clock off by minutes): {body[:300]}",
                  file=sys.stderr)
        else:
            print(f"error: {where}: HTTP {error.code}: {body[:500]}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as error:      # DNS, connection, TLS
        print(f"error: {where}: not reached: {error}", file=sys.stderr)
        return 1
    problems = differences(read_lock(document), mode, int(days))
    for problem in problems:
        print(f"error: {where}: {problem}", file=sys.stderr)
    if not problems:
        print(f"{where}: Object Lock enabled, default retention {mode.upper()} {days} days")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
