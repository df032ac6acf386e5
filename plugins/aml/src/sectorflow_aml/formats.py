"""The fixed-column CSV formats of public AML data, and the CSV record plumbing every CSV reader here shares.

- ``amlsim``: IBM AMLSim ``transactions.csv`` (``sourceNodeId,targetNodeId,value,time``). ``time`` is a simulation
  step of one day counted from ``base_date`` (AMLSim's ``conf.json`` ``general.base_date`` default, 2017-01-01, is
  step 0). AMLSim amounts carry no unit; the currency is configurable and defaults to CNY, the ``Transaction``
  default. Ids are ``amlsim-<row>``.
- ``amlworld``: IBM "Transactions for Anti Money Laundering" (Altman et al., NeurIPS 2023) ``*_Trans.csv``, whose
  header has two columns named ``Account``; they are read by position. The paid side (``Amount Paid``, ``Payment
  Currency``) is the transaction amount. Ids are ``amlworld-<row>``.
- ``amlgentex``: AMLGentex ``transactions.csv.gz`` (AI Sweden et al., arXiv:2506.13989), read by column name; see
  :func:`amlgentex_reader` for what its external source and sink, its opening balances and its steps become. Its
  label columns (``isSAR``, ``patternID``, ``modelType``, ``typology``) are never read.

Both readers number rows by line after the header (a blank line keeps its number), so ids do not move. Every name
here is also importable from :mod:`sectorflow_aml.loaders`, which registers these readers (``READERS``) and
documents the reader convention.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from sectorflow import ConfigError, InvalidInputError, csv_file_records, open_text

from .fx import is_iso4217
from .schema import EARLIEST, Channel, Transaction, id_is_printable, latest_timestamp, trusted_transaction

Record = dict[str, Any]
Reader = Callable[[Any], Iterator[tuple[int, Any]]]
"""``reader(source) -> Iterator[(row, record)]``: a record is a raw dict, a ``Transaction`` (the typed AMLSim reader)
or an ``InvalidInputError`` for a row that cannot be read (see the module docstring)."""

_AMOUNT = re.compile(r"(?:[1-9][0-9]{0,14}|0)(?:\.[0-9]{1,4})?")
"""Amount text the typed AMLSim reader takes without pydantic: plain decimals below 10^15 with at most 4 places."""

AMLSIM_HEADER = ("sourceNodeId", "targetNodeId", "value", "time")
AMLSIM_BASE_DATE = date(2017, 1, 1)
"""AMLSim's default ``general.base_date`` (the date of step 0) in its ``conf.json``."""

AMLWORLD_HEADER = ("Timestamp", "From Bank", "Account", "To Bank", "Account", "Amount Received",
                   "Receiving Currency", "Amount Paid", "Payment Currency", "Payment Format", "Is Laundering")

AMLWORLD_CURRENCIES: dict[str, str] = {
    "US Dollar": "USD", "Euro": "EUR", "Yuan": "CNY", "Yen": "JPY", "UK Pound": "GBP", "Rupee": "INR",
    "Ruble": "RUB", "Canadian Dollar": "CAD", "Australian Dollar": "AUD", "Swiss Franc": "CHF",
    "Mexican Peso": "MXN", "Brazil Real": "BRL", "Shekel": "ILS", "Saudi Riyal": "SAR",
}
"""AMLworld currency names to ISO 4217. ``Bitcoin`` has no ISO 4217 code, so it is passed on unmapped and such rows
fail validation as an unknown currency (skip them with ``on_error="skip"``, or map it yourself with
``amlworld_reader(currencies=...)``)."""

AMLWORLD_CHANNELS: dict[str, str] = {
    "Cash": "cash_deposit", "Wire": "wire", "ACH": "ach", "Cheque": "cheque", "Credit Card": "card",
    "Reinvestment": "transfer", "Bitcoin": "other",
}
"""AMLworld ``Payment Format`` to ``Channel``. AMLworld does not say which side handled the cash; ``Cash`` is read as
cash paid in to the receiving account (``cash_deposit``). Override with ``amlworld_reader(channels=...)``."""


def _header(source: Any, records: Iterator[tuple[int, list[str] | InvalidInputError]],
            what: str = "CSV") -> tuple[tuple[str, ...], int]:
    """The first record of ``records`` (:func:`sectorflow.csv_records`) as a header, names stripped, and its line;
    ``((), 0)`` for a file without one (0 bytes or blank lines only): it has no rows, exactly as an empty JSON-lines
    file (the caller yields nothing; ``sectorflow run`` warns that the file has no rows).

    Raises:
        InvalidInputError: the header line has broken quoting (naming the file and line).
    """
    for line, first in records:
        if isinstance(first, InvalidInputError):
            reason = first.details[0]["reason"]
            raise InvalidInputError(f"The {what} header of {source} cannot be read: {reason}.",
                                    details={"source": str(source), "line": line})
        return tuple(h.strip() for h in first), line
    return (), 0


def _broken(source: Any, row: int, problem: InvalidInputError) -> InvalidInputError:
    """A record with broken quoting from :func:`sectorflow.csv_records`, numbered as row ``row``."""
    detail = problem.details[0]
    return InvalidInputError(f"{source}: row {row}: {detail['reason']}.", details=[{**detail, "row": row}])


def amlsim_reader(base_date: date = AMLSIM_BASE_DATE, currency: str = "CNY", channel: str = "transfer",
                  id_prefix: str = "amlsim-", typed: bool = False) -> Reader:
    """A reader for AMLSim ``transactions.csv`` (``sourceNodeId,targetNodeId,value,time``).

    ``time`` (a step of one day) becomes ``base_date + time days`` at 00:00 UTC; a step that is not an integer is
    passed on as found so that validation reports the row. Source: IBM/AMLSim (Suzumura and Kanezashi, 2021).

    ``typed=True`` (what ``sectorflow run aml --format amlsim`` and :func:`load_transactions` use): a row whose
    cells pass a strict check (a plain decimal amount above 0 and below 10^15 with at most 4 places, an integer
    step inside the ``Transaction`` time bounds, non-empty account ids) is yielded as a :class:`Transaction` built without
    pydantic's per-row validation (:func:`sectorflow_aml.schema.trusted_transaction`; equal, field for field, to what
    ``Transaction.model_validate`` makes of the raw record); every other row is yielded as the raw record, so that
    validation reports it exactly as before (same field, reason and row number).

    Raises (while iterating):
        ConfigError: the header is not AMLSim's.
    """
    start = datetime(base_date.year, base_date.month, base_date.day, tzinfo=timezone.utc)
    probe: Transaction | None = None
    if typed and id_prefix == id_prefix.strip():
        try:  # the fixed columns (currency, channel) are checked once here; if they fail, every row goes the slow way
            probe = Transaction.model_validate({"transaction_id": f"{id_prefix}1", "timestamp": start.isoformat(),
                                                "sender_account": "a", "receiver_account": "b", "amount": "1",
                                                "currency": currency, "channel": channel})
        except ValidationError:
            probe = None
    fast = probe is not None
    code = probe.currency if probe is not None else currency
    kind = probe.channel if probe is not None else channel
    amount_text = _AMOUNT.fullmatch
    printable = id_is_printable

    def read_amlsim(source: Any) -> Iterator[tuple[int, Record | Transaction | InvalidInputError]]:
        stamps: dict[str, tuple[str, datetime | None]] = {}
        latest = latest_timestamp()  # a later step goes to validation, which refuses it (in the future)
        with open_text(source) as handle:
            records = csv_file_records(source, handle)
            header, first = _header(source, records, "AMLSim")
            if not first:  # an empty file: no rows, as an empty JSON-lines file
                return
            if header[:4] != AMLSIM_HEADER:
                raise ConfigError(f"{source} is not an AMLSim transaction file: header {','.join(header)!r}, "
                                  f"expected {','.join(AMLSIM_HEADER)!r}.")
            for line, cells in records:
                row = line - first  # rows numbered by line after the header (a blank line keeps its number)
                if isinstance(cells, InvalidInputError):  # broken quoting: a bad row, reading resumes on the next line
                    yield row, _broken(source, row, cells)
                    continue
                if len(cells) < 4:
                    cells = cells + [""] * (4 - len(cells))
                step = cells[3].strip()
                stamp = stamps.get(step)
                if stamp is None:
                    try:
                        when = start + timedelta(days=int(step))
                        stamp = stamps[step] = (when.isoformat(), when if EARLIEST <= when < latest else None)
                    except (ValueError, OverflowError):
                        stamp = stamps[step] = (step, None)
                sender = cells[0].strip()
                receiver = cells[1].strip()
                amount = cells[2].strip()
                if fast and stamp[1] is not None and sender and receiver and amount_text(amount) \
                        and printable(sender) and printable(receiver):
                    value = Decimal(amount)
                    if value:
                        yield row, trusted_transaction(f"{id_prefix}{row}", stamp[1], sender, receiver, value, code,
                                                       kind)
                        continue
                yield row, {"transaction_id": f"{id_prefix}{row}", "timestamp": stamp[0],
                            "sender_account": sender, "receiver_account": receiver,
                            "amount": amount, "currency": currency, "channel": channel}

    return read_amlsim


def amlworld_reader(currencies: Mapping[str, str] | None = None, channels: Mapping[str, str] | None = None,
                    qualify_accounts: bool = True, id_prefix: str = "amlworld-") -> Reader:
    """A reader for AMLworld ``*_Trans.csv`` (IBM "Transactions for Anti Money Laundering", Altman et al. 2023).

    Columns are read by position (the header repeats ``Account``). ``Timestamp`` is ``YYYY/MM/DD HH:MM`` (UTC);
    amounts are the paid side. Accounts become ``<bank>:<account>`` (``qualify_accounts=True``, as IBM's own
    formatting script keys accounts by bank and account) or the bare account id. Currency names and payment formats
    are mapped by :data:`AMLWORLD_CURRENCIES` and :data:`AMLWORLD_CHANNELS` (extended or overridden by
    ``currencies`` and ``channels``); unmapped names pass through and fail validation.

    Raises (while iterating):
        ConfigError: the header is not AMLworld's.
    """
    currency_map = {**AMLWORLD_CURRENCIES, **(currencies or {})}
    channel_map = {**AMLWORLD_CHANNELS, **(channels or {})}

    def read_amlworld(source: Any) -> Iterator[tuple[int, Record | InvalidInputError]]:
        with open_text(source) as handle:
            records = csv_file_records(source, handle)
            header, first = _header(source, records, "AMLworld")
            if not first:  # an empty file: no rows, as an empty JSON-lines file
                return
            if header != AMLWORLD_HEADER:
                raise ConfigError(f"{source} is not an AMLworld transaction file: header {','.join(header)!r}, "
                                  f"expected {','.join(AMLWORLD_HEADER)!r}.")
            for line, cells in records:
                row = line - first  # rows numbered by line after the header (a blank line keeps its number)
                if isinstance(cells, InvalidInputError):  # broken quoting: a bad row, reading resumes on the next line
                    yield row, _broken(source, row, cells)
                    continue
                c = [x.strip() for x in cells] + [""] * (11 - len(cells))
                try:
                    timestamp: Any = datetime.strptime(c[0], "%Y/%m/%d %H:%M").isoformat()
                except ValueError:
                    timestamp = c[0]
                sender = f"{c[1]}:{c[2]}" if qualify_accounts else c[2]
                receiver = f"{c[3]}:{c[4]}" if qualify_accounts else c[4]
                yield row, {"transaction_id": f"{id_prefix}{row}", "timestamp": timestamp,
                            "sender_account": sender, "receiver_account": receiver, "amount": c[7],
                            "currency": currency_map.get(c[8], c[8]), "channel": channel_map.get(c[9], c[9]),
                            "sender_bank": c[1] or None, "receiver_bank": c[3] or None}

    return read_amlworld


AMLGENTEX_COLUMNS = ("tx_id", "step", "type", "amount", "nameOrig", "nameDest")
"""The AMLGentex transaction columns the reader uses (the others, labels included, are never read)."""
AMLGENTEX_BASE_DATE = date(2023, 1, 1)
"""The date of AMLGentex step 0 (its ``scripts/generate.py`` runs steps of one day from 2023-01-01 here)."""
AMLGENTEX_SOURCE = "-2"
AMLGENTEX_SINK = "-1"


def amlgentex_reader(base_date: date = AMLGENTEX_BASE_DATE, currency: str = "CNY",
                     id_prefix: str = "amlgentex-") -> Reader:
    """A reader for AMLGentex ``transactions.csv(.gz)`` (``tx_id,step,type,amount,nameOrig,nameDest,...``).

    - Time: ``step`` is the day (``base_date + step``); within a day the row's ``tx_id`` (the generator log's running
      number, increasing in its order) gives the time, ``tx_id`` microseconds past midnight UTC, so time order is
      the log's order and the step stays the resolution (a log of under 86 billion rows stays within its day).
      Because the time comes from the row itself, not from its place in the file, a log cut into several files
      (one per day, as a bank's daily exports, then ``sectorflow run --state``) gives each transaction the same time
      as the whole log does. A ``tx_id`` that is not a whole number falls back to the row's position in its step.
    - External ends: a row from the external source ``-2`` (salaries) is a ``cash_deposit`` booked on the receiving
      account alone (sender = receiver = ``nameDest``); a row to the external sink ``-1`` (spending, type ``CASH``
      or ``TRANSFER``) is a ``cash_withdrawal`` booked on the paying account alone. So the source and the sink do
      not become two hub accounts that every customer pays or is paid by.
    - ``INITALBALANCE`` rows (sic; the opening balance of every account at step 0) are **skipped**: they are the
      state the simulation starts from, not money moving in the period (as cash deposits they would be 4,000
      same-day large cash deposits on day 0).
    - Ids are ``<id_prefix><tx_id>``; amounts are read in ``currency``, by default CNY as the AMLSim reader does, so
      that a run needs no exchange-rate table (the generator's ``data.yaml`` works in SEK: pass ``currency="SEK"``
      and an ``fx_rates`` table to convert; the account model is scale-free, the rules' thresholds are not).
      Rows with amount 0 (the generator writes a few) fail validation and are reported as bad rows.
    - The label columns (``isSAR``, ``patternID``, ``modelType``, ``typology``) and the generator's balances and KYC
      columns are not read.

    Yields :class:`Transaction` objects for well-formed rows and raw records (reported by validation) otherwise.

    Raises (while iterating):
        ConfigError: the header lacks one of :data:`AMLGENTEX_COLUMNS`.
    """
    start = datetime(base_date.year, base_date.month, base_date.day, tzinfo=timezone.utc)
    deposit, withdrawal, transfer = Channel.cash_deposit, Channel.cash_withdrawal, Channel.transfer
    code = currency.strip().upper()
    if not is_iso4217(code):
        raise ConfigError(f"currency={currency!r} is not an ISO 4217 code (e.g. SEK, EUR).")
    amount_text = _AMOUNT.fullmatch
    printable = id_is_printable

    def read_amlgentex(source: Any) -> Iterator[tuple[int, Record | Transaction | InvalidInputError]]:
        seen: dict[str, int] = {}  # rows so far per step: the microsecond within the day when tx_id is no number
        latest = latest_timestamp()  # a later step goes to validation, which refuses it (in the future)
        with open_text(source) as handle:
            records = csv_file_records(source, handle)
            header, first = _header(source, records, "AMLGentex")
            missing = [c for c in AMLGENTEX_COLUMNS if c not in header]
            if missing:
                raise ConfigError(f"{source} is not an AMLGentex transaction file: it lacks column(s) "
                                  f"{', '.join(missing)} (header {','.join(header)!r}).")
            at = [header.index(c) for c in AMLGENTEX_COLUMNS]
            width = max(at) + 1
            for line, cells in records:
                row = line - first
                if isinstance(cells, InvalidInputError):
                    yield row, _broken(source, row, cells)
                    continue
                if len(cells) < width:
                    cells = cells + [""] * (width - len(cells))
                tx_id, step, kind, amount, sender, receiver = (cells[i].strip() for i in at)
                if kind == "INITALBALANCE":
                    continue
                if tx_id.isdigit() and len(tx_id) < 12:
                    k = int(tx_id)
                else:
                    k = seen.get(step, 0)
                    seen[step] = k + 1
                channel = transfer
                if sender == AMLGENTEX_SOURCE:
                    sender, channel = receiver, deposit
                elif receiver == AMLGENTEX_SINK:
                    receiver, channel = sender, withdrawal
                tid = f"{id_prefix}{tx_id or row}"
                try:
                    when: Any = start + timedelta(days=int(step), microseconds=k)
                    ok = EARLIEST <= when < latest
                except (ValueError, OverflowError):
                    when, ok = step, False
                if ok and sender and receiver and amount_text(amount) and printable(sender) \
                        and printable(receiver) and printable(tid):
                    value = Decimal(amount)
                    if value:
                        yield row, trusted_transaction(tid, when, sender, receiver, value, code, channel)
                        continue
                yield row, {"transaction_id": tid, "timestamp": when if isinstance(when, str) else when.isoformat(),
                            "sender_account": sender, "receiver_account": receiver, "amount": amount,
                            "currency": code, "channel": channel.value}

    return read_amlgentex
