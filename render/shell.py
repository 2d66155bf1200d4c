"""How a bash script travels as one remote command line, and back (for synth and tests).

remote.Command hands its command to the login shell of the SSH user (sh or bash) and its `stdin` input
to that command. Scripts therefore arrive as an argument, not on standard input, which stays free for
secrets (join credentials), and run under `sudo -n bash` whatever the login shell is: the admin user
has password-less sudo (render/linux_node.py).
"""
from __future__ import annotations

HEREDOC_END = "__HYBRID_CLUSTER_SCRIPT_END__"
_PREFIX = f"sudo -n bash -c \"$(cat <<'{HEREDOC_END}'\n"
_SUFFIX = f"\n{HEREDOC_END}\n)\" hybrid-cluster-script\n"


def bash_command(script: str) -> str:
    """The command line that runs `script` as root with bash, leaving stdin to the script.

    The quoted heredoc delimiter keeps the login shell from expanding anything inside the script; the
    command substitution turns it into bash's -c argument (well under Linux's 128 KiB per argument).
    """
    if any(line == HEREDOC_END for line in script.splitlines()):
        raise ValueError("script contains the heredoc delimiter line")
    body = script.rstrip("\n")
    if len(body.encode()) > 100_000:
        raise ValueError("script too long for one command-line argument")
    return f"{_PREFIX}{body}{_SUFFIX}"


def script_from_bash_command(command: str) -> str | None:
    """The script inside a command made by bash_command, or None for any other command."""
    if not (command.startswith(_PREFIX) and command.endswith(_SUFFIX)):
        return None
    return command[len(_PREFIX): -len(_SUFFIX)] + "\n"
