"""What any caller may send, checked once where it comes in (REST, MCP and CLI build the same
models from these types): text PostgreSQL can store, metadata of a bounded depth and size, and
instants the time arithmetic can hold. A value outside is refused with the field's name, before
it reaches the database or a serialiser."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, GetJsonSchemaHandler, Strict, TypeAdapter, ValidationError
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from engram.errors import InvalidInput

# PostgreSQL text cannot hold NUL, and UTF-8 cannot encode a lone surrogate.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
METADATA_DEPTH = 32
METADATA_BYTES = 64 * 1024
# Instants stay clear of the ends of what datetime holds, so that a week or a year either side,
# or a time zone, never overflows.
EARLIEST = datetime(2, 1, 1, tzinfo=UTC)
LATEST = datetime(9998, 12, 31, tzinfo=UTC)
_AFTER_LATEST = datetime(LATEST.year + 1, 1, 1, tzinfo=UTC)
# An instant is written as ISO 8601 text (a year, then the month): never a bare number, which the
# parser would otherwise read as seconds since 1970.
_ISO_DATE = re.compile(r"\d{4}-\d{2}")


def storable_text(value: str) -> str:
    found = _UNSTORABLE.search(value)
    if found is not None:
        what = "a NUL character" if found.group(0) == "\x00" else "a lone surrogate (invalid Unicode)"
        raise ValueError(f"contains {what} at position {found.start()}")
    return value


def readable(text: str) -> bool:
    """Whether the text holds something to read: not only spaces, control characters and
    zero-width or other invisible format characters (nothing a reader or a search could tell from
    another such text). The same rule as the published pattern of a memory's content."""
    return _READABLE.search(text) is not None


def visible(text: str) -> str:
    """The text as a reader sees it: without its control, zero-width and other invisible
    characters (spaces kept). Compared, never stored: stored words are the user's words."""
    return _HIDDEN.sub("", text)


def _depth(value: Any, limit: int) -> int:
    """How deep a JSON value nests, counted no further than the limit (iterative: any input)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def bounded_metadata(value: dict[str, Any]) -> dict[str, Any]:
    if _depth(value, METADATA_DEPTH) > METADATA_DEPTH:
        raise ValueError(f"nests deeper than {METADATA_DEPTH} levels")
    for key, item in _walk(value):
        storable_text(key)
        if isinstance(item, str):
            storable_text(item)
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size > METADATA_BYTES:
        raise ValueError(f"is {size} bytes as JSON; the limit is {METADATA_BYTES}")
    return value


def _walk(value: Any) -> list[tuple[str, Any]]:
    """Every (key, value) of nested dicts and every string of nested lists, iteratively."""
    out, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                out.append((str(key), child))
                stack.append(child)
        elif isinstance(item, list):
            out.extend(("", child) for child in item)
            stack.extend(item)
    return out


def iso_instant(value: Any) -> Any:
    """Text in ISO 8601 (or a datetime from Python callers) goes on to the parser; anything else,
    a number above all, is refused as what the OpenAPI documents it: a date-time."""
    if isinstance(value, datetime) or (isinstance(value, str) and _ISO_DATE.match(value)):
        return value
    raise ValueError("must be an ISO 8601 date-time, e.g. 2026-06-17T18:00:00Z")


def within_bounds(value: datetime) -> bool:
    """Whether the instant (a naive one read as UTC) lies in the years EARLIEST to LATEST both on
    its own clock and in UTC: "0002-01-01T00:00+23:59" is year 1 in UTC, and
    "9998-12-31T23:00-05:00" year 9999, where a year of arithmetic, or the database driver's
    conversion to UTC, overflows. Compared, never converted: a comparison cannot overflow."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return EARLIEST.year <= value.year <= LATEST.year and EARLIEST <= aware < _AFTER_LATEST


def bounded_instant(value: datetime) -> datetime:
    """A time zone is required to compare (a naive time is taken as UTC); the year must leave room
    for time arithmetic either side, on the instant's own clock and in UTC."""
    if not within_bounds(value):  # checked before any arithmetic can overflow
        raise ValueError(f"must lie between {EARLIEST.date()} and {LATEST.date()}, in UTC too")
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def integral(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


class Published:
    """Adds to a type's published JSON Schema what its validators refuse, where a JSON Schema can
    say it (the validators stay the rule, with their clearer messages)."""

    def __init__(self, **keywords: Any) -> None:
        self.keywords = keywords

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {**handler(core_schema), **self.keywords}


# No NUL. (A lone surrogate cannot be said portably: some validators see UTF-16 code units.)
_STORABLE = Published(pattern=r"^[^\u0000]*$")
# ...and more than whitespace, as str.strip() sees it (spelled out: regex dialects disagree on \s).
_SPACE = r"\u0009-\u000d\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# ...and not only control characters or what Unicode says is drawn as nothing either: its
# Default_Ignorable_Code_Point characters (zero-width space and joiners, BOM, bidi marks, the soft
# hyphen, variation selectors, the Hangul fillers, tags...), and the blank braille pattern.
_CONTROL = r"\u0001-\u0008\u000e-\u001b\u007f-\u0084\u0086-\u009f"  # those that are no space
_IGNORABLE = (
    r"\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    r"\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
)
_INVISIBLE = _SPACE + _CONTROL + _IGNORABLE
# Those beyond the BMP: refused by readable(), left out of the published pattern (a validator
# that sees UTF-16 code units could not read them there).
_INVISIBLE_ASTRAL = r"\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
_READABLE = re.compile(rf"[^\u0000{_INVISIBLE}{_INVISIBLE_ASTRAL}]")
_HIDDEN = re.compile(rf"[{_CONTROL}{_IGNORABLE}{_INVISIBLE_ASTRAL}]")  # what visible() drops
_NOT_BLANK = Published(pattern=rf"^[^\u0000]*[^\u0000{_INVISIBLE}][^\u0000]*$")
# A year from 0002 to 9998, as bounded_instant requires (which refuses, besides, the hours at either
# end whose UTC time falls outside: no pattern can say that of every ISO 8601 spelling).
_BOUNDED = Published(
    pattern="^(000[2-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-",
    description=f"ISO 8601, between {EARLIEST.date()} and {LATEST.date()} (in UTC too); without a time zone, UTC",
)


def something_to_read(value: str) -> str:
    if not readable(value):
        raise ValueError("is blank: only spaces or invisible characters")
    return value


Text = Annotated[str, AfterValidator(storable_text), _STORABLE]
# What a search looks for: a blank one would find only noise.
Query = Annotated[str, AfterValidator(storable_text), AfterValidator(something_to_read), _NOT_BLANK]
# A memory's content: the write path refuses one that is blank once stripped.
Content = Annotated[str, AfterValidator(storable_text), _NOT_BLANK]
# A body's scalars are of the type its schema says: lax parsing would read "0.5" or true as a
# number and 0 or "yes" as a boolean (query strings, all text, are still parsed).
Flag = Annotated[bool, Strict()]
Number = Annotated[float, Strict()]  # an integer is a number too
# At least 1; 2.0 is an integer to JSON Schema, 2.5 is not. (The bound comes before the
# validators, or pydantic could not publish it as a JSON Schema minimum.)
Count = Annotated[int, Field(ge=1), Strict(), BeforeValidator(integral)]
Metadata = Annotated[dict[str, Any], AfterValidator(bounded_metadata)]
# An end user's (or an agent's) id inside a tenant: what applications use (an email, a UUID,
# "auth0|5f7c", "tg:1234"), and nothing that a URL path (/t/{tenant}/u/{user}/mcp) would split.
UserId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9._@:+=|~-]+$",
        description="1-128 letters, digits and . _ @ : + = | ~ -",
    ),
]
Instant = Annotated[datetime, BeforeValidator(iso_instant), AfterValidator(bounded_instant), _BOUNDED]


_USER_ID = TypeAdapter(UserId)


def valid_user_id(value: str) -> str:
    """A user id from a URL path, checked as a body's would be."""
    try:
        return _USER_ID.validate_python(value)
    except ValidationError:
        raise InvalidInput(
            f"invalid user id {value[:140]!r}: use 1-128 letters, digits and . _ @ : + = | ~ -", field="user_id"
        ) from None
