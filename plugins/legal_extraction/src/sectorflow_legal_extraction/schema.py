"""The extraction schema (UIE-style: a list of field names, Chinese or English) and the input/output models.

A schema is a list of names such as ``["甲方", "乙方", "合同金额", "签订日期"]`` or ``["Party A", "Governing Law"]``.
Each name resolves, case- and spacing-insensitively, to one canonical field of :data:`FIELDS`; the result is keyed
by the names exactly as the user wrote them (as PaddleNLP's UIE does). Any other name is an *open* field (as UIE
takes any schema): its type (:data:`FIELD_TYPES`) is given (``{"租金": {"type": "amount", "aliases": ["月租金"]}}``)
or inferred from the name (:func:`infer_type`), and :mod:`open_fields` finds it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from sectorflow import ConfigError, TaskResult, TextItem

MAX_CHARS = 2_000_000
"""Longest contract accepted (characters); CUAD's longest text is about 43,000."""


@dataclass(frozen=True)
class FieldDef:
    """One canonical field: its key, the names that select it (zh and en) and a one-line meaning."""

    key: str
    names: tuple[str, ...]
    meaning: str
    role: str | None = None
    """For party fields: the canonical role the field selects (``party_a``, ``lessor`` ...); ``None`` otherwise."""
    type: str = "text"
    """The value's type (:data:`FIELD_TYPES`); for an open field, what :mod:`open_fields` looks for."""
    open: bool = False
    """A field the rules do not know (named by the user); ``names`` then holds its name and aliases."""
    aliases: tuple[str, ...] = ()
    """Extra labels the user gave for a known field: read as label-value pairs when its rule finds nothing."""


FIELD_TYPES = ("amount", "date", "duration", "percentage", "party", "place", "text")
"""Types of an open field's value: amount ``{"amount", "currency", ...}``, date (ISO 8601), duration
``{"iso", "business_days"}``, percentage ``{"rate", "per"}``, party (the name), place and text (as written)."""

_TYPE_CUES = (  # the first that matches the name wins: 保证金比例 is a percentage, 租赁期限 a duration, 付款日 a date
    ("text", r"账户|账号|户名|开户|account|iban|swift"),
    ("percentage", r"率|比例|百分比|rate\b|percent|percentage|interest\b"),
    ("date", r"日期|时间$|[日号]$|截止日|到期日|date\b|day\b|deadline"),
    ("duration", r"期限|期间|周期|时长|[期限]$|period|term\b|duration|notice|warranty|guarantee\s+period|lock-?up"),
    ("place", r"地点|地址|所在地|场所|住所|place|address|location|venue|site|premises"),
    ("amount", r"金|费|款|价|租|酬|资|薪|额|罚|息|money|amount|fee|price|rent|deposit|payment|cost|salary|compensation|penalty|"
               r"fine\b|sum\b|capital|consideration|bonus|royalt|retainer|charge|premium|wage|stipend|allowance|"
               r"installment|instalment|principal|\bcap\b|liability\s+limit"),
    ("party", r"[方人者商]$|party|guarantor|broker|agent|surety|beneficiary|employee|employer|landlord|tenant|"
              r"vendor|contractor|supplier|purchaser|lender|borrower|manufacturer|distributor|licensor|licensee"),
)


def infer_type(name: str) -> str:
    """The type of an open field from its name (:data:`FIELD_TYPES`): ``租金``/``Security Deposit`` -> amount,
    ``违约金比例``/``Penalty Rate`` -> percentage, ``保修期``/``Notice Period`` -> duration, ``交付日期`` -> date,
    ``履行地点`` -> place, ``担保人``/``Guarantor`` -> party, ``收款账户`` and any other -> text."""
    for kind, cue in _TYPE_CUES:
        if re.search(cue, name.strip(), re.I):
            return kind
    return "text"


FIELDS: tuple[FieldDef, ...] = (
    FieldDef("parties", ("Parties", "当事人", "合同当事人", "签约方", "合同双方"),
             "every party with its role, address and contacts"),
    FieldDef("party_a", ("甲方", "Party A"), "the party named 甲方 / Party A", role="party_a"),
    FieldDef("party_b", ("乙方", "Party B"), "the party named 乙方 / Party B", role="party_b"),
    FieldDef("party_c", ("丙方", "Party C"), "the party named 丙方 / Party C", role="party_c"),
    FieldDef("lessor", ("出租方", "出租人", "Lessor", "Landlord"), "the lessor", role="lessor"),
    FieldDef("lessee", ("承租方", "承租人", "Lessee", "Tenant"), "the lessee", role="lessee"),
    FieldDef("seller", ("卖方", "出卖人", "供方", "Seller", "Supplier"), "the seller", role="seller"),
    FieldDef("buyer", ("买方", "买受人", "需方", "Buyer", "Purchaser", "Customer"), "the buyer", role="buyer"),
    FieldDef("licensor", ("许可方", "Licensor"), "the licensor", role="licensor"),
    FieldDef("licensee", ("被许可方", "Licensee"), "the licensee", role="licensee"),
    FieldDef("lender", ("出借人", "贷款人", "Lender"), "the lender", role="lender"),
    FieldDef("borrower", ("借款人", "Borrower"), "the borrower", role="borrower"),
    FieldDef("client", ("委托方", "委托人", "Client"), "the client (委托方)", role="client"),
    FieldDef("agent", ("受托方", "受托人", "Agent"), "the agent (受托方)", role="agent"),
    FieldDef("employer", ("发包方", "发包人", "Employer"), "the employer (发包方)", role="employer"),
    FieldDef("contractor", ("承包方", "承包人", "Contractor"), "the contractor (承包方)", role="contractor"),
    FieldDef("assignor", ("转让方", "Assignor"), "the assignor (转让方)", role="assignor"),
    FieldDef("assignee", ("受让方", "Assignee"), "the assignee (受让方)", role="assignee"),
    FieldDef("contract_amount", ("合同金额", "合同总价", "合同价款", "总价款", "Contract Amount", "Amount",
                                 "Contract Price"), "the contract's total amount, normalised with its currency"),
    FieldDef("payment_terms", ("付款方式", "支付方式", "付款条件", "Payment Terms"), "when and how payment is made"),
    FieldDef("signing_date", ("签订日期", "签署日期", "签约日期", "Agreement Date", "Signing Date", "Date of Agreement"),
             "the date the contract was made (ISO 8601)"),
    FieldDef("effective_date", ("生效日期", "Effective Date"), "when the contract takes effect (ISO 8601 or anchor)"),
    FieldDef("term", ("合同期限", "期限", "租赁期限", "Term", "Initial Term", "Expiration Date"),
             "the contract term: start, end and duration"),
    FieldDef("renewal", ("续约", "续期", "续签", "Renewal", "Renewal Term"), "the renewal term (ISO 8601 duration)"),
    FieldDef("notice_period", ("通知期", "提前通知期限", "Notice Period", "Notice Period To Terminate Renewal"),
             "notice required to terminate or not renew (ISO 8601 duration)"),
    FieldDef("termination", ("解除条件", "终止条件", "合同解除", "Termination", "Termination Conditions"),
             "conditions under which the contract may be terminated"),
    FieldDef("liquidated_damages", ("违约金", "违约责任", "Liquidated Damages"),
             "liquidated damages: amount or rate"),
    FieldDef("governing_law", ("适用法律", "管辖法律", "法律适用", "Governing Law"), "the law that governs the contract"),
    FieldDef("dispute_resolution", ("争议解决", "争议解决方式", "Dispute Resolution", "Arbitration", "Jurisdiction"),
             "arbitration commission or court"),
    FieldDef("confidentiality", ("保密", "保密条款", "保密义务", "Confidentiality"), "the confidentiality clause"),
    FieldDef("assignment", ("转让", "合同转让", "权利义务转让", "Assignment", "Anti-Assignment"),
             "whether and how the contract may be assigned"),
)

STANDARD_SCHEMA: tuple[str, ...] = (
    "Parties", "Contract Amount", "Payment Terms", "Agreement Date", "Effective Date", "Term", "Renewal Term",
    "Notice Period", "Termination", "Liquidated Damages", "Governing Law", "Dispute Resolution", "Confidentiality",
    "Assignment")
"""What ``Taskflow("legal_extraction")`` extracts when no schema is given."""


def _fold(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name).casefold()


_BY_NAME: dict[str, FieldDef] = {_fold(n): f for f in FIELDS for n in (f.key, *f.names)}


def supported_names() -> list[str]:
    """Every name of a known field (each field's zh and en names); any other name is an open field."""
    return [n for f in FIELDS for n in f.names]


RELATIONS: dict[str, str] = {
    "地址": "address", "住所": "address", "通讯地址": "address", "address": "address",
    "联系人": "contact", "contact": "contact", "contacts": "contact",
    "电话": "phone", "联系电话": "phone", "手机": "phone", "传真": "phone", "phone": "phone", "telephone": "phone",
    "mobile": "phone", "fax": "phone",
    "邮箱": "email", "电子邮箱": "email", "email": "email", "e-mail": "email",
    "统一社会信用代码": "id_number", "身份证号": "id_number", "身份证号码": "id_number", "id number": "id_number",
    "开户行": "bank_account", "银行账号": "bank_account", "账号": "bank_account", "bank account": "bank_account",
}
"""Relation names a party field may carry in a UIE-style schema: ``[{"甲方": ["地址", "联系人"]}]``."""

_RELATION_BY_NAME = {_fold(k): v for k, v in RELATIONS.items()}

KNOWN_TYPES = {"contract_amount": "amount", "signing_date": "date", "effective_date": "date", "renewal": "duration",
               "notice_period": "duration", "governing_law": "place", "parties": "party"}
"""The value type of known fields that have one (party fields: ``party``); a declared type must agree."""


def _options(entry: Any, name: str, wanted: Any) -> tuple[str | None, tuple[str, ...], Any]:
    """``(type or None, aliases, relations)`` of a schema entry's value: relations as a name or a list, or a dict
    ``{"type": ..., "aliases": [...], "relations": [...]}``."""
    if not isinstance(wanted, dict):
        return None, (), wanted
    unknown = sorted(set(wanted) - {"type", "aliases", "relations"})
    kind, aliases = wanted.get("type"), wanted.get("aliases", ())
    if unknown or kind is not None and kind not in FIELD_TYPES or isinstance(aliases, str) or not isinstance(
            aliases, (list, tuple)) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise ConfigError(f"schema entry {entry!r}: give the relations as a name or a list of names, e.g. "
                          f"{{{name!r}: ['地址', '联系人']}}, or the field's options as {{{name!r}: {{'type': one of "
                          f"{', '.join(FIELD_TYPES)}, 'aliases': [names], 'relations': [names]}}}}"
                          + (f"; unknown key(s) {unknown}" if unknown else ""),
                          details={"entry": str(entry), "types": list(FIELD_TYPES),
                                   "supported_relations": list(RELATIONS)})
    return kind, tuple(a.strip() for a in aliases), wanted.get("relations")


def resolve_schema(schema: Any) -> list[tuple[str, FieldDef, dict[str, str] | None]]:
    """Turn a user's schema into ``[(name as written, field, relations or None)]``.

    Accepts ``None`` (the standard schema), one name or several in one string separated by commas (``"甲方,乙方"``,
    as ``-O schema=甲方,乙方`` gives them), a list of names, or a dict. Any name is accepted: a known one (any name
    of :data:`FIELDS`) keeps its rules, another is an open field of the type inferred from its name
    (:func:`infer_type`). As in UIE, an entry may be a one-key dict: ``{"甲方": ["地址", "联系人"]}`` names the
    relations of a party field (known relation names map to address, contact, phone, email, id_number,
    bank_account; any other is read as a ``<name>：<value>`` line of the party's block, key ``open:<name>``);
    ``{"租金": {"type": "amount", "aliases": ["月租金"], "relations": [...]}}`` declares an open field's type and
    aliases (a known field takes aliases only, read when its rule finds nothing). A dict schema is read as a list
    of its items.

    Raises:
        ConfigError: not a list of names, empty, a blank name, an unknown type, relations that are not names, or
            relations on a field that is not a party.
    """
    if schema is None:
        schema = list(STANDARD_SCHEMA)
    if isinstance(schema, str):  # "甲方,乙方,合同金额" (the command line's -O schema=...): one name per comma
        schema = [n.strip() for n in re.split(r"[,，、;；]", schema) if n.strip()]
    if isinstance(schema, dict):
        schema = [{k: v} for k, v in schema.items()]
    if not isinstance(schema, (list, tuple)) or not schema or not all(
            isinstance(n, str) and n.strip() or (isinstance(n, dict) and len(n) == 1) for n in schema):
        raise ConfigError(f"schema={schema!r}: give a non-empty list of field names, e.g. ['甲方', '乙方', "
                          f"'合同金额', '租金'] or [{{'甲方': ['地址', '联系人']}}, {{'租金': {{'type': 'amount'}}}}]; "
                          f"known fields: {', '.join(supported_names())}; any other name is an open field.")
    out = []
    for entry in schema:
        name, wanted = (entry, None) if isinstance(entry, str) else next(iter(entry.items()))
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"schema entry {entry!r}: a field name must be a non-blank string.",
                              details={"entry": str(entry)})
        kind, aliases, wanted = _options(entry, name, wanted)
        field = _BY_NAME.get(_fold(str(name)))
        if field is None:
            field = FieldDef(f"open:{name.strip()}", (name.strip(), *aliases), "a field named by the user",
                             type=kind or infer_type(name), open=True)
        else:
            known = "party" if field.role else KNOWN_TYPES.get(field.key, "text")
            if kind is not None and kind != known:
                raise ConfigError(f"schema entry {entry!r}: {name!r} is a known field of type {known!r}, not "
                                  f"{kind!r}; drop 'type' or name another field.",
                                  details={"entry": str(entry), "type": known})
            if aliases:
                field = FieldDef(field.key, field.names, field.meaning, role=field.role, type=known, aliases=aliases)
        relations = None
        if wanted is not None:
            if not isinstance(wanted, (str, list, tuple)):
                raise ConfigError(f"schema entry {entry!r}: give the relations as a name or a list of names, e.g. "
                                  f"{{{str(name)!r}: ['地址', '联系人']}}; known: {', '.join(RELATIONS)}.",
                                  details={"entry": str(entry), "supported_relations": list(RELATIONS)})
            wanted = [wanted] if isinstance(wanted, str) else list(wanted)
            bad = [r for r in wanted if not isinstance(r, str) or not r.strip()]
            is_party = field.role is not None or field.key == "parties" or field.open and field.type == "party"
            if not is_party or bad:
                raise ConfigError(f"schema entry {entry!r}: relations are read for party fields only (甲方, "
                                  f"Licensor, an open field of type 'party' ...), as names such as "
                                  f"{', '.join(RELATIONS)}; not {bad or wanted}.",
                                  details={"entry": str(entry), "supported_relations": list(RELATIONS)})
            relations = {r: _RELATION_BY_NAME.get(_fold(r), f"open:{r.strip()}") for r in wanted}
        out.append((str(name), field, relations))
    return out


# --- input and output models --------------------------------------------------------------------------------------


class Contract(TextItem):
    """One contract. A plain string is accepted as ``{"text": string}``; unknown keys are refused (choose fields
    with the task's ``schema`` option, not per item)."""

    text_hint = "the contract's text"
    text: str = Field(min_length=1, max_length=MAX_CHARS, description="The contract's full text (zh or en).")
    language: str | None = Field(default=None, pattern="^(zh|en)$",
                                 description="'zh' or 'en'; detected from the text when omitted.")


class Extraction(BaseModel):
    """One extracted value: where it is, what it says, what it means, how sure the extractor is.

    ``start``/``end`` are character offsets into the input text (``text == contract[start:end]``).
    ``value`` is the normalised value (ISO 8601 date or duration, ``{"amount", "currency"}``, jurisdiction ...).
    ``confidence`` is in [0, 1]: the clause classifier's probability where it picked the span, otherwise the
    rule's prior (see docs/legal-extraction.md; not a calibrated probability).
    """

    text: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    value: Any = None
    confidence: float = Field(ge=0, le=1)
    source: str = Field(description="'rule:<name>' or 'classifier:<CUAD category>'.")
    relations: dict[str, list[Extraction]] = Field(
        default_factory=dict, description="UIE-style relations of this extraction (a party's address, contacts).")
    warnings: list[str] = Field(default_factory=list)


class ClauseLabel(BaseModel):
    """One text segment labelled with a CUAD category by the clause classifier (English contracts)."""

    category: str
    start: int
    end: int
    score: float = Field(ge=0, le=1)


class ContractExtraction(TaskResult):
    """The result for one contract.

    ``fields`` maps every schema name (as written) to its extractions; ``absent`` lists the names nothing was found
    for (their lists are empty: nothing is guessed). ``amounts`` lists every monetary amount of the text wherever it
    stands (ranges and approximations flagged; :mod:`amounts`). ``warnings`` collects every extraction's warnings,
    e.g. an amount whose figures and words disagree.
    """

    language: str
    fields: dict[str, list[Extraction]]
    absent: list[str]
    clauses: list[ClauseLabel] = Field(default_factory=list)
    amounts: list[Extraction] = Field(
        default_factory=list, description="Every monetary amount of the contract, in order (amounts.find_amounts).")
    warnings: list[str] = Field(default_factory=list)
