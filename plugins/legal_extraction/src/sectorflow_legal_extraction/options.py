"""The ``legal_extraction`` task's options (``Taskflow("legal_extraction", **options)``, ``sectorflow run -O``):
``{name: one-line help}``. A module of its own so that registering the task imports none of the extraction rules
(see :attr:`sectorflow.TaskSpec.pipeline`)."""

from __future__ import annotations

OPTIONS = {
    "schema": "field names to extract, zh or en (UIE-style list, e.g. ['甲方', '乙方', '合同金额', '租金']); any "
              "name the rules do not know is an open field, typed from its name or as declared "
              "({'租金': {'type': 'amount', 'aliases': ['月租金']}}); default: the standard schema",
    "encoder": "a sentence encoder for the clause similarity of open fields: an object with encode(texts) -> float32 "
               "[n, d] rows of unit norm, or such a callable (e.g. sectorflow_customer_service.e5.E5Encoder(), the "
               "multilingual-e5-small the project ships); default: none, character n-gram similarity only",
    "language": "'zh', 'en' or 'auto' (default: detected per contract; an item's own 'language' wins)",
    "party_reranker": "True (default): English parties the preamble rules missed (signature blocks, lists of companies) "
                      "are added when the learned re-ranker (party_reranker/, trained on CUAD train + contracts_more) "
                      "scores them at or above its threshold; False: the rules' parties only",
    "date_order": "how a numeric date such as 01/03/2024 is read: 'DMY' (day first: 1 March, British and European "
                  "contracts), 'MDY' (month first: 3 January, US contracts) or 'auto' (default: day first when the "
                  "contract writes a date that can only be day first, such as 15/07/2018, else month first; an "
                  "ambiguous date read this way carries a warning)",
}
