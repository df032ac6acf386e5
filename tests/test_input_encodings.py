"""Input files in the encodings Chinese bank exports, spreadsheets and contracts come in (GBK, GB18030, UTF-16), as
well as UTF-8: every reader that opens its file with ``sectorflow.open_text`` detects the encoding or takes
``--encoding``, says a non-UTF-8 choice once, and names the file line of a byte that does not decode."""

from __future__ import annotations

import codecs
import gzip
import json
import logging

import pytest

from sectorflow import ConfigError, InvalidInputError, read_text
from sectorflow.cli import main
from sectorflow.encodings import INPUT_ENCODING, detect
from sectorflow.input_files import read_csv, read_jsonl, reader_for

ROWS = ["text,amount", "招商银行 转账 张三,1000.50", "工资 代发 李四,8800", "支付宝 提现 王五,35.20"]
"""A bank export's lines: every Chinese character here is in GBK (GB2312's level-1 set)."""


def expected() -> list[tuple[int, dict[str, str]]]:
    # rows are numbered by their file line (the header is line 1)
    return [(n, dict(zip(["text", "amount"], line.split(",")))) for n, line in enumerate(ROWS[1:], start=2)]


@pytest.mark.parametrize("encoding, bom", [("gbk", b""), ("gb18030", b""), ("utf-16-le", codecs.BOM_UTF16_LE),
                                           ("utf-16-be", codecs.BOM_UTF16_BE), ("utf-8", codecs.BOM_UTF8)])
def test_a_csv_in_each_usual_chinese_encoding_is_detected_and_read(tmp_path, caplog, encoding, bom):
    source = tmp_path / f"export-{encoding}.csv"
    source.write_bytes(bom + "\r\n".join(ROWS).encode(encoding) + "\r\n".encode(encoding))
    with caplog.at_level(logging.WARNING, logger="sectorflow"):
        assert list(read_csv(source)) == expected()
        assert list(read_csv(source)) == expected()  # read twice (check, then run): said once
    said = [r.getMessage() for r in caplog.records if "read as" in r.getMessage()]
    if encoding.startswith("utf-8"):
        assert said == []
    else:
        name = "GB18030" if encoding.startswith("gb") else "UTF-16"
        assert said == [f"{source}: read as {name} (detected; give --encoding to read it in another encoding)."]


def test_gb18030_characters_outside_gbk_and_gzip_are_read(tmp_path):
    """GB18030's four-byte sequences (CJK extension B, emoji) are not in GBK: a GBK decoder refuses them."""
    lines = ['{"text": "客户 𠮷野家 付款 😀"}', '{"text": "第二行 退款"}']
    source = tmp_path / "messages.jsonl.gz"
    source.write_bytes(gzip.compress("\n".join(lines).encode("gb18030")))
    assert list(read_jsonl(source)) == [(1, {"text": "客户 𠮷野家 付款 😀"}), (2, {"text": "第二行 退款"})]
    assert detect("客户 𠮷野家".encode("gb18030"), complete=True) == "gb18030"


def test_a_stray_byte_in_a_utf8_file_names_its_line(echo_registry, tmp_path):
    """One bad byte in a UTF-8 file (a truncated copy and paste) was "is not UTF-8 text" with no line number."""
    from sectorflow import plugins

    body = ["text", "第一行 正常", "第二行 正常", "第三行 \xff 坏了", "第四行 正常"]
    source = tmp_path / "notes.csv"
    source.write_bytes("\n".join(body).encode("utf-8").replace("\xff".encode("utf-8"), b"\xff"))
    read = reader_for(plugins.get_task("echo"), None, source)
    with pytest.raises(InvalidInputError) as info:
        list(read(source))
    assert info.value.details == {"source": str(source), "encoding": "UTF-8", "line": 4}
    assert "the byte(s) b'\\xff' on line 4 (byte 11 of the line) cannot be read in UTF-8" in str(info.value)
    assert "--encoding" in str(info.value)


def test_an_explicit_encoding_is_used_and_does_not_outlive_the_reader(echo_registry, tmp_path):
    from sectorflow import plugins

    source = tmp_path / "export.csv"
    source.write_bytes("\n".join(["text", "中文 内容"]).encode("gbk"))
    spec = plugins.get_task("echo")
    assert list(reader_for(spec, None, source, encoding="GBK")(source)) == [(2, {"text": "中文 内容"})]
    assert INPUT_ENCODING.get() is None
    with pytest.raises(InvalidInputError) as info:  # the wrong one: the line of the first byte it cannot read
        list(reader_for(spec, None, source, encoding="utf-8")(source))
    assert info.value.details["line"] == 2 and info.value.details["encoding"] == "UTF-8"
    with pytest.raises(ConfigError, match="--encoding 'klingon' is not an encoding Python knows"):
        reader_for(spec, None, source, encoding="klingon")


def test_sectorflow_run_takes_encoding_and_detects_without_it(echo_registry, tmp_path, capsys, caplog):
    source = tmp_path / "contract.csv"
    source.write_bytes("\r\n".join(["text", "甲方 乙方 合同", "违约 责任"]).encode("gb18030"))
    assert main(["run", "echo", str(source), "--encoding", "gb18030"]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line)["text"] for line in out.splitlines()] == ["甲方 乙方 合同", "违约 责任"]
    assert main(["run", "echo", str(source)]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line)["text"] for line in out.splitlines()] == ["甲方 乙方 合同", "违约 责任"]
    assert f"{source}: read as GB18030 (detected" in caplog.text  # a warning on the sectorflow logger
    assert main(["run", "echo", str(source), "--encoding", "utf-8"]) == 2
    out, err = capsys.readouterr()
    assert "on line 2" in err and out == ""


def test_read_text_gives_the_callers_error_class(tmp_path):
    source = tmp_path / "rates.csv"
    source.write_bytes("as_of,base,quote,rate\n2026-01-02,USD,CNY,7.1\n".encode("utf-16"))
    assert read_text(source).splitlines()[1] == "2026-01-02,USD,CNY,7.1"
    source.write_bytes(b"as_of\n\xff\xfe\xfd\n")
    with pytest.raises(ConfigError, match="FX rate file .* on line 2"):
        read_text(source, "FX rate file", encoding="utf-8", error=ConfigError)


def test_detection_tells_big5_from_gb18030():
    """Big5 (Traditional Chinese, Taiwan and Hong Kong) bytes decode as GB18030 too, into the wrong characters."""
    assert detect("營業 銀行 轉帳 張三 客戶 資料 合約".encode("big5"), complete=True) == "big5"
    assert detect("招商银行 转账 张三 客户 资料 合约".encode("gbk"), complete=True) == "gb18030"


def test_the_readers_take_an_encoding_argument(tmp_path):
    source = tmp_path / "big5.csv"
    source.write_bytes('text\n"營業 銀行, 轉帳"\n"broken\n'.encode("big5"))  # a broken quote: the file is read twice
    rows = list(read_csv(source, encoding="big5"))
    assert rows[0] == (2, {"text": "營業 銀行, 轉帳"}) and isinstance(rows[1][1], InvalidInputError)
    lines = tmp_path / "big5.jsonl"
    lines.write_bytes('{"text": "營業 銀行"}\n'.encode("big5"))
    assert list(read_jsonl(lines, encoding="big5")) == [(1, {"text": "營業 銀行"})]
