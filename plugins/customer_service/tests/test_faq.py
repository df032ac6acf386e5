"""FAQ file reading, exact vs HNSW search, and the cache that follows the file's SHA-256."""

import json

import numpy as np
import pytest

from sectorflow import ConfigError
from sectorflow_customer_service.encoders import CharNgramEncoder
from sectorflow_customer_service.faq import FaqIndex, read_faq

QUESTIONS = ["银行卡被冻结了怎么办", "银行卡丢了怎么挂失", "新卡怎么激活", "如何修改银行卡密码", "转账对方没有收到怎么办",
             "退款多久到账", "ATM吞卡了怎么办", "怎么注销账户", "怎么修改预留手机号", "如何投诉"]


class CountingEncoder(CharNgramEncoder):
    """Character n-grams that count how many texts they encoded (to see cache hits)."""

    name = "counting-char-ngram"

    def __init__(self):
        super().__init__()
        self.calls = 0
        self.fit(QUESTIONS)

    def encode(self, texts):
        self.calls += len(texts)
        return super().encode(texts)


def write_jsonl(path, questions):
    path.write_text("".join(json.dumps({"question": q, "answer": f"答{i}", "id": f"q{i}"}, ensure_ascii=False) + "\n"
                            for i, q in enumerate(questions)), encoding="utf-8")


def test_exact_search_ranks_like_a_full_sort_and_cache_follows_the_file(tmp_path):
    faq_file = tmp_path / "faq.jsonl"
    write_jsonl(faq_file, QUESTIONS)
    enc = CountingEncoder()
    exact = FaqIndex(faq_file, {"zh": enc, "en": enc})
    assert exact.kind == {"zh": "exact"} and exact.built == {"zh": "encoded"} and enc.calls == 10
    again = FaqIndex(faq_file, {"zh": enc, "en": enc}, hnsw_threshold=5)  # accepted, no effect (hnswlib is gone)
    assert again.kind == {"zh": "exact"} and again.built == {"zh": "cache"} and enc.calls == 10  # vectors reused
    queries = enc.encode(["我的银行卡被冻结了", "卡丢了要挂失", "转账没收到"])
    vectors = enc.encode(QUESTIONS)
    for k in (1, 2, 10, 50):  # k beyond the entries: every entry, ranked
        for query, found in zip(queries, exact.search("zh", queries, k=k)):
            sims = [float(np.dot(query, v)) for v in vectors]
            ranked = sorted(range(len(sims)), key=lambda j: (-sims[j], j))[:k]
            assert [e.id for e, _ in found] == [f"q{j}" for j in ranked]
            np.testing.assert_allclose([s for _, s in found], [sims[j] for j in ranked], atol=1e-5)
    top = exact.search("zh", queries, k=1)
    assert [row[0][0].id for row in top] == ["q0", "q1", "q4"]
    write_jsonl(faq_file, QUESTIONS[:9])  # the file changes: its vectors are rebuilt
    again = FaqIndex(faq_file, {"zh": enc, "en": enc})
    assert again.built == {"zh": "encoded"} and enc.calls == 10 + 3 + 10 + 9
    assert len(list((tmp_path / ".faq.jsonl.faqcache").glob("zh-*.npy"))) == 1  # the stale one is gone


def test_more_queries_than_a_block_are_all_answered(tmp_path):
    from sectorflow_customer_service.faq import QUERY_BLOCK

    faq_file = tmp_path / "faq.jsonl"
    write_jsonl(faq_file, QUESTIONS)
    enc = CountingEncoder()
    index = FaqIndex(faq_file, {"zh": enc, "en": enc}, cache=False)
    queries = enc.encode([QUESTIONS[i % len(QUESTIONS)] for i in range(QUERY_BLOCK * 2 + 5)])
    found = index.search("zh", queries, k=1)
    assert [row[0][0].id for row in found] == [f"q{i % len(QUESTIONS)}" for i in range(QUERY_BLOCK * 2 + 5)]


def test_csv_with_language_column_and_min_score(tmp_path):
    faq_file = tmp_path / "faq.csv"
    faq_file.write_text("question,answer,lang\nHow do I reset my PIN?,At any ATM.,en\n怎么改密码,在ATM修改。,zh\n",
                        encoding="utf-8")
    entries = read_faq(faq_file)
    assert [(e.id, e.lang) for e in entries] == [("1", "en"), ("2", "zh")]
    enc = CharNgramEncoder().fit([e.question for e in entries])
    index = FaqIndex(faq_file, {"zh": enc, "en": enc}, cache=False)
    hits = index.search("zh", enc.encode(["改密码", "天气"]), k=3, min_score=0.3)
    assert [e.id for e, _ in hits[0]] == ["2"] and hits[1] == []


@pytest.mark.parametrize("content,message", [
    ("question,reply\nq,a\n", "needs a header with question and answer"),
    ("question,answer\nq,\n", "line 2 lacks a question or an answer"),
    ("", "is empty: it needs a header line"),
    ("id,question,answer\n7,q1,a1\n7,q2,a2\n", "line 3 has id '7', already used by .* line 2"),
    ("question,answer,lang\nq,a,fr\n", "line 2 has lang='fr': give zh or en"),
])
def test_bad_faq_files_say_what_to_fix(tmp_path, content, message):
    path = tmp_path / "faq.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        read_faq(path)
    with pytest.raises(ConfigError, match="not found"):
        read_faq(tmp_path / "missing.csv")


def test_quoted_line_breaks_semicolons_tabs_and_language_tags(tmp_path):
    """Excel writes a line break inside a quoted cell; European Excel separates with ';'; zh-CN/en-US tags."""
    multi = tmp_path / "multi.csv"
    multi.write_text('question,answer\n"How do I\nreset my PIN?","At any\nATM."\nWhere is my card?,Track it.\n',
                     encoding="utf-8")
    assert [(e.id, e.question, e.answer) for e in read_faq(multi)] == [
        ("1", "How do I\nreset my PIN?", "At any\nATM."), ("2", "Where is my card?", "Track it.")]
    semi = tmp_path / "semi.csv"
    semi.write_text("question;answer;lang\n怎么改密码;在ATM修改;zh-CN\nHow do I reset my PIN?;At any ATM;en-US\n"
                    "怎麼改密碼;在ATM修改;zh_Hant_TW\n", encoding="utf-8")
    assert [e.lang for e in read_faq(semi)] == ["zh", "en", "zh"]
    tsv = tmp_path / "faq.tsv"
    tsv.write_text("question\tanswer\nWhere is my card?\tTrack it, in the app.\n", encoding="utf-8")
    assert [e.answer for e in read_faq(tsv)] == ["Track it, in the app."]


def test_json_arrays_gzip_and_bad_json_rows(tmp_path):
    import gzip

    array = tmp_path / "faq.json"
    array.write_text(json.dumps([{"question": "怎么改密码", "answer": "在ATM修改", "id": 3}], ensure_ascii=False),
                     encoding="utf-8")
    assert [(e.id, e.lang) for e in read_faq(array)] == [("3", "zh")]
    packed = tmp_path / "faq.jsonl.gz"
    packed.write_bytes(gzip.compress(b'{"question": "Where is my card?", "answer": "Track it."}\n'))
    assert [e.question for e in read_faq(packed)] == ["Where is my card?"]
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"question": "q", "answer": "a"}\n["q", "a"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="line 2 is a JSON list, not an object"):
        read_faq(rows)
    rows.write_text('{"question": 5, "answer": {"text": "a"}}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="line 1 lacks a question or an answer .*got question=5"):
        read_faq(rows)
    gbk = tmp_path / "gbk.csv"
    gbk.write_bytes("question,answer\n怎么改密码,在ATM修改\n".encode("gbk"))  # detected: read as GB18030
    assert [(e.question, e.answer) for e in read_faq(gbk)] == [("怎么改密码", "在ATM修改")]
    gbk.write_bytes("question,answer\n怎么改密码,在ATM修改\n怎么挂失,打电话\n".encode("utf-8")[:-12] + b"\xff\n")
    with pytest.raises(ConfigError, match="FAQ file .* is not UTF-8 text: .* on line 3 .* save it as UTF-8"):
        read_faq(gbk)
    with pytest.raises(ConfigError, match="is a folder"):
        read_faq(tmp_path)


def test_a_damaged_cache_is_rebuilt_and_the_cache_follows_the_questions(tmp_path):
    faq_file = tmp_path / "faq.jsonl"
    write_jsonl(faq_file, QUESTIONS)
    enc = CountingEncoder()
    FaqIndex(faq_file, {"zh": enc, "en": enc})
    cache = tmp_path / ".faq.jsonl.faqcache"
    (vectors,) = cache.glob("zh-*.npy")
    vectors.write_bytes(vectors.read_bytes()[:100])  # a crash or a full disk cut them short
    again = FaqIndex(faq_file, {"zh": enc, "en": enc})
    assert again.built == {"zh": "encoded"} and enc.calls == 20
    queries = enc.encode(["我的银行卡被冻结了"])
    assert again.search("zh", queries, k=1)[0][0][0].id == "q0"
    assert not list(cache.glob(".tmp-*"))  # written through temporary files, none left behind
    # the answers change, the questions do not: the vectors are still good
    faq_file.write_text(faq_file.read_text(encoding="utf-8").replace("答1", "新答案"), encoding="utf-8")
    assert FaqIndex(faq_file, {"zh": enc, "en": enc}).built == {"zh": "cache"} and enc.calls == 20 + 1


def test_intent_example_files_are_read_like_faq_files(tmp_path):
    """The examples reader shares the FAQ reader's formats and errors (it raised JSONDecodeError/AttributeError, and
    dropped zh-CN rows from Chinese)."""
    from sectorflow_customer_service.prototypes import read_examples

    semi = tmp_path / "intents.csv"
    semi.write_text("text;label;lang\n我的卡呢;card_arrival;zh-CN\nwhere is my card;card_arrival;en-GB\n"
                    "close my account;terminate_account;\n", encoding="utf-8")
    assert read_examples(semi, "zh") == [("我的卡呢", "card_arrival"), ("close my account", "terminate_account")]
    assert read_examples(semi, "en") == [("where is my card", "card_arrival"),
                                         ("close my account", "terminate_account")]
    bad = tmp_path / "intents.jsonl"
    for content, message in [('{"text": "a", "label": "b"}\nnot json\n', "line 2 is not JSON"),
                             ('["a", "b"]\n', "line 1 is a JSON list, not an object with text and label"),
                             ('{"text": "a", "label": "b", "lang": "fr"}\n', "line 1 has lang='fr': give zh or en"),
                             ('{"text": "a", "label": 3}\n', "line 1 lacks text or label")]:
        bad.write_text(content, encoding="utf-8")
        with pytest.raises(ConfigError, match=message):
            read_examples(bad)
