"""Currency codes and foreign-exchange conversion with a caller-supplied rate table.

Rates are :class:`~decimal.Decimal` and carry the date they are valid from (``as_of``). A conversion uses the most
recent table dated on or before the transaction's date; a currency pair that no table covers is a
:class:`MissingRateError`, never a guess. sectorflow ships no real exchange rates: :func:`illustrative_table` exists
for demos and tests only and says so in its ``source``.

Which rate a bank must use for the USD equivalent of a foreign-currency amount under PBOC Order 2016 No. 3 was not
found (see ``/work/shared/notes/domain-facts.md`` section 1); supply the rate your institution books with.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path

import pycountry

from sectorflow import ConfigError, read_text

ISO_4217: frozenset[str] = frozenset(c.alpha_3 for c in pycountry.currencies)
"""Alphabetic ISO 4217 codes (the list carried by ``pycountry``, from Debian's iso-codes)."""


def is_iso4217(code: str) -> bool:
    """``True`` when ``code`` is an ISO 4217 alphabetic currency code (upper case, e.g. ``CNY``, ``USD``)."""
    return code in ISO_4217


MINOR_UNITS: dict[str, int] = {
    **dict.fromkeys("BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF".split(), 0),
    **dict.fromkeys("BHD IQD JOD KWD LYD OMR TND".split(), 3),
    **dict.fromkeys("CLF UYW".split(), 4),
}
"""Decimal places of the currencies whose minor unit is not 2 (ISO 4217 list one, column "Minor unit"; pycountry
does not carry it). Every other code, including those ISO lists with no minor unit (XAU, XDR, ...), gets 2."""


def minor_unit(currency: str) -> int:
    """Decimal places of ``currency``'s minor unit: 2 for most (CNY, USD), 0 for JPY and KRW, 3 for KWD."""
    return MINOR_UNITS.get(currency, 2)


def to_minor_unit(amount: Decimal, currency: str) -> Decimal:
    """``amount`` of ``currency`` rounded half up to its minor unit (``10650.0000`` USD -> ``10650.00``,
    ``1499.6`` JPY -> ``1500``): how report totals and converted amounts are stated."""
    return amount.quantize(Decimal(1).scaleb(-minor_unit(currency)), rounding=ROUND_HALF_UP)


class MissingRateError(ConfigError):
    """No rate converts one currency into another on the date asked; supply a rate table that covers it."""


@dataclass(frozen=True)
class FxTable:
    """Exchange rates valid from one date.

    Attributes:
        as_of: the date the rates apply from.
        rates: ``{(base, quote): rate}`` meaning ``1 base = rate quote`` (e.g. ``("USD", "CNY"): Decimal("7.10")``).
            The inverse pair and one-step crosses through a common currency are derived.
        source: where the rates come from (shown in report elements).
    """

    as_of: date
    rates: Mapping[tuple[str, str], Decimal]
    source: str = "caller-supplied"

    def __post_init__(self) -> None:
        for (base, quote), rate in self.rates.items():
            for code in (base, quote):
                if not is_iso4217(code):
                    raise ConfigError(f"FX rate {base}/{quote}: {code!r} is not an ISO 4217 currency code.")
            if not isinstance(rate, Decimal) or not rate.is_finite() or rate <= 0:
                raise ConfigError(f"FX rate {base}/{quote} must be a positive Decimal, not {rate!r}.")

    def rate(self, base: str, quote: str) -> Decimal | None:
        """Units of ``quote`` per one unit of ``base``, or ``None`` if this table cannot say."""
        if base == quote:
            return Decimal(1)
        if (base, quote) in self.rates:
            return self.rates[(base, quote)]
        if (quote, base) in self.rates:
            return Decimal(1) / self.rates[(quote, base)]
        codes = {c for pair in self.rates for c in pair} - {base, quote}
        for via in sorted(codes):
            first, second = self._direct(base, via), self._direct(via, quote)
            if first is not None and second is not None:
                return first * second
        return None

    def _direct(self, base: str, quote: str) -> Decimal | None:
        if (base, quote) in self.rates:
            return self.rates[(base, quote)]
        if (quote, base) in self.rates:
            return Decimal(1) / self.rates[(quote, base)]
        return None


@dataclass
class FxRates:
    """A history of :class:`FxTable` s; converts with the latest table dated on or before the day asked.

    Args:
        tables: one or more tables (any order).
        max_age_days: refuse a table older than this many days before the conversion date (``None``: no limit).
    """

    tables: list[FxTable] = field(default_factory=list)
    max_age_days: int | None = None

    def __post_init__(self) -> None:
        self.tables = sorted(self.tables, key=lambda t: t.as_of)

    def rate(self, base: str, quote: str, on: date) -> Decimal:
        """Units of ``quote`` per one ``base`` on ``on``.

        Raises:
            MissingRateError: no table dated on or before ``on`` (within ``max_age_days``) has the pair (the message
                names ``on`` and the tables' dates; with no table at all it names no date).
        """
        if base == quote:
            return Decimal(1)
        for table in reversed(self.tables):
            if table.as_of > on:
                continue
            if self.max_age_days is not None and (on - table.as_of).days > self.max_age_days:
                break
            found = table.rate(base, quote)
            if found is not None:
                return found
        details = {"base": base, "quote": quote, "on": on.isoformat()}
        if not self.tables:  # no date would do: naming ``on`` (a caller's placeholder, e.g. today) would mislead
            raise MissingRateError(f"No {base}/{quote} exchange rate: no rate table was given, so there is none for "
                                   f"any date; pass a table with the pair dated on or before the transactions "
                                   f"(`sectorflow run aml ... -O fx_rates=FILE` on the command line, "
                                   f"Taskflow('aml', fx_rates=...) in Python).", details=details)
        dated = ", ".join(t.as_of.isoformat() for t in self.tables)
        raise MissingRateError(f"No {base}/{quote} exchange rate for {on.isoformat()} (tables dated: {dated}); "
                               f"add the pair to the rate table (the fx_rates option: -O fx_rates=FILE on the "
                               f"command line).", details=details)

    def convert(self, amount: Decimal, base: str, quote: str, on: date) -> Decimal:
        """``amount`` of ``base`` expressed in ``quote`` on ``on``, rounded half up to ``quote``'s minor unit
        (:func:`to_minor_unit`: 1,500,000 JPY at USD/JPY 150 is 10000.00 USD, not 10000.000...0); the same currency
        is returned unchanged. Raises :class:`MissingRateError`."""
        if base == quote:
            return amount
        return to_minor_unit(amount * self.rate(base, quote, on), quote)

    @classmethod
    def from_mapping(cls, rates: Mapping[str, object], as_of: date, source: str = "caller-supplied") -> FxRates:
        """One table from ``{"USD/CNY": "7.10", ...}`` (values as strings or Decimals; floats are refused)."""
        pairs: dict[tuple[str, str], Decimal] = {}
        for key, value in rates.items():
            base, sep, quote = key.upper().partition("/")
            if not sep:
                raise ConfigError(f"FX rate key {key!r}: write BASE/QUOTE, e.g. 'USD/CNY'.")
            pairs[(base, quote)] = _decimal(value, key)
        return cls([FxTable(as_of, pairs, source)])

    @classmethod
    def from_csv(cls, path: str | Path, source: str | None = None) -> FxRates:
        """Read a CSV with the header ``as_of,base,quote,rate`` (ISO dates; one row per pair and date). UTF-8, with or
        without the byte-order mark spreadsheet programs write, or GBK/GB18030/UTF-16 (detected,
        :func:`sectorflow.read_text`); header names are matched without surrounding spaces
        or case.

        Raises:
            ConfigError: a missing file, a missing column, a bad date or rate (names the line), or one pair given
                twice for one date (names both lines: which rate a report used would be unclear).
        """
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"FX rate file {path} does not exist.")
        by_date: dict[date, dict[tuple[str, str], Decimal]] = {}
        seen: dict[tuple[date, tuple[str, str]], int] = {}
        text = read_text(path, "FX rate file", error=ConfigError)  # UTF-8, GBK/GB18030, UTF-16: detected
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if reader.fieldnames:
            reader.fieldnames = [name.strip().lower() for name in reader.fieldnames]
        missing = {"as_of", "base", "quote", "rate"} - set(reader.fieldnames or [])
        if missing:
            raise ConfigError(f"FX rate file {path} lacks the column(s) {', '.join(sorted(missing))} (header "
                              f"as_of,base,quote,rate; found {', '.join(reader.fieldnames or []) or 'none'}).")
        for line, row in enumerate(reader, start=2):
            try:
                day = date.fromisoformat((row["as_of"] or "").strip())
            except ValueError as exc:
                raise ConfigError(f"{path}, line {line}: as_of {row['as_of']!r} is not an ISO date.") from exc
            pair = ((row["base"] or "").strip().upper(), (row["quote"] or "").strip().upper())
            first = seen.setdefault((day, pair), line)
            if first != line:
                raise ConfigError(f"{path}, lines {first} and {line}: two {pair[0]}/{pair[1]} rates for "
                                  f"{day.isoformat()}; keep one.")
            by_date.setdefault(day, {})[pair] = _decimal(row["rate"], f"{path}, line {line}")
        return cls([FxTable(day, pairs, source or str(path)) for day, pairs in by_date.items()])


def _decimal(value: object, where: str) -> Decimal:
    if isinstance(value, float):
        raise ConfigError(f"FX rate {where}: give the rate as a string or Decimal, not a float ({value!r}).")
    try:
        return Decimal(str(value).strip())
    except InvalidOperation as exc:
        raise ConfigError(f"FX rate {where}: {value!r} is not a number.") from exc


def illustrative_table(as_of: date = date(2024, 1, 2)) -> FxRates:
    """ILLUSTRATIVE rates for demos and tests only: round numbers, NOT market rates, never for filing.

    ``1 USD = 7.10 CNY``, ``1 EUR = 1.10 USD``, ``1 GBP = 1.27 USD``, ``100 JPY = 0.70 USD``, ``1 HKD = 0.128 USD``.
    """
    rates = {("USD", "CNY"): "7.10", ("EUR", "USD"): "1.10", ("GBP", "USD"): "1.27", ("JPY", "USD"): "0.0070",
             ("HKD", "USD"): "0.128"}
    return FxRates([FxTable(as_of, {k: Decimal(v) for k, v in rates.items()},
                            source="ILLUSTRATIVE round-number rates (sectorflow_aml.fx), not market data")])


def ensure_rates(fx: FxRates | FxTable | Iterable[FxTable] | None) -> FxRates:
    """Accept an :class:`FxRates`, one :class:`FxTable`, several tables, or ``None`` (same-currency only)."""
    if fx is None:
        return FxRates([])
    if isinstance(fx, FxRates):
        return fx
    if isinstance(fx, FxTable):
        return FxRates([fx])
    return FxRates(list(fx))
