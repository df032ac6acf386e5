"""The CUAD split and the benchmark's answer matching (real CUAD data, read in place; skipped without it)."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

from sectorflow_legal_extraction import cuad

REPO = Path(__file__).resolve().parents[3]
DATA = REPO.parent / "shared" / "data" / "cuad"


def _benchmark():
    spec = importlib.util.spec_from_file_location("legal_eval", REPO / "benchmarks" / "legal_eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_answer_matching():
    bench = _benchmark()
    assert bench.date_match("1999-10-01", "10/1/99") and not bench.date_match("1999-10-02", "10/1/99")
    assert bench.date_match("2020", "[]/[]/2020") and bench.date_match("2020-05-03", "[]/[]/2020")
    assert not bench.date_match(None, "10/1/99")
    assert bench.gold_parties('RSL COM PrimeCall, Inc. ("PrimeCall"); deltathree.com, Inc. (formerly known as Delta '
                              'Three, Inc.) ("DeltaThree")') == ["RSL COM PrimeCall, Inc", "deltathree.com, Inc"]
    assert bench.parties_match(["Rsl Com Primecall Inc", "Someone Else"], ["RSL COM PrimeCall, Inc.", "X Corp"]) == (
        1, 2, 2)
    england = bench.law_places("England and Wales, UK")
    assert england == bench.law_places("England, United Kingdom; Wales, United Kingdom") == {"england", "wales"}
    assert bench.law_places("England; Wales") == england and bench.law_places("Ontario, Canada") == {"ontario"}
    assert bench.law_places("Canada") == {"canada"} and bench.law_places("New York") != bench.law_places("New Jersey")
    assert bench.gold_duration("successive 1 year") == ("P1Y", True)
    assert bench.gold_duration("60) days") == ("P60D", False) and bench.gold_duration("perpetual") is None


def test_answer_matching_of_partial_several_and_empty_answers():
    bench = _benchmark()
    both = "07/31/2000; 07/[]/2000"
    assert bench.date_match("2000-07-31", both) and bench.date_match("2000-07", both)
    assert not bench.date_match("2000-08-01", both)
    assert bench.date_match("1998-05-01", "[]/[]/19[]") and not bench.date_match("2008-05-01", "[]/[]/19[]")
    assert bench.date_match("2004-09-14", "09/14/200[]") and not bench.date_match("2014-09-14", "09/14/200[]")
    assert not bench.gives_a_date("[]/[]/[][]") and bench.gives_a_date("[]/[]/19[]")
    assert not bench.names_a_place("[* * *]") and not bench.names_a_place("[]") and bench.names_a_place("Texas")


def test_same_jurisdiction_comparison():
    same = _benchmark().law_jurisdictions
    assert same("Province of Ontario, Canada") == same("Ontario, Canada") == {"ontario"}
    assert same("Republic of Colombia") == same("Colombia") and same("Federal Republic of Germany") == same("Germany")
    assert same("People's Republic of China") == same("China") == same("PRC") != same("Republic of China")
    assert same("England") == same("England; Wales") == same("England and Wales, UK") == same(
        "England, United Kingdom; Wales, United Kingdom")
    assert same("New York") != same("New Jersey") and same("Texas; Singapore") != same("Texas")
    assert same("State of New York") == same("New York") and same("Scotland") != same("England")


@pytest.mark.skipif(not (DATA / "master_clauses.csv").is_file(), reason=f"CUAD not found at {DATA}")
def test_split_is_by_contract_and_stable():
    contracts = cuad.load(DATA)
    assert len(contracts) == 302 and len(cuad.categories(DATA)) == 41
    counts = Counter(c.split for c in contracts)
    assert counts == {"train": 180, "validation": 58, "test": 64}
    assert len({c.filename for c in contracts}) == 302  # one split per contract
    assert cuad.split_of(contracts[0].filename) == contracts[0].split


@pytest.mark.skipif(not (DATA / "contracts_more").is_dir(), reason=f"CUAD contracts_more not found at {DATA}")
def test_the_development_pool_joins_without_moving_the_test_split():
    before = {c.filename: c.split for c in cuad.load(DATA)}
    contracts = cuad.load(DATA, more=True)
    counts = Counter(c.split for c in contracts)
    assert counts == {"train": 180, "validation": 58, "test": 64, cuad.MORE: 207}
    assert {c.filename: c.split for c in contracts if c.split != cuad.MORE} == before  # the 64 test contracts stay
    assert all(c.path.parent.name == "contracts_more" for c in contracts if c.split == cuad.MORE)
