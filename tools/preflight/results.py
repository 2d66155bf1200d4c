"""What a preflight check finds, how it is shown (one line per check, grouped by host, each failure with its fix) and
the progress display while the hosts are read."""
from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import TextIO

PASS, WARN, FAIL = "PASS", "WARN", "FAIL"


@dataclass(frozen=True)
class Result:
    host: str
    check: str
    status: str               # PASS | WARN | FAIL
    detail: str
    fix: str = ""


def report(results: list[Result]) -> str:
    lines = []
    for host in dict.fromkeys(r.host for r in results):
        lines.append(host)
        for r in (r for r in results if r.host == host):
            lines.append(f"  {r.status}  {r.check}: {r.detail}")
            if r.fix and r.status != PASS:
                lines.append(f"        fix: {r.fix}")
    failed = sum(r.status == FAIL for r in results)
    warned = sum(r.status == WARN for r in results)
    lines.append(f"{len(results)} checks: {failed} failed, {warned} warnings")
    return "\n".join(lines)


class Progress:
    """On a terminal one line, rewritten as each host is done (how many are done, which are still read); elsewhere
    (a log, CI) one line per host when it is done. Thread-safe: the hosts finish in parallel."""

    def __init__(self, hosts: list[str], stream: TextIO | None = None):
        self.pending = list(hosts)
        self.total = len(hosts)
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty()
        self.lock = threading.Lock()
        if self.live:
            self._draw()

    def _draw(self) -> None:
        waiting = ", ".join(self.pending[:4]) + (f" and {len(self.pending) - 4} more" if len(self.pending) > 4 else "")
        self.stream.write(f"\r\x1b[K[{self.total - len(self.pending)}/{self.total}] reading {waiting}")
        self.stream.flush()

    def done(self, host: str, results: list[Result]) -> None:
        with self.lock:
            if host in self.pending:
                self.pending.remove(host)
            failed = sum(r.status == FAIL for r in results)
            if self.live:
                if self.pending:
                    self._draw()
                else:
                    self.stream.write("\r\x1b[K")
                    self.stream.flush()
            else:
                outcome = f"{len(results)} checks, {failed} failed" if results else "read"
                self.stream.write(f"[{self.total - len(self.pending)}/{self.total}] {host}: {outcome}\n")
