"""Exact identifiers (order numbers, codes, emails, phone numbers, dates) for the rule channel."""

from __future__ import annotations

import re

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_URL = re.compile(r"https?://\S+")
_ISO_DATE = re.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b")
_PHONE = re.compile(r"(?<![\w])\+?\d[\d \-()]{7,}\d(?![\w])")
# A code mixes letters and digits (CA981, SF1234567, A-1234) or is a run of 3+ digits (12345).
_CODE = re.compile(r"(?<![\w@.])(?=[\w-]*\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?![\w@])", re.ASCII)


# An identifier is matched whole; longer runs are blobs, not ids (and an index entry must stay small).
MAX_IDENTIFIER_CHARS = 200


def extract_identifiers(text: str) -> list[str]:
    """Identifiers in text, normalised (lower case, phone digits only), in first-seen order."""
    found: list[str] = []
    rest = _URL.sub(" ", text)
    for match in _EMAIL.finditer(rest):
        found.append(match.group().lower())
    rest = _EMAIL.sub(" ", rest)
    for y, m, d in _ISO_DATE.findall(rest):
        found.append(f"{int(y):04d}-{int(m):02d}-{int(d):02d}")
    rest = _ISO_DATE.sub(" ", rest)
    for match in _PHONE.finditer(rest):
        digits = re.sub(r"\D", "", match.group())
        if len(digits) >= 8:
            found.append(digits)
            rest = rest.replace(match.group(), " ")
    for match in _CODE.finditer(rest):
        token = match.group().lower()
        if _is_code(token):
            found.append(token)
    return list(dict.fromkeys(f for f in found if len(f) <= MAX_IDENTIFIER_CHARS))


def _is_code(token: str) -> bool:
    digits = sum(c.isdigit() for c in token)
    letters = sum(c.isalpha() for c in token)
    if letters == 0:
        return digits >= 3  # "12345" yes, "42" no: small numbers are quantities, not ids
    return digits >= 1 and letters >= 1 and len(token) >= 3
