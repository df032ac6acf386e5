"""Long contracts read whole: time and fields found in 100,000- to 400,000-character contracts (docs/benchmarks/legal.md).

Usage (from the repository root)::

    .venv/bin/python benchmarks/legal_long_contract.py [--sizes 100000 200000 400000] [--repeat 3]

Each contract is built here: a Chinese one whose whole text is one line (as PDF text extraction gives it: "甲方：…。乙方：
…。本合同……"), and an English one with a preamble, padded with body clauses to the size asked, with fields placed at the start, the middle and the end
(parties and the price at the start, rent and deposit in the middle, governing law and the signing date at the end).
It prints, per size and language, the median seconds of ``Taskflow("legal_extraction")`` over ``--repeat`` runs, the
characters per second, the seconds per 100,000 characters (the ratio to the smallest size shows whether time grows
linearly), the median CPU seconds of the call (process time: steadier than wall time on a loaded machine), which
fields were found and, for English, the CPU seconds of the party re-ranker's pass over the text.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

ZH_HEAD = "甲方：北京某某科技有限公司。地址：北京市海淀区中关村大街1号。乙方：上海某某贸易有限公司。联系人：张三。合同总价为人民币（大写）贰佰万元整（¥2,000,000.00）。"
ZH_BODY = "乙方应按照甲方的要求完成各项工作，双方应本着诚实信用的原则履行本合同约定的各项义务。"
ZH_MIDDLE = "租金：每月人民币伍仟元整。押金为两个月租金。"
ZH_TAIL = "本合同适用中华人民共和国法律。本合同于2024年3月15日签订。"
EN_HEAD = ("SERVICES AGREEMENT\n\nThis Services Agreement is made as of March 15, 2024 by and between Acme Software, "
           "Inc., a Delaware corporation (\"Provider\"), and Beta Retail LLC (\"Customer\").\n\n")
EN_BODY = ("Provider shall perform the Services in a professional and workmanlike manner in accordance with the "
           "specifications and the service levels set out in the applicable statement of work. ")
EN_MIDDLE = "\n\nSecurity Deposit: $4,800, refundable at the end of the Term.\n\n"
EN_TAIL = "\n\nThis Agreement shall be governed by the laws of the State of New York.\n"


def build(language: str, size: int) -> str:
    head, body, middle, tail = ((ZH_HEAD, ZH_BODY, ZH_MIDDLE, ZH_TAIL) if language == "zh" else
                                (EN_HEAD, EN_BODY, EN_MIDDLE, EN_TAIL))
    fill = max(0, size - len(head) - len(middle) - len(tail))
    half = body * max(1, round(fill / (2 * len(body))))  # whole body clauses: about ``size`` characters
    return head + half + middle + half + tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 200_000, 400_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    from sectorflow import Taskflow

    flows = {"zh": Taskflow("legal_extraction", schema=["甲方", "乙方", "合同金额", "租金", "押金", "适用法律", "签订日期"]),
             "en": Taskflow("legal_extraction", schema=["Parties", "Agreement Date", "Security Deposit",
                                                        "Governing Law"])}
    base: dict[str, float] = {}
    for language, tf in flows.items():
        tf({"text": build(language, 2000), "language": language})  # load the model once
        for size in args.sizes:
            text = build(language, size)
            times, cpu = [], []
            for _ in range(args.repeat):
                start, start_cpu = time.perf_counter(), time.process_time()
                result = tf({"text": text, "language": language})
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
            seconds = statistics.median(times)
            per_100k = seconds * 100_000 / len(text)
            base.setdefault(language, per_100k)
            found = {k: (v[0].value if not isinstance(v[0].value, dict) else
                         v[0].value.get("name") or v[0].value.get("amount") or v[0].value.get("multiple"))
                     for k, v in result.fields.items() if v}
            print(f"{language} {len(text):7d} chars ({'one line' if chr(10) not in text else 'lines'}): "
                  f"{seconds:6.2f} s median of {args.repeat}, {len(text) / seconds:9.0f} chars/s, "
                  f"{per_100k:5.2f} s per 100k chars ({per_100k / base[language]:.2f}x the first size); "
                  f"absent {result.absent}; amounts {len(result.amounts)}; CPU {statistics.median(cpu):.2f} s")
            print(f"    found {found}")
            if language == "en":  # the party re-ranker's share: its candidates scan the whole text
                from sectorflow_legal_extraction.rules_en import parties
                from sectorflow_legal_extraction.rules_en.party_candidates import PartyReranker

                reranker, rules = PartyReranker(), parties(text)
                start_cpu = time.process_time()
                reranker.add(text, rules)
                print(f"    party re-ranker: {time.process_time() - start_cpu:.3f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
