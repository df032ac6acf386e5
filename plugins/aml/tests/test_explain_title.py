"""The explain picture's title names the alert's transactions by channel, not "transfers" for cash deposits."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest

from sectorflow_aml.explain import count_text, draw_alert
from sectorflow_aml.schema import Alert, Transaction

T0 = datetime(2026, 11, 9, 14, 0, tzinfo=timezone.utc)


def _txns(*channels: str) -> list[Transaction]:
    return [Transaction(transaction_id=f"t{i}", timestamp=T0 + timedelta(minutes=i), sender_account="W",
                        receiver_account="K", amount=Decimal("4900"), currency="USD", channel=channel)
            for i, channel in enumerate(channels)]


@pytest.mark.parametrize("channels, text", [
    (("cash_deposit", "cash_deposit"), "2 cash deposits"),
    (("cash_deposit",), "1 cash deposit"),
    (("cash_withdrawal",) * 3, "3 cash withdrawals"),
    (("transfer", "wire", "ach", "mobile"), "4 transfers"),
    (("transfer",), "1 transfer"),
    (("card", "card"), "2 card payments"),
    (("cheque",), "1 cheque"),
    (("cash_deposit", "transfer"), "2 transactions"),
    (("cash_deposit", "cash_withdrawal"), "2 transactions"),
    (("other",), "1 transaction"),
])
def test_count_text_names_the_channel(channels: tuple[str, ...], text: str) -> None:
    assert count_text(_txns(*channels)) == text


def test_a_structuring_picture_of_two_cash_deposits_says_deposits(tmp_path: Path, monkeypatch) -> None:
    txns = _txns("cash_deposit", "cash_deposit")
    alert = Alert(alert_id="structuring-1", typology="structuring", accounts=["K"],
                  transaction_ids=[t.transaction_id for t in txns], score=0.9, reasons=[], fired_by="rule:test",
                  time=txns[-1].timestamp)
    import matplotlib.pyplot as plt

    titles: list[str] = []
    original = plt.Axes.set_title
    monkeypatch.setattr(plt.Axes, "set_title", lambda self, text, **kw: titles.append(text) or original(self, text, **kw))
    png = draw_alert(alert, txns, tmp_path / "s.png")
    assert png.read_bytes()[:4] == b"\x89PNG"
    (title,) = titles
    assert title.splitlines()[1] == "2 cash deposits, 9,800.00 USD, 2026-11-09 14:00 to 2026-11-09 14:01 (UTC)"
