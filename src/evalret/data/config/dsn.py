"""Where to connect, checked before connecting: a port as text, a URL's port, and a libpq
connection string (the pgvector index's DSN), each reason given without quoting the value."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_PORT_TEXT = re.compile(r"\s*\+?\d+\s*")  # what libpq's parse_int_param reads as a number


OUT_OF_RANGE = "the port is out of range (1..65535)"


def port_problem(port: str) -> str | None:
    """Why ``port`` (a URL's or a DSN's, as text) is no TCP port 1..65535, without quoting it;
    None when it is one."""
    if not _PORT_TEXT.fullmatch(port):
        return "the port is not a number"
    if not 1 <= int(port) <= 65535:
        return OUT_OF_RANGE
    return None


def url_port_problem(url: str) -> str | None:
    """Why the port of ``url`` (``scheme://host:port/...``) is no TCP port; None when it is one
    or the URL has none."""
    try:
        port = urlsplit(url).port
    except ValueError as e:  # not a number, or above 65535
        return OUT_OF_RANGE if "out of range" in str(e) else "the port is not a number"
    return OUT_OF_RANGE if port == 0 else None


def dsn_problem(dsn: str) -> str | None:
    """Why libpq would refuse the connection string ``dsn`` before connecting (it does not parse,
    a port is no number or out of range, the ports do not match the hosts); None when it would
    try to connect. The reason never quotes the DSN (it may hold a password). Without psycopg
    installed nothing is checked here: the index then refuses to run, naming the extra."""
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return None
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error:
        return "libpq cannot parse it"
    ports = str(params.get("port") or "").split(",")
    for port in ports:
        problem = port_problem(port) if port.strip() else None
        if problem:
            return problem
    hosts = str(params.get("host") or params.get("hostaddr") or "").split(",")
    if len(ports) > 1 and len(ports) != len(hosts):
        return f"{len(ports)} ports for {len(hosts)} hosts"
    return None
