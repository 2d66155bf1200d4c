"""How a bash script travels as one remote command line, and back (for synth and tests)."""
from __future__ import annotations

HEREDOC_END = "__HYBRID_CLUSTER_SCRIPT_END__"
_PREFIX = f"bash -s <<'{HEREDOC_END}'\n"


def bash_command(script: str) -> str:
    """Run `script` with bash whatever the login shell is (remote.Command runs commands through it).

    The quoted heredoc delimiter keeps the login shell from expanding anything inside the script.
    """
    if any(line == HEREDOC_END for line in script.splitlines()):
        raise ValueError("script contains the heredoc delimiter line")
    return f"{_PREFIX}{script.rstrip()}\n{HEREDOC_END}\n"


def script_from_bash_command(command: str) -> str | None:
    """The script inside a command made by bash_command, or None for any other command."""
    if not command.startswith(_PREFIX):
        return None
    body = command[len(_PREFIX):]
    end = f"\n{HEREDOC_END}\n"
    if not body.endswith(end):
        return None
    return body[: -len(end)] + "\n"
