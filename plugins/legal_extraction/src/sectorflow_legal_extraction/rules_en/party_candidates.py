"""Party candidates the preamble rules did not take, and the learned re-ranker that decides which to add.

The rules (:func:`.party_rules.parties`) read the preamble's defined terms; contracts that name a party only in a
signature block, in a list of companies, or with no defined term lose it (CUAD development pool: rules' recall
73.5 %). :func:`candidates` collects every company name of the text that ends in a legal form ("Cardlytics, Inc.",
"DAIRY CREST LIMITED", "Tate & Lyle PLC") and is not one the rules found, with :data:`FEATURES` describing where and
how it is written (mentions, first position, a defined term or ", a Delaware corporation" after it, "between" or
"and" before it, a signature block's company line, ...). :class:`PartyReranker` is a logistic regression over those
features, trained by ``plugins/legal_extraction/scripts/train_party_reranker.py`` on CUAD train + contracts_more
(never test), its threshold chosen there by cross-validation; its weights are JSON (``party_reranker/weights.json``,
sha256, metrics and provenance in ``party_reranker/manifest.json``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from sectorflow import BundleIntegrityError, ConfigError

from .law import known_place
from .party_rules import PREAMBLE_CHARS, _party_key, looks_like_party
from .signatures import signature_parties
from ..schema import Extraction

_FORMS = (r"Inc|Incorporated|Corp|Corporation|Co(?=\.)|LLC|L\.L\.C|Ltd|Limited|LP|L\.P|LLP|L\.L\.P|PLC|plc|GmbH|AG|S\.A|"
          r"SA|N\.V|B\.V|BV|NV|Pty|Pte|Bhd|KG|KGaA|A/S|ApS|AB|Oy|Oyj|S\.p\.A|SpA|S\.r\.l|SARL|S\.A\.R\.L|S\.L|Ltda|"
          r"N\.A|FSB|MHC|S\.A\.S|G\.I\.E|S/A|SRL")
_FORMS_ALL = _FORMS + "|" + _FORMS.upper()
_WORD = r"(?:[A-Z0-9][\w'’&.\-/]*|\([A-Z][\w&.\-]*\)|&|of|and|for|the|de|du|des|la|le|von|van|y|e)"
_NAME = re.compile(rf"(?<![\w&.\-])((?:{_WORD}[ \t]+){{0,7}}?[A-Z0-9][\w'’&.\-/()]*,?[ \t]+(?:{_FORMS_ALL})\b\.?)")
_LEAD = re.compile(r"^(?:(?:and|of|for|the|de|du|des|la|le|von|van|y|e|&|This|THIS|The|THE|By|BY|Between|BETWEEN|"
                   r"Among|AMONG|And|AND|Whereas|WHEREAS|To|TO|From|FROM|With|WITH|Dear|Attn|Name|NAME|Witness|"
                   r"WITNESS|Agreed|AGREED|Accepted|ACCEPTED|Signed|SIGNED|For|FOR|On|ON|In|IN|If|IF|Each|EACH|"
                   r"Party|PARTY|[A-Z]\)|\(\w{1,3}\)|\d+\.)[ \t]+)+")
_DEFINED_AFTER = re.compile(r"^[^()\n]{0,120}?\(\s*(?:the\s+|each\s+|hereinafter\s+(?:referred\s+to\s+as\s+|called\s+)?)?"
                            r"[\"“”']", re.I)
_DESCRIBED_AFTER = re.compile(r"^,?\s*(?:a|an)\s+(?:[\w.\-]+\s+){0,5}?(?:corporation|company|partnership|limited|"
                              r"association|bank|organi[sz]ation|entity|institution|société|sociedad)\b", re.I)
_BETWEEN_BEFORE = re.compile(r"\b(?:between|among|amongst|by)\s*[:,]?\s*(?:the\s+)?$", re.I)
_AND_BEFORE = re.compile(r"(?:\band|&|;|\(\d\)|\([a-z]\))\s*[:,]?\s*(?:the\s+)?$", re.I)
_OF_BEFORE = re.compile(r"\b(?:of|to|with|from|under|by|for|than|including)\s+(?:the\s+)?$", re.I)
_JOINT = re.compile(r"joint\s+filing|schedule\s+13[dg]|\b13[dg]\b", re.I)

FEATURES = ("bias", "log_mentions", "log_first", "first_share", "in_preamble", "in_first_1000", "in_title",
            "signature", "defined_after", "described_after", "between_before", "and_before", "of_before",
            "all_caps", "n_words", "rules_0", "rules_1", "rules_2", "rules_3plus", "joint_filing", "possessive",
            "head_mentions", "party_word_near")
"""The candidate's features, in the order of the re-ranker's weights."""


@dataclass
class Candidate:
    """A company name of the text the rules did not take: ``name`` as first written, the span of its first
    mention, and ``features`` (a dict over :data:`FEATURES`)."""

    name: str
    start: int
    end: int
    features: dict[str, float]


_TITLE_WORDS = {"ceo", "cfo", "coo", "cto", "president", "director", "managing", "officer", "chief", "executive",
                "vice", "chairman", "secretary", "treasurer", "manager", "title", "signature", "sender", "receiver",
                "abbreviations", "attention", "copy", "cc", "notices", "address", "general", "partner", "member"}


def _clean(raw: str) -> str:
    """The name without what runs into it: leading connectives and titles ("CEO The Acme Group, Inc.", "Managing
    Director ACME INC."), and mixed-case words before a name in capitals ("Lenders and ACME CORPORATION")."""
    name = re.sub(r"\s+", " ", raw).strip(" ,")
    for _ in range(3):
        name = _LEAD.sub("", name)
        words = name.split()
        while len(words) > 2 and words[0].lower().strip(":,.") in _TITLE_WORDS:
            words.pop(0)
        name = " ".join(words)
    caps = re.search(r"(?:^|\s)((?:[A-Z0-9][A-Z0-9&.,'’\-/()]*\s+){1,}[A-Z0-9][A-Z0-9&.,'’\-/()]*)$", name)
    if caps and caps.start(1) > 0 and re.search(r"[a-z]", name[:caps.start(1)]) and len(caps.group(1).split()) >= 2:
        name = _LEAD.sub("", caps.group(1))
    name = name.rstrip(",")
    return name[:-1] if re.search(r"\b(?:Corporation|Company|Limited|Incorporated|LLC|LLP|LP|PLC|GmbH|AG|SA|AB|KG)\.$",
                                  name, re.I) else name  # a sentence's full stop


def covered(key: str, keys: list[str]) -> bool:
    """Whether a name (its ``_party_key``) is one of ``keys`` already: the same, a part of one ("Lyle PLC" of "Tate &
    Lyle PLC") or one with more words ("Acme" and "Acme Bio"). Keeping "SUNTRON-KANSAS" beside "SUNTRON" was tried:
    more near-duplicates, parties F1 down on the cross-validated pool (89.5 -> 88.9 %)."""
    return any(key in k or k in key for k in keys if k)


def candidates(text: str, found: list[Extraction]) -> list[Candidate]:
    """Company names of ``text`` (first mention, every later mention counted) that none of the rules' ``found``
    parties contains or is contained in. Linear in the text's length."""
    rule_keys = [k for k in (_party_key(p.value["name"]) for p in found) if k]
    signature_keys = {_party_key(p.value["name"]) for p in signature_parties(text)}
    groups: dict[str, dict] = {}
    for match in _NAME.finditer(text):
        name = _clean(match.group(1))
        if len(name.split()) < 2 or not looks_like_party(name) or known_place(name.split()[0]) and len(name.split()) == 2:
            continue  # "Delaware Corporation": a description
        if re.search(r"\b(?:a|an)\s+$", text[max(0, match.start(1) - 4):match.start(1)], re.I) and \
                match.group(1).startswith(name.split()[0]):
            continue  # "a Professional Corporation"
        key = _party_key(name)
        if len(key) < 3 or covered(key, rule_keys):
            continue
        begin = match.start(1) + match.group(1).find(name.split()[0])
        group = groups.setdefault(key, {"name": name, "start": begin, "end": match.end(1), "mentions": [],
                                        "caps": name.upper() == name})
        group["mentions"].append((begin, match.end(1)))
    n_rules = len(found)
    joint = bool(_JOINT.search(text[:1500]))
    length = max(len(text), 1)
    out = []
    for key, group in groups.items():
        feats = dict.fromkeys(FEATURES, 0.0)
        feats["bias"] = 1.0
        mentions = group["mentions"]
        first = mentions[0][0]
        feats["log_mentions"] = math.log1p(len(mentions))
        feats["log_first"] = math.log1p(first / 100)
        feats["first_share"] = first / length
        feats["in_preamble"] = float(first < PREAMBLE_CHARS)
        feats["in_first_1000"] = float(first < 1000)
        feats["in_title"] = float(first < 300)
        feats["head_mentions"] = math.log1p(sum(1 for b, _ in mentions if b < PREAMBLE_CHARS))
        feats["signature"] = float(any(key == k or (len(k) >= 4 and (key in k or k in key)) for k in signature_keys))
        for b, e in mentions[:20]:
            after = text[e:e + 160]
            before = text[max(0, b - 40):b]
            feats["defined_after"] = max(feats["defined_after"], float(bool(_DEFINED_AFTER.match(after))))
            feats["described_after"] = max(feats["described_after"], float(bool(_DESCRIBED_AFTER.match(after))))
            feats["between_before"] = max(feats["between_before"], float(bool(_BETWEEN_BEFORE.search(before))))
            feats["and_before"] = max(feats["and_before"], float(bool(_AND_BEFORE.search(before)) and b < PREAMBLE_CHARS))
            feats["possessive"] = max(feats["possessive"], float(after[:2] in ("'s", "’s")))
        feats["of_before"] = float(bool(_OF_BEFORE.search(text[max(0, first - 40):first])))
        feats["party_word_near"] = float(bool(re.search(r"\b(?:part(?:y|ies)|hereto|undersigned)\b",
                                                        text[max(0, first - 200):first + 300], re.I)))
        feats["all_caps"] = float(group["caps"])
        feats["n_words"] = min(len(group["name"].split()), 10) / 10
        feats[f"rules_{min(n_rules, 3)}" if n_rules < 3 else "rules_3plus"] = 1.0
        feats["joint_filing"] = float(joint)
        out.append(Candidate(group["name"], group["start"], group["end"], feats))
    return out


MODEL_DIR = Path(__file__).resolve().parents[1] / "party_reranker"
"""The shipped re-ranker: ``weights.json`` (``{"features", "weights", "threshold"}``) and ``manifest.json`` (version,
the weights file's sha256, metrics, data provenance, command), written by ``scripts/train_party_reranker.py``."""


class PartyReranker:
    """Logistic regression over :data:`FEATURES`: ``score(candidate)`` is the probability that the candidate is a
    party CUAD lists; :meth:`add` appends the candidates at or above the trained ``threshold`` to the rules'
    parties (source ``model:en_party_reranker``, confidence = the probability).

    Raises ``BundleIntegrityError`` when ``weights.json``'s sha256 differs from the manifest's and ``ConfigError``
    when its features differ from :data:`FEATURES` (a model of another version)."""

    def __init__(self, folder: Path = MODEL_DIR) -> None:
        folder = Path(folder)
        self.manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        raw = (folder / "weights.json").read_bytes()
        digest = hashlib.sha256(raw).hexdigest()
        if digest != self.manifest["files"]["weights.json"]:
            raise BundleIntegrityError(f"{folder}/weights.json has SHA-256 {digest}, the manifest says "
                                       f"{self.manifest['files']['weights.json']}: reinstall the plugin or retrain "
                                       f"(scripts/train_party_reranker.py).")
        model = json.loads(raw)
        if list(model["features"]) != list(FEATURES):
            raise ConfigError(f"{folder}/weights.json: features {model['features']} differ from this version's "
                              f"{list(FEATURES)}; retrain with scripts/train_party_reranker.py.")
        self.weights = [float(w) for w in model["weights"]]
        self.threshold = float(model["threshold"])

    def score(self, candidate: Candidate) -> float:
        z = sum(w * candidate.features[f] for w, f in zip(self.weights, FEATURES))
        return 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))

    def add(self, text: str, found: list[Extraction], threshold: float | None = None) -> list[Extraction]:
        cut = self.threshold if threshold is None else threshold
        out = list(found)
        keys = [k for k in (_party_key(p.value["name"]) for p in found) if k]
        for cand in sorted(candidates(text, found), key=lambda c: c.start):
            p = self.score(cand)
            key = _party_key(cand.name)
            if p < cut or covered(key, keys):
                continue
            keys.append(key)
            out.append(Extraction(text=text[cand.start:cand.end], start=cand.start, end=cand.end,
                                  value={"name": cand.name, "role": "party", "defined_term": None},
                                  confidence=round(p, 3), source="model:en_party_reranker"))
        return out
