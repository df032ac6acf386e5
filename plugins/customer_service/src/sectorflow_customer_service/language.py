"""Chinese/English language identification by script (no model): the share of CJK characters among letters.

Rules (documented, deterministic):

- count CJK Unified Ideographs (U+4E00-U+9FFF, extension A U+3400-U+4DBF, compatibility U+F900-U+FAFF) and Latin
  letters (A-Z, a-z, full-width Ａ-ｚ); digits, punctuation and emoji are ignored;
- ``zh`` when CJK characters make up at least ``zh_ratio`` (default 0.3) of the counted characters; a Latin
  word is several letters while a Chinese word is one or two characters, so a mostly-Chinese sentence with an
  English product name ("我的visa卡被冻结了") is still ``zh``;
- ``en`` when there are Latin letters and the CJK share is lower; ``und`` (undetermined) when neither occurs
  ("12345", "???").
- ``mixed`` is ``True`` when both scripts occur (each at least 2 characters).
"""

from __future__ import annotations

from dataclasses import dataclass


def _is_cjk(ch: str) -> bool:
    o = ord(ch)
    return 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF


def _is_latin(ch: str) -> bool:
    return ("a" <= ch <= "z") or ("A" <= ch <= "Z") or ("ａ" <= ch <= "ｚ") or ("Ａ" <= ch <= "Ｚ")


@dataclass(frozen=True)
class LanguageGuess:
    """``lang`` in {"zh", "en", "und"}; ``cjk_ratio`` in [0, 1]; ``mixed`` when both scripts occur."""

    lang: str
    cjk_ratio: float
    mixed: bool


def detect_language(text: str, zh_ratio: float = 0.3) -> LanguageGuess:
    """Guess ``zh`` or ``en`` for one message (see the module docstring for the rules)."""
    cjk = sum(1 for ch in text if _is_cjk(ch))
    latin = sum(1 for ch in text if _is_latin(ch))
    if cjk + latin == 0:
        return LanguageGuess("und", 0.0, False)
    ratio = cjk / (cjk + latin)
    lang = "zh" if ratio >= zh_ratio else "en"
    return LanguageGuess(lang, round(ratio, 4), cjk >= 2 and latin >= 2)
