"""The built-in CSV reader (``sectorflow.input_files.read_csv`` / ``csv_records``): broken quoting and surplus cells are bad
rows named by row and line, reported in skip mode and refused in reject mode, never rows silently lost."""

from __future__ import annotations

import io
import json
import sys

import pytest

from sectorflow import InvalidInputError
from sectorflow.cli import main
from sectorflow.input_files import csv_records, read_csv


@pytest.fixture
def cli(echo_registry, capsys, monkeypatch):
    """``cli(*args) -> (exit code, stdout, stderr)``, in-process, with only the echo plugin registered."""
    monkeypatch.setenv("COLUMNS", "400")

    def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"))
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def rows_of(path) -> list[tuple[int, object]]:
    """``read_csv``'s rows, an error as ``("error", message, details)``."""
    return [(row, ("error", str(r), r.details) if isinstance(r, InvalidInputError) else r) for row, r in read_csv(path)]


UNCLOSED = 'text,id\nfirst,1\n"abc,2\nthird,3\nfourth,4\n'
"""Row 2 (line 3) opens a quote that is never closed: without csv's strict mode it was read to the end of the file
as one cell ('abc,2\\nthird,3\\nfourth,4\\n') and rows 3 and 4 vanished."""


def test_an_unclosed_quote_is_a_bad_row_naming_file_row_and_line_and_the_rest_is_read(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text(UNCLOSED)
    rows = rows_of(source)
    reason = ("line 3 ('\"abc,2') opens a quoted cell that is never closed, so the rest of the file would be read "
              'as that one cell; add the closing quote, and write a quote that is part of the text as two quotes ("")')
    assert rows == [(2, {"text": "first", "id": "1"}),  # rows are numbered by their file line
                    (3, ("error", f"{source}: row 3: {reason}.", [{"row": 3, "line": 3, "field": None,
                                                                   "reason": reason}])),
                    (4, {"text": "third", "id": "3"}), (5, {"text": "fourth", "id": "4"})]


def test_an_unclosed_quote_is_refused_by_run_and_skipped_with_on_error_skip(cli, tmp_path):
    source, target = tmp_path / "in.csv", tmp_path / "out.jsonl"
    source.write_text(UNCLOSED)
    code, out, err = cli("run", "echo", str(source), "-o", str(target))
    assert code == 2 and out == "" and not target.exists()
    assert f"1 bad row(s) in {source} (first: row 3); nothing was written." in err
    assert "row 3: line 3 ('\"abc,2') opens a quoted cell that is never closed" in err
    code, _, err = cli("run", "echo", str(source), "-o", str(target), "--on-error", "skip")
    assert code == 0, err
    assert [json.loads(line)["text"] for line in target.read_text().splitlines()] == ["first", "third", "fourth"]
    assert "skipped row 3: line 3 ('\"abc,2') opens a quoted cell that is never closed" in err
    assert "3 item(s) processed, 1 row(s) skipped." in err
    code, out, err = cli("run", "echo", "-", "--format", "csv", "--on-error", "skip", stdin=UNCLOSED)
    assert code == 0 and [json.loads(line)["text"] for line in out.splitlines()] == ["first", "third", "fourth"]


@pytest.mark.parametrize(
    ("content", "fragment", "after"),
    [
        # the quote opened on line 2 is taken as closed by the first quote of line 3, which text follows
        ('text,n\n"abc,2\n3,"x"\nlast,4\n', "line 2 ('\"abc,2') opens a quoted cell that is not closed on that line: "
         "the next quote, on line 3, is followed by text", [{"text": "3", "n": "x"}, {"text": "last", "n": "4"}]),
        ('text,n\n"ab"c,1\nlast,4\n', "line 2 ('\"ab\"c,1') has text after the closing quote of a quoted cell",
         [{"text": "last", "n": "4"}]),
    ],
)
def test_text_after_a_closing_quote_is_a_bad_row_and_reading_goes_on_at_the_next_line(tmp_path, content, fragment,
                                                                                      after):
    source = tmp_path / "in.csv"
    source.write_text(content)
    (row, first), *rest = rows_of(source)
    assert row == 2 and first[0] == "error" and first[2][0]["line"] == 2 and f"row 2: {fragment}" in first[1]
    assert rest == list(enumerate(after, start=3))


def test_a_broken_quote_in_the_header_is_one_error_naming_the_file_and_line(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text('text,"id\nfirst,1\n')
    with pytest.raises(InvalidInputError) as info:
        list(read_csv(source))
    assert str(info.value).startswith(f"The CSV header of {source} cannot be read: line 1 ('text,\"id') opens a "
                                      "quoted cell that is never closed")


def test_surplus_cells_are_a_bad_row_not_silently_dropped(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("id,text\n1,hello, world\n2,trailing comma,\n3,\"quoted, comma\"\n")
    rows = rows_of(source)
    reason = "line 2: 3 cells but the header has 2 columns (surplus: ' world'); quote a cell that holds a comma (\"a, b\")"
    assert rows == [(2, ("error", f"{source}: row 2: {reason}.", [{"row": 2, "line": 2, "field": None,
                                                                   "reason": reason}])),
                    (3, {"id": "2", "text": "trailing comma"}),  # an empty surplus cell (a trailing comma) is harmless
                    (4, {"id": "3", "text": "quoted, comma"})]


def test_line_numbers_count_quoted_line_breaks_crlf_and_blank_lines():
    text = 'h1,h2\r\n"a\r\nb",1\r\n\r\nc,2\r\n"d,3\r\ne,4\r\n'
    records = list(csv_records(io.StringIO(text, newline=""), "mem.csv"))
    assert [(line, cells) for line, cells in records if not isinstance(cells, InvalidInputError)] == [
        (1, ["h1", "h2"]), (2, ["a\r\nb", "1"]), (5, ["c", "2"]), (7, ["e", "4"])]
    (line, error), = [(line, cells) for line, cells in records if isinstance(cells, InvalidInputError)]
    assert line == 6 and error.details[0]["line"] == 6 and "never closed" in str(error)


def test_many_broken_rows_are_each_reported_once():
    lines = "".join(f'"r{i}"x\n' if i % 2 else f"r{i}\n" for i in range(3000))
    records = list(csv_records(io.StringIO("h\n" + lines, newline=""), "mem.csv"))
    assert len(records) == 3001
    assert [line for line, cells in records if isinstance(cells, InvalidInputError)] == list(range(3, 3002, 2))
    assert [cells for _, cells in records[1:] if not isinstance(cells, InvalidInputError)] == [
        [f"r{i}"] for i in range(0, 3000, 2)]


@pytest.mark.parametrize("text", [
    'a,b\n1,"x\ny",2\n\n3,4\n"5,6\n7,8\n9,"p"q\n10,11\n',  # a cell with a line break, blank line, both breaks
    'a,b\n1,2\r\n3,"4\r\n5,6\r\n',  # CRLF; the quote opened on line 3 is never closed
    'a,b\n1,2\n3,4\n',  # nothing broken: the fast path alone
    '"a,b\n1,2\n',  # the header itself
])
def test_csv_file_records_are_those_of_csv_records(tmp_path, text: str) -> None:
    # csv_file_records (read_csv and the aml readers) parses a clean file with csv.reader(strict=True) directly
    # (speed) and hands a broken one to csv_records from the failing record on: the records, lines and bad rows
    # must be the same
    from sectorflow import csv_file_records
    from sectorflow.input_files import open_text

    path = tmp_path / "t.csv"
    path.write_bytes(text.encode())

    def records(parse):
        with open_text(path) as handle:
            return [(line, cells if isinstance(cells, list) else str(cells)) for line, cells in parse(handle)]

    expected = records(lambda handle: csv_records(handle, path))
    assert records(lambda handle: csv_file_records(path, handle)) == expected
    assert any(isinstance(cells, str) for _, cells in expected) == (text != 'a,b\n1,2\n3,4\n')
