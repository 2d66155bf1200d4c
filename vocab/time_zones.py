"""Time zone names: the Windows time zone ID that keeps the same civil time as an IANA name (the stack's `timezone`).

The mapping is CLDR's windowsZones (unicode-org/cldr common/supplemental/windowsZones.xml), as tzlocal generates it into
tzlocal/windows_tz.py (`tz_win`: every IANA name CLDR lists, the older and the current spelling of a renamed zone both,
e.g. Asia/Calcutta and Asia/Kolkata), pinned in requirements.txt. Windows takes the ID in `Set-TimeZone -Id`
(https://learn.microsoft.com/powershell/module/microsoft.powershell.management/set-timezone).
"""
from __future__ import annotations

from tzlocal.windows_tz import tz_win

# The stack's default `timezone`, and the zone Velero reads a schedule in without a CRON_TZ prefix.
UTC = "Etc/UTC"


def windows_time_zone(iana: str) -> str | None:
    """The Windows time zone ID of ``iana``; None where CLDR maps none."""
    return tz_win.get(iana)
