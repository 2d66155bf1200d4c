"""Immutable backup buckets (config `backup.*.objectLock`, #37 item 6): the check's AWS Signature Version 4 against
AWS's published vectors, its reading of S3's ObjectLockConfiguration, and the whole rendered step (bash, then the
node's python3) against a local S3 stand-in that verifies the request's signature and answers as S3 does; the
program declares the step only where the stack asks for it."""
from __future__ import annotations

import http.server
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from render import backup
from render.s3_object_lock import EMPTY_SHA256, authorization, differences, read_lock
from tests.conftest import hk_prod_values, raw_config
from tools.mock.program import run_program

SUITE_SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


def test_signature_matches_the_sigv4_test_suite_get_vanilla():
    # aws-sig-v4-test-suite get-vanilla: GET / on example.amazonaws.com, 20150830T123600Z, us-east-1, "service".
    assert authorization("GET", "/", "", {"Host": "example.amazonaws.com", "X-Amz-Date": "20150830T123600Z"},
                         EMPTY_SHA256, "AKIDEXAMPLE", SUITE_SECRET, "us-east-1", "service", "20150830T123600Z") == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")


def test_signature_matches_the_s3_reference_get_object_example():
    # Amazon S3 API reference, "Signature Calculations for the Authorization Header", Example: GET Object.
    headers = {"Host": "examplebucket.s3.amazonaws.com", "Range": "bytes=0-9", "x-amz-content-sha256": EMPTY_SHA256,
               "x-amz-date": "20130524T000000Z"}
    assert authorization("GET", "/test.txt", "", headers, EMPTY_SHA256, "AKIAIOSFODNN7EXAMPLE",
                         "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1", "s3", "20130524T000000Z").endswith(
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")


def test_signature_matches_the_s3_reference_get_bucket_lifecycle_example():
    """A subresource without a value, as ?object-lock is: Amazon S3 API reference, Example: GET Bucket Lifecycle."""
    headers = {"Host": "examplebucket.s3.amazonaws.com", "x-amz-content-sha256": EMPTY_SHA256,
               "x-amz-date": "20130524T000000Z"}
    assert authorization("GET", "/", "lifecycle=", headers, EMPTY_SHA256, "AKIAIOSFODNN7EXAMPLE",
                         "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1", "s3", "20130524T000000Z").endswith(
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
        "Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")


def lock_document(enabled: bool = True, mode: str = "COMPLIANCE", days: int | None = 30, years: int | None = None,
                  namespace: bool = True) -> bytes:
    """S3's GetObjectLockConfiguration answer (S3 API reference), with or without its XML namespace."""
    retention = f"<Mode>{mode}</Mode>" + (f"<Days>{days}</Days>" if days else "") + (f"<Years>{years}</Years>" if years else "")
    xmlns = ' xmlns="http://s3.amazonaws.com/doc/2006-03-01/"' if namespace else ""
    return (f'<?xml version="1.0" encoding="UTF-8"?><ObjectLockConfiguration{xmlns}>'
            f"<ObjectLockEnabled>{'Enabled' if enabled else ''}</ObjectLockEnabled>"
            f"<Rule><DefaultRetention>{retention}</DefaultRetention></Rule></ObjectLockConfiguration>").encode()


@pytest.mark.parametrize("document, expected", [
    (lock_document(), []),
    (lock_document(namespace=False), []),
    (lock_document(mode="GOVERNANCE"), ["its default retention mode is GOVERNANCE, not COMPLIANCE"]),
    (lock_document(days=7), ["its default retention is 7 days, not 30 days"]),
    (lock_document(days=None, years=1), ["its default retention is 1 years, not 30 days"]),
    (lock_document(enabled=False), ["Object Lock is not enabled on the bucket"]),
])
def test_the_answer_is_held_against_the_stack(document, expected):
    assert differences(read_lock(document), "compliance", 30) == expected


@dataclass
class StandIn:
    """A local S3 stand-in: checks each request's SigV4 signature with the store's keys, answers `status`/`body`."""
    status: int = 200
    body: bytes = field(default_factory=lock_document)
    requests: list[tuple[str, bool]] = field(default_factory=list)


@contextmanager
def s3_stand_in(state: StandIn) -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path, _, query = self.path.partition("?")
            signed = {name: self.headers[name] for name in ("host", "x-amz-content-sha256", "x-amz-date")}
            expected = authorization("GET", path, f"{query}=", signed, EMPTY_SHA256, "AKIASTANDIN", "stand-in-secret",
                                     "us-east-1", "s3", self.headers["x-amz-date"])
            state.requests.append((self.path, self.headers["Authorization"] == expected))
            self.send_response(state.status)
            self.end_headers()
            self.wfile.write(state.body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def run_check(endpoint: str, mode: str = "compliance", days: int = 30) -> subprocess.CompletedProcess[str]:
    store = backup.ObjectStore(endpoint=endpoint, bucket="velero-hk-prod", region="us-east-1", prefix="hk-prod",
                               provider="minio", object_lock=backup.ObjectLock(mode=mode, days=days))
    return subprocess.run(["bash", "-c", backup.render_object_lock_check(store)], input="AKIASTANDIN\nstand-in-secret\n",
                          capture_output=True, text=True, timeout=60)


def test_the_step_asks_the_store_signed_and_passes_on_the_stacks_retention():
    state = StandIn()
    with s3_stand_in(state) as endpoint:
        result = run_check(endpoint)
    assert result.returncode == 0, result.stderr
    assert state.requests == [("/velero-hk-prod?object-lock", True)]
    assert "Object Lock enabled, default retention COMPLIANCE 30 days" in result.stdout


@pytest.mark.parametrize("status, body, fragment", [
    (200, lock_document(days=7), "its default retention is 7 days, not 30 days"),
    (404, b"<Error><Code>ObjectLockConfigurationNotFoundError</Code></Error>", "Object Lock is not enabled"),
    (403, b"<Error><Code>AccessDenied</Code></Error>", "s3:GetBucketObjectLockConfiguration"),
    (None, b"", "not reached"),
])
def test_the_step_fails_on_any_difference(status, body, fragment):
    if status is None:                       # nothing listens there: a clean error, no traceback
        with s3_stand_in(StandIn()) as endpoint:
            pass
        result = run_check(endpoint)
        assert "Traceback" not in result.stderr
    else:
        with s3_stand_in(StandIn(status=status, body=body)) as endpoint:
            result = run_check(endpoint)
    assert result.returncode == 1 and fragment in result.stderr, result.stderr


def test_the_keys_travel_on_stdin_only_and_the_step_exists_only_where_asked(hk_recording):
    assert not [r for r in hk_recording.resources if "-object-lock-" in r.name]
    values = hk_prod_values()
    values["backup"]["primary"]["objectLock"] = {"mode": "compliance", "days": 30}
    recording = run_program(raw_config(values))
    step = recording.named("hk-prod-backup-object-lock-primary")
    assert type(step.inputs["stdin"]).__name__ == "Secret"
    assert not [r for r in recording.resources if r.name == "hk-prod-backup-object-lock-offsite"]


def test_a_ceph_store_with_object_lock_is_warned_about():
    from config.loader import load
    values = hk_prod_values()
    values["backup"]["offsite"]["objectLock"] = {"mode": "governance", "days": 14}
    assert values["backup"]["offsite"]["provider"] == "ceph"
    warnings = [str(w) for w in load(raw_config(values)).warnings]
    assert any(w.startswith("backup.offsite.objectLock: ") and "test backup" in w for w in warnings), warnings


def test_a_lock_on_the_store_this_cluster_only_reads_is_refused():
    from tests.conftest import problems
    values = hk_prod_values()
    values["backup"]["recoverFrom"] = {**values["backup"]["offsite"], "objectLock": {"mode": "compliance", "days": 30}}
    assert any(p.startswith("backup.recoverFrom.objectLock: ") and "remove it" in p for p in problems(values))
