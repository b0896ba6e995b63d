"""The views of `evalret golden doctor` (pipeline/doctor.py makes the JSON document they read):
the terminal summary (tables) and doctor.html (the same tables and the coverage plot: the nearest
golden query's cosine of every sampled logged query, beside the similarity level). Query texts
come from a golden set or a log: escaped for the terminal (``terminal``, in ``Text``, never read
as markup) and for HTML (``html.document.esc``)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from evalret.report.escape import terminal
from evalret.report.html.document import Section, data_table, kv_table, page, verdict_badge
from evalret.report.svg import esc, figure, histogram

STATUS_STYLE = {"fail": "bold red", "pass": "bold green", "not gated": "bold"}


def _p(v: float) -> str:
    return f"{v:.4f}" if v >= 0.0001 else f"{v:.1e}"


def headroom_rows(d: dict[str, Any]) -> list[list[str]]:
    rows = []
    for s in d["headroom"]["slices"]:
        note = (
            "cannot show a gain or a loss"
            if not s["can_show_loss"]
            else "cannot show a gain"
            if not s["can_show_gain"]
            else "room to move"
        )
        rows.append(
            [
                s["slice"],
                str(s["n_queries"]),
                str(s["n_perfect"]),
                f"{s['share_perfect']:.3f}",
                note,
            ]
        )
    return rows


def zoo_rows(d: dict[str, Any]) -> list[list[str]]:
    rows = []
    for r in d["discrimination"]["pairs"]:
        needed = r["queries_needed"]
        rows.append(
            [
                f"{r['a']} vs {r['b']}",
                f"{r['mean_a']:.4f}",
                f"{r['mean_b']:.4f}",
                f"{r['delta']:+.4f}",
                f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]",
                _p(r["p_adjusted"]),
                "-" if r["mde"] is None else f"{r['mde']:.4f}",
                "yes" if r["separated"] else "no",
                "-" if needed is None else f"{needed:,}",
            ]
        )
    return rows


ZOO_HEAD = (
    "pair",
    "nDCG@10 a",
    "nDCG@10 b",
    "b - a",
    "95% CI",
    "p (Holm)",
    "MDE",
    "separated",
    "queries needed",
)
HEADROOM_HEAD = ("slice", "queries", "perfect", "share", "")


def shape_rows(d: dict[str, Any]) -> list[list[str]]:
    e = d["edge_cases"]
    rows = [
        [
            f"shape:{s['shape']}",
            str(s["n_queries"]),
            str(e["target"]),
            "met" if s["met"] else "short",
        ]
        for s in e["shapes"]
    ]
    rows += [[f"origin:{k}", str(v), "", ""] for k, v in e["origins"].items()]
    return rows


def cluster_rows(t: dict[str, Any]) -> list[tuple[str, str, str, list[str]]]:
    return [
        (str(c["cluster"]), f"{c['size']:,}", f"{c['share']:.3f}", c["examples"])
        for c in t["clusters"]["uncovered"]
    ]


def findings(d: dict[str, Any]) -> list[str]:
    """The doctor's conclusions in words (the verdict line last)."""
    out = []
    all_slice = d["headroom"]["slices"][0] if d["headroom"]["slices"] else None
    if all_slice is not None and not all_slice["can_show_loss"]:
        out.append(
            f"no headroom: {all_slice['share_perfect']:.0%} of the queries are already perfect; "
            "the set can show neither a gain nor a loss"
        )
    elif all_slice is not None and not all_slice["can_show_gain"]:
        out.append(
            f"little headroom: {all_slice['share_perfect']:.0%} of the queries are already "
            "perfect; the set cannot show a gain"
        )
    disc = d["discrimination"]
    separated = [f"{r['a']} vs {r['b']}" for r in disc["pairs"] if r["separated"]]
    out.append("separates: " + (", ".join(separated) if separated else "no pair"))
    for r in disc["pairs"]:
        if f"{r['a']} vs {r['b']}" in disc["not_separated"]:
            needed = r["queries_needed"]
            more = "no number of queries" if needed is None else f"about {needed:,} queries"
            out.append(f"too weak: cannot separate {r['a']} from {r['b']} (would need {more})")
    short = [s["shape"] for s in d["edge_cases"]["shapes"] if not s["met"]]
    if short:
        out.append(f"edge cases under target ({d['edge_cases']['target']}): " + ", ".join(short))
    t = d["traffic"]
    if t is not None:
        n = len(t["clusters"]["uncovered"])
        out.append(
            f"coverage {t['coverage']:.3f} of {t['log']['n_sampled']:,} logged queries at cosine "
            f">= {t['similarity']}; {n} traffic cluster(s) with no golden query near"
        )
    out.append(f"verdict: {d['verdict']['status']}: {d['verdict']['reason']}")
    return out


def _table(title: str, head: tuple[str, ...], rows: list[list[str]]) -> Table:
    table = Table(title=title, title_justify="left")
    for i, h in enumerate(head):
        table.add_column(h, justify="left" if i == 0 or h == "" else "right")
    for r in rows:
        table.add_row(*(Text(terminal(c)) for c in r))
    return table


def render_doctor(d: dict[str, Any], written: list[str]) -> Group:
    """The terminal summary of the doctor's JSON document ``d``."""
    parts: list[RenderableType] = [
        Text.assemble(
            ("golden doctor ", "bold"),
            terminal(
                f"{d['golden_set']}: {d['n_queries']:,} queries, {d['n_documents']:,} documents; "
                f"{d['model']} ({d['dimension']} dimensions, quarter {d['quarter_dimension']})"
            ),
        ),
        _table(f"headroom ({d['headroom']['perfect']})", HEADROOM_HEAD, headroom_rows(d)),
        _table("discrimination: the zoo on nDCG@10, paired", ZOO_HEAD, zoo_rows(d)),
        _table("edge cases", ("tag", "queries", "target", ""), shape_rows(d)),
    ]
    t = d["traffic"]
    if t is not None:
        table = Table(title="traffic clusters with no golden query near", title_justify="left")
        for h in ("cluster", "queries", "share", "examples"):
            table.add_column(h, justify="left" if h == "examples" else "right")
        for c, size, share, examples in cluster_rows(t):
            table.add_row(c, size, share, Text("\n".join(terminal(x) for x in examples)))
        parts.append(table)
        drift = t["drift"]
        parts.append(
            Text(
                f"drift: energy distance {drift['statistic']:.4f}, permutation p "
                f"{_p(drift['p_value'])} ({drift['permutations']} permutations); "
                f"{t['log']['n_with_personal_data']:,} logged queries with personal data dropped"
            )
        )
    for line in findings(d):
        style = STATUS_STYLE.get(d["verdict"]["status"]) if line.startswith("verdict") else None
        parts.append(Text(terminal(line), style=style or ""))
    parts += [Text(f"wrote {terminal(p)}") for p in written]
    return Group(*parts)


def _cells(rows: list[list[str]]) -> list[list[str]]:
    return [[esc(c) for c in r] for r in rows]


def _traffic_html(t: dict[str, Any]) -> str:
    plot = histogram(
        t["nearest_similarity"],
        label="nearest golden query cosine of each sampled logged query",
        x_label=f"cosine of the nearest golden query (covered from {t['similarity']})",
        value_range=(min(0.0, min(t["nearest_similarity"], default=0.0)), 1.0),
        signed=False,
    )
    caption = (
        f"coverage {t['coverage']:.3f} (by traffic {t['coverage_by_traffic']:.3f}) of "
        f"{t['log']['n_sampled']:,} sampled logged queries at cosine >= {t['similarity']}"
    )
    rows = [
        [esc(c), esc(size), esc(share), "<br>".join(esc(x) for x in examples)]
        for c, size, share, examples in cluster_rows(t)
    ]
    drift = t["drift"]
    return (
        figure("coverage of the logged queries", plot, caption)
        + "<h3>traffic clusters with no golden query near</h3>"
        + data_table(("cluster", "queries", "share", "examples"), rows, left=(3,))
        + kv_table(
            [
                ("energy distance", esc(f"{drift['statistic']:.6f}")),
                ("permutation p", esc(_p(drift["p_value"]))),
                ("dropped (personal data)", esc(str(t["log"]["n_with_personal_data"]))),
            ]
        )
    )


def doctor_html(d: dict[str, Any]) -> str:
    """doctor.html: the findings, the tables, and with a log the coverage plot."""
    status = d["verdict"]["status"]
    state = {"fail": "fail", "pass": "pass"}.get(status, "neutral")
    sections = [
        Section(
            "findings",
            "Findings",
            "<ul>" + "".join(f"<li>{esc(x)}</li>" for x in findings(d)) + "</ul>",
        ),
        Section(
            "headroom", "Headroom", data_table(HEADROOM_HEAD, _cells(headroom_rows(d)), left=(0, 4))
        ),
        Section("discrimination", "Discrimination", data_table(ZOO_HEAD, _cells(zoo_rows(d)))),
        Section(
            "edge-cases",
            "Edge cases",
            data_table(("tag", "queries", "target", ""), _cells(shape_rows(d)), left=(0, 3)),
        ),
    ]
    if d["traffic"] is not None:
        sections.append(
            Section("traffic", "Traffic coverage and drift", _traffic_html(d["traffic"]))
        )
    meta = f"<p>{esc(d['golden_set'])}: {d['n_queries']:,} queries; {esc(d['model'])}</p>"
    return page("evalret golden doctor", verdict_badge(state, status), meta, sections, "doctor")
