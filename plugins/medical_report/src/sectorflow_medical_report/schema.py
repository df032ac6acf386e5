"""Pydantic input and output models of the ``medical_report`` task.

Offsets are character offsets into the input ``text`` (``end`` exclusive, Python slicing: ``text[start:end]``).
Sizes are millimetres.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator
from sectorflow import TaskResult, TextItem

from .certainty import Certainty
from .lexicon import site_kind

Modality = Literal["radiograph", "CT", "MR", "ultrasound", "PET/CT", "mammography"]
Assertion = Literal["present", "absent", "uncertain"]
Temporality = Literal["new", "stable", "increased", "decreased", "prior"]


class ReportInput(TextItem):
    """One radiology findings text and what the caller knows about the exam and the patient. A bare string is
    accepted as ``{"text": ...}`` (``Taskflow("medical_report")("胸片显示右肺结节，直径约8mm")``)."""

    text_hint = "the findings text of the report"
    text: str = Field(min_length=1, max_length=20000, description="Findings (and impression) text, zh or en.")
    language: Literal["auto", "zh", "en"] = Field(
        "auto", description="Language of the rendered report; auto = the language of the text.")
    modality: Modality | None = Field(None, description="Exam modality; overrides what the text says.")
    body_region: str | None = Field(None, max_length=40, description="Body region (chest, abdomen...); overrides the text.")
    patient_risk: Literal["low", "high"] | None = Field(
        None, description="Lung-cancer risk for Fleischner 2017 (smoking, age, family history...); none = both given.")
    screening: bool | None = Field(
        None, description="Lung-cancer screening CT (Lung-RADS) rather than an incidental finding (Fleischner); "
                          "none = inferred from the text (low-dose CT, LDCT, lung cancer screening, 肺癌筛查, 低剂量CT).")
    age: int | None = Field(None, ge=0, le=130, description="Years; Fleischner 2017 does not apply under 35.")
    known_cancer: bool = Field(False, description="Known primary cancer (Fleischner 2017 does not apply).")
    immunocompromised: bool = Field(False, description="Immunosuppressed patient (Fleischner 2017 does not apply).")


class Anatomy(BaseModel):
    """One site of a finding. A lobe only where the text says lobe / 叶 or lingula; a radiographic lung zone ("right
    lower lung", "left midlung", "lung bases", 右下肺野, 右下肺) is a zone, never promoted to a lobe."""

    key: str = Field(description="Canonical site, e.g. right_lower_lobe (a lobe), right_lower_lung (a zone), pleura, "
                                 "heart.")
    laterality: Literal["right", "left", "bilateral"] | None = None
    text: str | None = Field(None, description="As written; none when implied by the finding (effusion -> pleura).")
    start: int | None = None
    end: int | None = None
    source: Literal["rules", "implied", "model"] = "rules"
    kind: Literal["lobe", "zone", "lung", "other"] | None = Field(
        None, description="lobe: right_upper/middle/lower_lobe, left_upper/lower_lobe, lingula, upper/middle/"
                          "lower_lobe; zone: a radiographic lung zone (right/left_upper/mid/lower_lung, upper/mid/"
                          "lower_lung, lung_base, lung_apex); lung: a whole lung or the lungs; other: pleura, heart, "
                          "fissure, liver, ...; none: a tagger span the lexicon does not know. Filled from key.")
    nonexistent: bool = Field(
        False, description="The text names a lobe that does not exist ('left middle lobe', 左肺中叶, 'right "
                           "lingula'): key is the lung of that side, text keeps what was written, and a "
                           "nonexistent_site warning names the finding.")

    @model_validator(mode="after")
    def _fill_kind(self) -> Anatomy:
        if self.kind is None:
            self.kind = site_kind(self.key)  # type: ignore[assignment]
        return self


class Size(BaseModel):
    text: str = Field(description="As written, e.g. '1.9 x 1.8 cm'.")
    start: int
    end: int
    axes_mm: list[float]
    mm: float = Field(description="Mean of the first two axes (a range: its upper bound), millimetres.")
    bound: Literal["<", ">"] | None = Field(
        None, description="'<' for '<6 mm', 'less than', 小于; '>' for '>8 mm', 'greater than', 大于: the true size is "
                          "below/above mm, and guideline buckets use the next step below/above (Fleischner 1 mm, "
                          "Lung-RADS 0.1 mm).")


class Cue(BaseModel):
    text: str
    start: int
    end: int
    category: str = Field(description="ConText category: neg_pre, neg_post, unc_pre, unc_post.")


class Finding(BaseModel):
    id: int
    type: str = Field(description="nodule, mass, effusion, pneumothorax, consolidation, opacity, cardiomegaly, ...")
    text: str
    start: int
    end: int
    assertion: Assertion
    cue: Cue | None = Field(None, description="The cue that set the assertion (none: present by default).")
    certainty: Certainty | None = Field(
        None, description="For an uncertain finding, the grade of its cue (none otherwise): probable ('probable', "
                          "'likely', 可能性大), unlikely ('is unlikely', 可能性小), hypothetical ('if', 'evaluate "
                          "for', 'to exclude', 如有, 排除) or possible (every other hedge: 'possible', 'cannot "
                          "exclude', 'may represent', 可疑, 考虑, 可能, 不除外, 待排). ConText and medspaCy give all of "
                          "them one value (assertion 'uncertain'); report_text and impression state the grade (see "
                          "certainty.py).")
    temporality: Temporality | None = None
    experiencer: Literal["patient", "other"] = Field(
        "patient", description="ConText experiencer: 'other' for a relative's finding (family history); such a "
                               "finding gets no code, recommendation or impression line.")
    anatomy: list[Anatomy] = Field(default_factory=list)
    laterality: Literal["right", "left", "bilateral"] | None = None
    size: Size | None = None
    solid_component_mm: float | None = None
    count: Literal["single", "multiple"] | None = None
    attributes: list[str] = Field(default_factory=list, description="solid, part-solid, subsolid, ground-glass, "
                                  "calcified, spiculated; nodular, reticulonodular, fibronodular ('nodular opacity' = "
                                  "opacity + nodular, not a nodule: Hansell 2008)")
    sentence: int = Field(description="0-based sentence index.")
    same_as: int | None = Field(
        None, description="The id of an earlier finding this one restates (an impression repeating the findings: "
                          "same type, site and size, a later sentence); it is not counted, coded or listed again.")
    historical: bool = Field(
        False, description="Stated in the history or indication ('Indication: nodule on chest x-ray.', 临床诊断：肺结节随访。, "
                           "'外院胸片提示右肺结节'): the reason for the exam or an earlier exam's finding (ConText "
                           "temporality historical), not counted as a finding of this exam (no guideline, code or "
                           "impression line).")
    model_agrees: bool | None = Field(None, description="Whether the tagger marked this span too (none: no model).")


class Exam(BaseModel):
    modality: Modality | None = None
    modality_source: Literal["caller", "text", "none"] = "none"
    body_region: str | None = None
    body_region_source: Literal["caller", "text", "anatomy", "none"] = "none"
    screening: bool = False


class Recommendation(BaseModel):
    guideline: str = Field(description="Fleischner 2017, Lung-RADS v2022 or 'CT for radiograph nodule'.")
    category: str
    text: str = Field(description="In the report language.")
    finding_ids: list[int]
    risk: Literal["low", "high", "unspecified"] = "unspecified"
    source: str = Field(description="Citation of the guideline.")
    verification: str = Field(description="V~ (table read in a copy of the primary text) or U (secondary only).")


class Code(BaseModel):
    code: str
    system: Literal["ICD-10-CM", "ICD-10"]
    name: str
    finding_ids: list[int]
    verification: str


class ReportWarning(BaseModel):
    kind: Literal["implausible_size", "mass_size", "conflict", "guideline_not_applied", "missing_size",
                  "unrecognised_span", "guideline_incomplete", "nonexistent_site"] = Field(
        description="guideline_incomplete: a recommendation is given, but what the report states (a nodule "
                    "compared with a prior exam, a part-solid nodule's 6-8 mm solid component) decides more than "
                    "the encoded rows say; the message says what. nonexistent_site: the text names a lobe that does "
                    "not exist ('left middle lobe', 'right lingula'); the site is read as that side's lung.")
    message: str
    finding_ids: list[int] = Field(default_factory=list)


class ModelSpan(BaseModel):
    label: Literal["ANAT", "FIND"]
    text: str
    start: int
    end: int
    finding_id: int | None = Field(None, description="The rule finding it overlaps, if any.")


class MedicalReport(TaskResult):
    """A structured, guideline-aware report of one findings text."""

    language: Literal["zh", "en"]
    exam: Exam
    findings: list[Finding]
    recommendations: list[Recommendation]
    codes: list[Code]
    impression: str
    report_text: str
    warnings: list[ReportWarning]
    model_spans: list[ModelSpan] = Field(default_factory=list,
                                         description="Spans the Paddle tagger proposed (advisory; rules decide).")
