"""core/pii.py: what counts as an email, phone, card, IP address or custom match, what does not
(the false positives a query log is full of), and masking."""

from __future__ import annotations

import re

import pytest

from evalret.core.pii import find_pii, luhn, mask


def _found(text: str, *extra: str) -> list[tuple[str, str]]:
    return [(m.kind, text[m.start : m.end]) for m in find_pii(text, [re.compile(p) for p in extra])]


@pytest.mark.parametrize(
    ("text", "kind", "span"),
    [
        ("mail john.doe+x@example.co.uk please", "email", "john.doe+x@example.co.uk"),
        ("card 4111 1111 1111 1111 expired", "card", "4111 1111 1111 1111"),
        ("4111-1111-1111-1111", "card", "4111-1111-1111-1111"),
        ("pay with 5500000000000004", "card", "5500000000000004"),
        ("call (415) 555-0123 today", "phone", "(415) 555-0123"),
        ("415.555.0123", "phone", "415.555.0123"),
        ("1-800-555-0199 support", "phone", "1-800-555-0199"),
        ("ring +44 20 7946 0958", "phone", "+44 20 7946 0958"),
        ("ring +14155550123", "phone", "+14155550123"),
        ("06 12 34 56 78 is my number", "phone", "06 12 34 56 78"),
        ("server 192.168.1.10 down", "ip", "192.168.1.10"),
        ("host 2001:db8::1 unreachable", "ip", "2001:db8::1"),
        ("mapped ::ffff:192.0.2.1", "ip", "::ffff:192.0.2.1"),
    ],
)
def test_each_kind_is_found_whole(text: str, kind: str, span: str) -> None:
    assert _found(text) == [(kind, span)]


@pytest.mark.parametrize(
    "text",
    [
        "LMW-4031 error on start",  # an error code
        "ERR-2023-000451",  # a longer one, digits joined to a word
        "upgrade to version 2.3.1",  # a version
        "v1.2.3.4 changelog",  # a version with a v
        "10.0.19041.1 build",  # a build number (19041 is no octet)
        "pricing in 2024",  # a year
        "from 2023-01-15 to 2024-01-15",  # dates
        "plan for 42 seats",  # a short number
        "order 1234567890 missing",  # a bare run of digits: an identifier, not a phone
        "4111 1111 1111 1112",  # 16 digits failing the Luhn check
        "meeting at 10:30:00",  # a time, no IPv6 address
        "std::vector vs list",  # C++ scope, no IPv6 address
        "a :: b",
        "1 2 3 4 5 6 7 8 9 10",  # a list of small numbers
        "user@localhost",  # no top-level domain
    ],
)
def test_false_positives_are_not_found(text: str) -> None:
    assert _found(text) == []


def test_custom_patterns_and_overlaps_merge_into_one_masked_span() -> None:
    text = "ticket ACME-99812 from bob@corp.io at 10.0.0.1"
    found = _found(text, r"ACME-\d+", r"from \w+@")
    assert found == [("custom", "ACME-99812"), ("custom", "from bob@corp.io"), ("ip", "10.0.0.1")]
    assert mask(text, find_pii(text, [re.compile(r"ACME-\d+"), re.compile(r"from \w+@")])) == (
        "ticket [PII] [PII] at [IP]"
    )
    # an empty match of a custom pattern is no span
    assert _found("abc", r"x*") == []


def test_mask_replaces_each_kind_with_its_marker() -> None:
    text = "a@b.io, +1 415 555 0123, 4111111111111111, 8.8.8.8, SECRET-1"
    matches = find_pii(text, [re.compile(r"SECRET-\d")])
    assert mask(text, matches) == "[EMAIL], [PHONE], [CARD], [IP], [PII]"
    assert mask("nothing here", []) == "nothing here"


def test_luhn() -> None:
    assert luhn("4111111111111111") and luhn("79927398713")
    assert not luhn("4111111111111112") and not luhn("79927398710")
