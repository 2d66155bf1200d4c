"""The stack trace the Python SDK sends with every registration, computed without the work whose results it drops.

At each registration, pulumi/runtime/resource.py _get_stack_trace calls traceback.extract_stack(): for every frame of
the Python stack it checks the file in linecache (a stat) and reads the frame's source line; it then keeps, of the
frames below the resource's own constructor (the third `__init__` from the top), only each file's URI
(pathlib.Path(filename).as_uri(), made again for every frame) and line number. The program registers its resources
from deeper stacks than a flat program (components, waves, node steps), so this grew with the stack's depth: a
tenth of a 300-node run's CPU under tools.bench (sampled with py-spy).

stack_trace() below walks the same frames (sys._getframe and f_back, as traceback.walk_stack does, as far as
sys.tracebacklimit lets extract_stack go), applies the same rule for where the resource's caller starts, and builds
the same message: a SourcePosition of the file's URI and the frame's f_lineno, none where the file name is empty or
the URI cannot be made. What it leaves out is what the SDK discards: the source lines and the stat of each file, and
it makes each file's URI once. tests/tuning/test_source_positions.py compares its messages with the SDK's, at every
registration of a program run. REPLACEMENT puts it in place where the SDK's functions are the ones read here (their
sources' SHA-256) and the SDK's own is in place (tools/mock/sdk.py swaps in one that computes nothing for the tests'
runs, which stays); any other SDK keeps its own, with a warning (equivalent.py).
"""
from __future__ import annotations

import itertools
import pathlib
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

from pulumi.runtime import resource as _resource
from pulumi.runtime.proto import source_pb2

from .equivalent import Equivalent

# inspect.getsource of pulumi.runtime.resource _get_stack_trace and _get_source_position_for_frame, concatenated, of the
# SDK pinned in requirements.txt (pulumi==3.272.0).
STACK_TRACE_SHA256 = "0d11a1e45eee2efcb3d459373346c57b6e3f9b3a84c7600c3922034c45449c5c"
# The resource's constructor is the third `__init__` from the top: Resource's, CustomResource's or
# ComponentResource's, then the concrete class's (the SDK's comment in _get_stack_trace).
_CONSTRUCTORS = 3
_uris: dict[str, str | None] = {}


def _uri(filename: str) -> str | None:
    """pathlib.Path(filename).as_uri(), or None where the SDK's try gives up. A relative path's ValueError is a
    function of the name alone, so each file's answer is made once; any other exception (a RecursionError near the
    limit, an interrupt) gives None for this frame only, as the SDK's catch does, and is not remembered."""
    try:
        return _uris[filename]
    except KeyError:
        pass
    try:
        uri: str | None = pathlib.Path(filename).as_uri()
    except ValueError:
        uri = None
    except BaseException:       # the SDK catches everything here too (_get_source_position_for_frame)
        return None
    _uris[filename] = uri
    return uri


def _walk(frame: FrameType | None) -> Iterator[FrameType]:
    """traceback.walk_stack without the line numbers: the frame and every one that called it, innermost first."""
    while frame is not None:
        yield frame
        frame = frame.f_back


def stack_trace() -> Any:
    """_get_stack_trace's message for the registration being made: the frames that called the resource's
    constructor, the innermost first."""
    limit = getattr(sys, "tracebacklimit", None)       # what extract_stack reads when given no limit
    if limit is not None and limit <= 0:
        return REPLACEMENT.sdk()      # no frame to look at: the SDK's own answer (3.272.0 fails on its unset loop variable)
    walk = itertools.islice(_walk(sys._getframe(0)), limit)
    constructors = 0
    for frame in walk:
        if frame.f_code.co_name == "__init__":
            constructors += 1
            if constructors == _CONSTRUCTORS:
                break
    else:
        return source_pb2.StackTrace()
    frames = []
    for frame in walk:          # the frames below the constructor, within the same limit
        filename, line = frame.f_code.co_filename, frame.f_lineno
        uri = _uri(filename) if filename != "" and line is not None else None
        frames.append(source_pb2.StackFrame(pc=None if uri is None else source_pb2.SourcePosition(uri=uri, line=line)))
    return source_pb2.StackTrace(frames=frames)


REPLACEMENT = Equivalent(_resource, "_get_stack_trace", stack_trace,
                         (_resource._get_stack_trace, _resource._get_source_position_for_frame), STACK_TRACE_SHA256,
                         "slower on deep stacks")
