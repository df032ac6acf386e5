"""A damaged file opened with ``sectorflow.open_text`` / ``read_text`` is one typed error naming the file, where it
stops being readable and the fix (``sectorflow.input_damage``), and an ``EOFError`` that still escapes a command is
not reported as Ctrl-C. Before 2 Dec 2026 a truncated ``.gz`` read outside ``sectorflow run`` raised ``EOFError``,
which click turned into ``Abort``: "stopped by SIGINT", exit 130."""

from __future__ import annotations

import gzip
import zlib

import pytest

from sectorflow import ConfigError, InvalidInputError, open_text, read_text

TEXT = "".join(f"row {i},value {i}\n" for i in range(20000))  # 330 KB: past the 64 KiB the encoding is told from


def _cut(tmp_path, keep: int = 4000):
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(gzip.compress(TEXT.encode())[:keep])
    return path


def test_a_truncated_gz_names_the_file_the_lines_it_reads_to_and_the_fix(tmp_path):
    path = _cut(tmp_path, 40000)
    readable = zlib.decompressobj(wbits=31).decompress(path.read_bytes())
    with pytest.raises(InvalidInputError) as got:
        with open_text(path) as handle:
            for _ in handle:
                pass
    message = str(got.value)
    assert message.startswith(f"Input file {path} is truncated (the gzip file ends early: Compressed file ended")
    lines = readable.count(b"\n")
    assert lines > 3000 and f"it reads up to line {lines:,} ({len(readable):,} byte(s) decompressed)" in message
    assert "copy or export it again (gzip -t FILE checks a .gz file)" in message
    assert got.value.details == {"source": str(path), "problem": "truncated", "lines_readable": lines,
                                 "bytes_readable": len(readable)}
    assert isinstance(got.value.__cause__, EOFError)


def test_a_gz_name_on_plain_text_and_a_corrupt_gz(tmp_path):
    plain = tmp_path / "plain.csv.gz"
    plain.write_text(TEXT[:500])
    with pytest.raises(InvalidInputError, match=r"is not a valid gzip file \(Not a gzipped file \(b'ro'\)\): its "
                                                r"name ends in \.gz but it is not gzip-compressed\. Rename it") as got:
        read_text(plain)
    assert got.value.details == {"source": str(plain), "problem": "not_gzip"}
    data = bytearray(gzip.compress(TEXT.encode()))
    data[len(data) - 6] ^= 0xFF  # the CRC-32 in the trailer
    corrupt = tmp_path / "corrupt.csv.gz"
    corrupt.write_bytes(bytes(data))
    with pytest.raises(InvalidInputError, match=r"is a damaged gzip file \(CRC check failed") as got:
        read_text(corrupt)
    assert got.value.details["problem"] == "corrupt"


def test_read_text_keeps_its_error_class_and_name(tmp_path):
    with pytest.raises(ConfigError, match=r"^FX rate file .*cut\.csv\.gz is truncated") as got:
        read_text(_cut(tmp_path), "FX rate file", error=ConfigError)
    assert not isinstance(got.value, InvalidInputError)
    gb = tmp_path / "gb.csv.gz"
    gb.write_bytes(gzip.compress(TEXT.encode() + "备注\n".encode("gb18030")))
    with pytest.raises(ConfigError, match=r"FX rate file .* is not UTF-8 text: .* on line 20001 \(byte 1 of the "
                                          r"line\).*--encoding"):
        read_text(gb, "FX rate file", error=ConfigError)


def test_a_callers_own_decoding_error_is_not_blamed_on_the_file(tmp_path):
    path = tmp_path / "fine.csv"
    path.write_text("a,b\n")
    with pytest.raises(UnicodeDecodeError):
        with open_text(path):
            b"\xff".decode("ascii")  # another codec: the caller's, not the file's


def test_an_eoferror_escaping_a_command_is_not_called_sigint(echo_registry, capsys, monkeypatch, tmp_path):
    from sectorflow import cli

    def ended(*args, **kwargs):
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")

    monkeypatch.setattr(cli, "run_batch", ended)
    code = cli.main(["run", "echo", str(tmp_path / "x.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and "SIGINT" not in err
    assert ("error: An input ended before it was complete (Compressed file ended before the end-of-stream marker "
            "was reached); no signal stopped the command.") in err
