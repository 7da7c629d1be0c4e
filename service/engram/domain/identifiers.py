"""Exact identifiers (order numbers, codes, emails, phone numbers, dates) for the rule channel.

People type one code several ways: "CA981", "ca 981", "CA-981", "ＣＡ９８１". Every form is read
in one canonical spelling: full-width characters folded (NFKC), lower case, no hyphen inside a
code, a short letter prefix joined to the number that follows it. A memory also keeps the
spellings it was written with (its hyphenated code, the number alone), so older queries and
memories still meet; a query asks for the canonical forms only, so the exact code is the one
that holds all of them. Migration tenant/0014 gives older memories the same forms.
"""

from __future__ import annotations

import re
import unicodedata

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_URL = re.compile(r"https?://\S+")
_ISO_DATE = re.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b")
_PHONE = re.compile(r"(?<![\w])\+?\d[\d \-()]{7,}\d(?![\w])")
# A code mixes letters and digits (CA981, SF1234567, A-1234) or is a run of 3+ digits (12345).
_CODE = re.compile(r"(?<![\w@.])(?=[\w-]*\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?![\w@])", re.ASCII)


# "CA 981", "sf 1234567": a prefix of 1-3 letters, a space or hyphen, 2+ digits. Not when the
# letters are a word ("in 2024", "at 900", "is 42").
_SPACED_CODE = re.compile(r"(?<![\w@.])([A-Za-z]{1,3})[ -](\d{2,})(?![\w@])", re.ASCII)
PREFIX_WORDS = frozenset(
    "a an as at be by do go he if in is it me my no of on or so to up us we am are and but can did for get got "
    "had has her him his how its let may not now one our out own per put saw see she the too two was who why you "
    "day age top pay set bus ask".split()
)

# An identifier is matched whole; longer runs are blobs, not ids (and an index entry must stay small).
MAX_IDENTIFIER_CHARS = 200


def extract_identifiers(text: str) -> list[str]:
    """Identifiers of a memory, in first-seen order: each canonical form, and the spelling it was
    written with where that differs (a hyphenated code, the number of a spaced one)."""
    return _identifiers(text, keep_spellings=True)


def query_identifiers(text: str) -> list[str]:
    """Identifiers a query asks for: canonical forms only, so a memory that holds the exact code
    holds all of them, however either was typed."""
    return _identifiers(text, keep_spellings=False)


def _identifiers(text: str, *, keep_spellings: bool) -> list[str]:
    found: list[str] = []
    rest = _URL.sub(" ", unicodedata.normalize("NFKC", text))
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
    for match in _SPACED_CODE.finditer(rest):
        letters, digits = match.group(1).lower(), match.group(2)
        if letters in PREFIX_WORDS:
            continue
        found.append(letters + digits)
        if not keep_spellings:  # the number alone is not what the query asks for
            rest = rest.replace(match.group(), " ", 1)
    for match in _CODE.finditer(rest):
        token = match.group().lower()
        if _is_code(token):
            found.append(token.replace("-", ""))
            if keep_spellings and "-" in token:
                found.append(token)
    return list(dict.fromkeys(f for f in found if len(f) <= MAX_IDENTIFIER_CHARS))


def _is_code(token: str) -> bool:
    digits = sum(c.isdigit() for c in token)
    letters = sum(c.isalpha() for c in token)
    if letters == 0:
        return digits >= 3  # "12345" yes, "42" no: small numbers are quantities, not ids
    return digits >= 1 and letters >= 1 and len(token) >= 3
