"""sectorflow medical report plugin: radiology findings text (zh + en) to a structured, guideline-aware report.

Rules (:mod:`.extract`, :mod:`.context`) are authoritative for findings, assertions and recommendations
(:mod:`.guidelines`); a small Paddle BiGRU tagger (:mod:`.tagger`) proposes anatomy and finding spans beside them.
"""

__version__ = "0.1.0"
