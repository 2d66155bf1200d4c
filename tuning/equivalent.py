"""One SDK function replaced, for a program run, by one that gives the same answers with less work: the check that
the SDK's function is the one read (the SHA-256 of its source), the replacement where the SDK's own is in place, and
putting it back. Used by unknowns.py and source_positions.py; each says what it leaves out and why it is equal."""
from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pulumi


class Equivalent:
    def __init__(self, module: ModuleType, name: str, ours: Callable[..., Any], read: tuple[Callable[..., Any], ...],
                 sha256: str, unreplaced: str) -> None:
        """module.name is the SDK's function that callers look up when they call; read: the SDK functions whose
        behaviour `ours` reproduces (the first is module.name), and sha256 the digest of their sources,
        concatenated, in the SDK pinned in requirements.txt; unreplaced: what keeping the SDK's own costs."""
        self.module, self.name, self.ours, self.read = module, name, ours, read
        self.sha256, self.unreplaced = sha256, unreplaced
        self.sdk = getattr(module, name)

    def matches(self) -> bool:
        """Whether the running SDK's functions are the ones `ours` was written against."""
        try:
            source = "".join(inspect.getsource(function) for function in self.read)
        except (OSError, TypeError):
            return False
        return hashlib.sha256(source.encode()).hexdigest() == self.sha256

    def install(self) -> bool:
        """`ours` in place of the SDK's function, where the SDK's is in place (a harness's stand-in, such as
        tools/mock/sdk.py's, stays); with an SDK other than the one read, nothing changes and the run says so.
        Returns whether `ours` is in place."""
        current = getattr(self.module, self.name)
        if current is self.ours:
            return True
        if current is not self.sdk:
            return False
        if not self.matches():
            pulumi.log.warn(f"this Pulumi SDK's {self.name} is not the one {self.ours.__module__.replace('.', '/')}.py "
                            f"was written against: its own runs (correct, {self.unreplaced})")
            return False
        setattr(self.module, self.name, self.ours)
        return True

    def uninstall(self) -> None:
        """The SDK's own function again."""
        if getattr(self.module, self.name) is self.ours:
            setattr(self.module, self.name, self.sdk)
