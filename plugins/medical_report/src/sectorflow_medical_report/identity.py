"""Which nodule and mass mentions name the same lesion: an impression restating the findings, and an interpretation
of the lesion just described (``Finding.same_as``). Split from :mod:`.extract` (the rules are described there and in
docs/medical-report.md)."""

from __future__ import annotations

import re

from .guidelines import nodule_type
from .schema import Finding

_SECOND = re.compile(r"\b(another|additional|second|third|other|further|separate|different|also|additionally)\b"
                     r"|另|又|再|还|亦见|并见|也见|其他|其余|第[二三四五]",
                     re.IGNORECASE)
_IMAGE_REF = re.compile(r"\b(image|img|im|series|se|slice)\s*(no\.?|number|#)?\s*:?\s*\d+|[第层]\s*\d+\s*层|\d+\s*层",
                        re.IGNORECASE)
_POSITION = re.compile(r"\b(anterior|posterior|apical|apicoposterior|superior|inferior|medial|lateral|basal|basilar|"
                       r"anteromedial|posterolateral|peripheral|central|subpleural|perifissural|juxtapleural)\b"
                       r"|尖后段|尖段|后段|前段|背段|前基底段|后基底段|外基底段|内基底段|基底段|外侧段|内侧段|上舌段|下舌段|胸膜下",
                       re.IGNORECASE)
_GENERIC_SITES = {"lung", "upper_lobe", "middle_lobe", "lower_lobe", "lung_base", "lung_apex", "both_lungs", "mid_lung", "fissure",
                  "upper_lung", "lower_lung"}

_SAME_SITE = {"right_upper_lung": "right_upper_lobe", "right_lower_lung": "right_lower_lobe",
              "left_upper_lung": "left_upper_lobe", "left_lower_lung": "left_lower_lobe"}
"""For telling whether two mentions name one lesion only: a zone and the lobe of the same name are one site
("8 mm nodule in the right lower lung. IMPRESSION: 8 mm right lower lobe nodule." is one nodule, as radiologists
use the two loosely in one report; the reported sites keep what each says)."""


def restatements(text: str, findings: list[Finding], sents: list[tuple[int, int]]) -> None:
    """Mark a present nodule or mass that restates an earlier one (``same_as``): a report's impression repeating
    its findings ("There is a 7 mm nodule in the right upper lobe. ... IMPRESSION: 7 mm right upper lobe nodule.")
    is one nodule, not two (which would give Fleischner's multiple-nodule row and R91.8).

    Only when nothing tells them apart: a later sentence; the same type and count; the same specific site (a lobe
    or one lung, not "lung" alone) and laterality; the same size, or no size on one of them; no conflicting
    nodule type (solid or unstated / part-solid / ground-glass / calcified) or temporality; no word for another
    one before it in its sentence ("another", "second", "also", 另, 又, 还); no differing image or series number
    and no differing segment or position word ("anterior" / "posterior", 尖段 / 后段) in the two sentences. Two
    nodules written alike in different sentences are thus read as one: the less conservative reading, so it is
    only taken when every one of these agrees. The restated finding takes what only the restatement states: its
    size, temporality ("IMPRESSION: Right upper lobe nodule, new since prior": Lung-RADS reads new nodules on
    their own thresholds), solid component and attributes."""
    lesions = [f for f in findings if f.type in ("nodule", "mass") and f.assertion == "present"
               and f.experiencer == "patient" and not f.historical]
    # computed once per finding and per sentence (a 20,000-character paste may hold hundreds of nodules)
    site = {f.id: frozenset(_SAME_SITE.get(a.key, a.key) for a in f.anatomy if a.source == "rules") for f in lesions}
    position: dict[int, set[str]] = {}
    image: dict[int, set[str]] = {}
    for k in {f.sentence for f in lesions}:
        s, e = sents[k]
        position[k] = {m.group(0).lower() for m in _POSITION.finditer(text, s, e)}
        image[k] = {re.sub(r"\D", "", m.group(0)) for m in _IMAGE_REF.finditer(text, s, e)}
    for g in lesions:
        s_start, _ = sents[g.sentence]
        if not site[g.id] or site[g.id] <= _GENERIC_SITES or g.laterality is None \
                or _SECOND.search(text[s_start:g.start]):
            continue
        for f in lesions:
            if f.sentence >= g.sentence or f.same_as is not None:
                continue
            if (f.type, f.laterality) != (g.type, g.laterality) or not (site[f.id] & site[g.id]) \
                    or (f.count or "single") != (g.count or "single") \
                    or site[f.id] <= _GENERIC_SITES:
                continue
            if f.size and g.size and abs(f.size.mm - g.size.mm) >= 0.5:
                continue
            if nodule_type(f) != nodule_type(g):  # no attribute reads as solid, as the guidelines read it
                continue
            if f.temporality and g.temporality and f.temporality != g.temporality:
                continue
            pf, pg, imf, img = position[f.sentence], position[g.sentence], image[f.sentence], image[g.sentence]
            if imf and img and imf != img:
                continue
            if pf and pg and pf != pg:  # anterior vs posterior, 尖段 vs 后段
                continue
            g.same_as = f.id
            if f.size is None and g.size is not None:
                f.size = g.size.model_copy()
            f.temporality = f.temporality or g.temporality
            if f.solid_component_mm is None:
                f.solid_component_mm = g.solid_component_mm
            f.attributes += [a for a in g.attributes if a not in f.attributes]
            break



_INTERPRETIVE = re.compile(r"考虑|可能|倾向|符合|提示|不除外|待排|\b(likely|probably|possibly|consistent with|suggestive of|"
                           r"compatible with|may represent|could represent|suspicious for|favou?r(ed|s)?)\b",
                           re.IGNORECASE)
"""An interpretation of a lesion just described ("右肺上叶结节，约6mm，考虑炎性结节可能", "a 6 mm nodule, possibly an
inflammatory nodule"): what the lesion may be, not another lesion."""


def characterisations(text: str, findings: list[Finding], sents: list[tuple[int, int]]) -> None:
    """Mark an uncertain nodule or mass that only interprets the present one just before it in its sentence
    (``same_as``): "右肺上叶结节，约6mm，考虑炎性结节可能" is one nodule whose nature is uncertain, not a nodule and a second,
    uncertain one (which the impression had listed as 结节待排).

    Only when an interpretive cue (考虑, 可能, 不除外, likely, consistent with, ...) stands between the two, the
    uncertain mention has no size of its own, no other laterality, no specific site of its own (or the same one),
    and no word for another lesion ("another", 另, 还) stands before it in its sentence."""
    for g in findings:
        if g.type not in ("nodule", "mass") or g.assertion != "uncertain" or g.size is not None \
                or g.experiencer != "patient" or g.same_as is not None:
            continue
        s_start, _ = sents[g.sentence]
        before = [f for f in findings if f.sentence == g.sentence and f.end <= g.start and f.type == g.type
                  and f.assertion == "present" and f.experiencer == "patient" and f.same_as is None
                  and not f.historical]
        if not before or _SECOND.search(text[s_start:g.start]):
            continue
        f = before[-1]
        if g.laterality is not None and g.laterality != f.laterality:
            continue
        g_site = frozenset(a.key for a in g.anatomy if a.source == "rules")
        f_site = frozenset(a.key for a in f.anatomy if a.source == "rules")
        if g_site and not g_site <= _GENERIC_SITES and g_site != f_site:
            continue
        if _INTERPRETIVE.search(text, f.end, g.end):
            g.same_as = f.id
