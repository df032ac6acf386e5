"""Account mappings and time zones given as task options: ``{account: value}`` from a dict or an ``account,value``
file (``customers``, ``customer_types``, ``exempt_accounts``), and an IANA zone name. Re-exported by
:mod:`sectorflow_aml.reports`, where they lived before 30 Nov 2026."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo

from sectorflow import ConfigError, read_text


def read_account_file(path: str | Path, name: str, default: str | None = None) -> dict[str, str]:
    """``{account: value}`` from a text file of ``account,value`` lines, as the options ``customers``,
    ``customer_types`` and ``exempt_accounts`` take it (a bank's mapping of thousands of accounts does not fit on a
    command line): UTF-8 (a byte-order mark ignored) or GBK/GB18030/UTF-16 (detected), blank and ``#`` comment lines ignored, a first line
    ``account,...`` (or ``account_id``, ``acct``) taken as a header. ``default``: the value of a line with an account
    alone (``None``: such a line is an error).

    Raises:
        ConfigError: naming option ``name``: a missing file, or lines without an account (or without a value when
            there is no ``default``), by line number.
    """
    source = Path(path)
    if not source.is_file():
        raise ConfigError(f"{name}={str(path)!r}: no such file; give a file of 'account,value' lines (or the "
                          f"option's value itself: see the option's help).")
    out: dict[str, str] = {}
    bad: list[int] = []
    for line_no, line in enumerate(read_text(source, f"{name} file", error=ConfigError).splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        account, _, value = (part.strip() for part in line.partition(","))
        if line_no == 1 and account.lower() in ("account", "account_id", "acct"):
            continue  # a header
        value = value or default or ""
        if not account or not value:
            bad.append(line_no)
        out[account] = value
    if bad:
        raise ConfigError(f"{name}={str(path)!r}: line(s) {', '.join(map(str, bad[:10]))} are not "
                          f"'account,value'.")
    return out


def account_map(name: str, value: object, example: str) -> dict[str, str]:
    """``value`` as a ``{str: str}`` dict (``None``: empty); a ``str`` or ``Path`` is a file read by
    :func:`read_account_file`.

    Raises:
        ConfigError: naming option ``name``: not a mapping, a missing file, or a line without a value.
    """
    if value is None:
        return {}
    if isinstance(value, (str, Path)):
        value = read_account_file(value, name)
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) and k and v
                                                 for k, v in value.items()):
        raise ConfigError(f"{name} must be a mapping of account ids to non-empty strings, e.g. {example}; got "
                          f"{type(value).__name__}.")
    return dict(value)


def parse_report_zone(name: str | tzinfo) -> tzinfo:
    """``name`` as a time zone (a tzinfo is taken as it is).

    Raises:
        ConfigError: not an IANA time zone name.
    """
    if isinstance(name, tzinfo):
        return name
    try:
        return ZoneInfo(name)
    except Exception as exc:  # ZoneInfoNotFoundError, ValueError, TypeError
        raise ConfigError(f"Unknown time zone {name!r}; use an IANA name such as 'Asia/Shanghai'.") from exc
