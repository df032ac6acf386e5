"""sectorflow legal extraction: schema-driven contract element extraction (Chinese and English contracts).

``Taskflow("legal_extraction", schema=["甲方", "乙方", "合同金额", "签订日期"])(contract_text)``; see
docs/legal-extraction.md.
"""

__version__ = "0.1.0"
