"""Personal data in a query's text: what `evalret golden from-logs` finds before it keeps a logged
query (``--pii drop|mask|keep``). Pure: text in, spans out.

Kinds, each found on the whole text (a span of one kind is not looked at again by a later kind):

* ``email``: ``local@domain.tld``: a local part of letters, digits and ``._%+-``, a domain of
  dot-separated labels of letters, digits and ``-``, a top-level domain of 2 letters or more.
* ``ip``: an IPv4 address (four dot-separated numbers 0-255, not part of a longer dotted run, so
  ``2.3.1`` is a version and no address; a four-part ``1.2.3.4`` is an address) or an IPv6
  address (hexadecimal groups with colons, ``::`` compression and an IPv4 tail allowed, valid as
  the standard library's ``ipaddress`` reads it, at least one hex digit: ``10:30:00`` is a time).
* ``card``: a card-like number: 13 to 19 digits, each pair of digits joined by nothing, one space
  or one dash, passing the Luhn check (``4111 1111 1111 1111``, ``4111-1111-1111-1111``).
* ``phone``: either ``+`` and 7 to 15 digits (``+44 20 7946 0958``, ``+14155550123``), or 10 to
  15 digits in 2 to 6 groups of 1-5 digits joined by one space, dot or dash, the first group
  possibly in parentheses (``(415) 555-0123``, ``415.555.0123``, ``06 12 34 56 78``). A bare run
  of digits without ``+`` is no phone number (an order number, a timestamp: shape
  ``identifier``), and neither is a short number, a year (``2024``), a date (``2024-01-15``: 8
  digits) or an error code (``LMW-4031``: digits joined to a word by a dash are an identifier).
* ``custom``: every non-empty match of each pattern the user gives (``--pii-pattern``).

Numbers are matched whole: a digit run touching a letter, digit, ``+`` or a dotted/dashed digit
run on either side is not cut into a card or phone number. Overlapping spans (a custom pattern
over an email, say) merge into one span covering both, of the kind of the one starting first
(ties: the longer, then the order above), so masking hides the union of what was found.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

KINDS = ("email", "ip", "card", "phone", "custom")
MASKS = {"email": "[EMAIL]", "ip": "[IP]", "card": "[CARD]", "phone": "[PHONE]", "custom": "[PII]"}
CARD_DIGITS = (13, 19)
PHONE_DIGITS = (10, 15)  # without a leading +
PHONE_PLUS_DIGITS = (7, 15)  # after a leading +

_EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}(?![\w-])"
)
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![\w.])(?:{_OCTET}\.){{3}}{_OCTET}(?![\w]|\.\d)")
_IPV6_CANDIDATE = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?"
    r"(?![\w:]|\.\d)"
)
# a number not cut out of a longer one: not after a word character, "+", or a digit and "." or
# "-"; not after a letter and "-" (LMW-4031); not before a word character or "." / "-" and a digit
_NUM_START = r"(?<![\w+])(?<!\d[.-])(?<![A-Za-z]-)"
_NUM_END = r"(?![\w]|[.-]\d)"
_CARD = re.compile(rf"{_NUM_START}\d(?:[ -]?\d){{12,18}}{_NUM_END}")
_PHONE_PLUS = re.compile(rf"{_NUM_START}\+\d{{1,5}}(?:[ .-]?\(?\d{{1,5}}\)?){{0,6}}{_NUM_END}")
_PHONE = re.compile(
    rf"(?<![(]){_NUM_START}(?:\(\d{{1,5}}\)[ .-]?|\d{{1,5}}[ .-])(?:\d{{1,5}}[ .-]){{0,4}}\d{{1,5}}"
    rf"{_NUM_END}"
)
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class PiiMatch:
    """One span of personal data in a text: ``text[start:end]``."""

    kind: str
    start: int
    end: int


def luhn(digits: str) -> bool:
    """Whether a string of digits passes the Luhn check (the check digit of card numbers)."""
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _n_digits(text: str) -> int:
    return len(_DIGIT.findall(text))


def _is_ipv6(text: str) -> bool:
    if not any(c in "0123456789abcdefABCDEF" for c in text):
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _spans(text: str, kind: str) -> list[tuple[int, int]]:
    """The spans of one built-in kind in ``text`` (the module doc's rules)."""
    if kind == "email":
        return [m.span() for m in _EMAIL.finditer(text)]
    if kind == "ip":
        v4 = [m.span() for m in _IPV4.finditer(text)]
        v6 = [m.span() for m in _IPV6_CANDIDATE.finditer(text) if _is_ipv6(m.group())]
        return v4 + v6
    if kind == "card":
        return [m.span() for m in _CARD.finditer(text) if luhn("".join(_DIGIT.findall(m.group())))]
    plus = [
        m.span()
        for m in _PHONE_PLUS.finditer(text)
        if PHONE_PLUS_DIGITS[0] <= _n_digits(m.group()) <= PHONE_PLUS_DIGITS[1]
    ]
    plain = [
        m.span()
        for m in _PHONE.finditer(text)
        if PHONE_DIGITS[0] <= _n_digits(m.group()) <= PHONE_DIGITS[1]
    ]
    return plus + plain


def _overlaps(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in taken)


def find_pii(text: str, extra: Sequence[re.Pattern[str]] = ()) -> list[PiiMatch]:
    """The personal data in ``text`` (the module doc's kinds and rules), sorted by position,
    never overlapping; ``extra``: the user's own patterns (kind ``custom``)."""
    found: list[PiiMatch] = []
    taken: list[tuple[int, int]] = []
    for kind in KINDS[:-1]:
        for span in sorted(_spans(text, kind)):
            if not _overlaps(span, taken):
                found.append(PiiMatch(kind, *span))
                taken.append(span)
    for pattern in extra:
        found.extend(
            PiiMatch("custom", *m.span()) for m in pattern.finditer(text) if m.end() > m.start()
        )
    order = {k: i for i, k in enumerate(KINDS)}
    found.sort(key=lambda m: (m.start, -m.end, order[m.kind]))
    merged: list[PiiMatch] = []
    for m in found:
        if merged and m.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = PiiMatch(last.kind, last.start, max(last.end, m.end))
        else:
            merged.append(m)
    return merged


def mask(text: str, matches: Sequence[PiiMatch]) -> str:
    """``text`` with each match (as ``find_pii`` gives them: sorted, not overlapping) replaced by
    its kind's mask: ``[EMAIL]``, ``[PHONE]``, ``[CARD]``, ``[IP]``, ``[PII]`` (custom)."""
    parts, at = [], 0
    for m in sorted(matches, key=lambda m: m.start):
        if m.start < at:  # overlapping input: its part past the last mask joins that mask
            at = max(at, m.end)
            continue
        parts += [text[at : m.start], MASKS[m.kind]]
        at = m.end
    parts.append(text[at:])
    return "".join(parts)
