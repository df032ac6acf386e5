"""Hook implementations of the legal_extraction plugin: the ``legal_extraction`` task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sectorflow import Int8Spec, TaskSpec, hookimpl, input_formats

from . import __version__
from .options import OPTIONS
from .readers import READERS
from .schema import Contract, ContractExtraction
from .calibration import validation

BUNDLE_DIR = Path(__file__).resolve().parent / "bundle"
"""The shipped CUAD clause-classifier bundle (made by ``plugins/legal_extraction/scripts/train_clause_classifier.py``)."""

EXAMPLES: tuple[dict[str, Any], ...] = (
    {"text": "房屋租赁合同\n出租方（甲方）：上海明远置业有限公司\n地址：上海市徐汇区漕溪北路88号\n联系人：王明\n\n"
             "承租方（乙方）：李华\n地址：上海市闵行区莘庄镇1号\n电话：13800000000\n\n"
             "第一条 租赁期限自2023年3月1日起至2024年2月29日止，共12个月。\n"
             "第二条 合同总金额为人民币（大写）壹拾贰万元整（¥120,000.00）。\n"
             "第三条 本合同签订日期：二〇二三年二月二十日。"},
    {"text": "LICENSE AGREEMENT\n\nThis License Agreement is made as of Sept 1st, 2005 by and between Acme Software, "
             "Inc., a Delaware corporation (\"Licensor\"), and Beta Retail LLC (\"Licensee\").\n\nThis Agreement "
             "shall be governed by the laws of the State of New York.", "language": "en"},
)


def spec() -> TaskSpec:
    """The ``legal_extraction`` task spec."""
    bundle = BUNDLE_DIR if (BUNDLE_DIR / "manifest.json").is_file() else None
    return TaskSpec(
        name="legal_extraction", input_model=Contract, output_model=ContractExtraction,
        pipeline="sectorflow_legal_extraction.pipeline:LegalExtractionPipeline", version=__version__, aliases=("contract_extraction",),
        description="Contract element extraction (zh + en, UIE-style schema): parties with roles, addresses and "
                    "contacts, amounts, dates, term, renewal, notice, 违约金, governing law, disputes; CUAD clause "
                    "classifier.",
        default_bundle=bundle, devices=("cpu", "gpu", "npu", "xpu", "mlu"), precisions=("fp32", "int8"),
        languages=("zh", "en"), options=dict(OPTIONS), examples=EXAMPLES,
        formats=input_formats(READERS),
        # the model is mostly its n-gram embedding table: MatMul alone leaves the file at 1.00x its fp32 size, with
        # the table stored 8-bit (Gather) it is 0.25x at 99.9% of fp32's macro AUPR (docs/performance.md)
        int8=Int8Spec(validation=validation, quantize_ops=("MatMul", "Gather")))


@hookimpl
def sectorflow_register_tasks(register: Any) -> None:
    """Register the ``legal_extraction`` task."""
    register(spec())
