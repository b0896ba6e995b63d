"""The LLM judge's machinery, shared by `evalret judge` and `run --judge`: the prompt and its
hash, the strict reading of an answer, the answer cache, the plan (what a run would ask and
cost) and the judging itself (engines/chat_api.py sends).

- **prompt**: ``judge.prompt: umbrela`` is evalret's built-in prompt, written after the design
  of UMBRELA (Upadhyay et al., 2024): the grades of the scale with what each means, a few steps
  to work through (the intent of the query, how well the text meets it, how trustworthy it is),
  and a closing line ``##final score: N``. ``judge.prompt: FILE`` is a template holding
  ``{query}`` and ``{document}`` (replaced as plain text: other braces stay as they are). The
  prompt hash is the sha256 of the final template text, its first 12 hex characters: labels
  carry it (``llm:<model>@<hash>``), and a changed prompt asks again.
- **answers** are read strictly: the whole answer a bare integer on the scale, or ending with
  ``##final score: N`` (N on the scale). Anything else is asked once more, then counted as
  unparseable and left unjudged: a grade is never guessed.
- **votes**: ``judge.votes`` (or ``--votes``) answers per pair; the pair's grade is their
  median, rounded down; a pair is judged only when every vote was read.
- **cache**: every answer read is kept at once (a SQLite row, committed before the next
  answer is handled) under ``judgments/judge.sqlite`` in the cache directory the embedding cache
  uses, keyed by everything that decides an answer: the endpoint, the model, the prompt hash,
  the scale, the temperature and the extra request fields, the query text, the document text
  and the vote; a rerun or a resumed run sends nothing it has, a killed run keeps every answer
  it got. A grade read back from the cache is checked as a fresh answer is: one that is not an
  integer on the scale is not used (the vote is asked again, and the count says so).
- **complete or no verdict**: a request that failed for good or an answer that could not be
  read leaves its pair unjudged; both commands then end with exit 3 (``shortfall`` says what was
  left undone): `evalret judge` after writing the labels it got, `run --judge` before any
  verdict (IncompleteError: no report is written). The answers read stay in the cache: a rerun
  asks only the rest.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evalret.core.provenance import llm_source
from evalret.core.ranking import SearchResult
from evalret.data.config import Config, JudgeConfig
from evalret.data.goldenset import GoldenSet
from evalret.data.judgments import Scale, parse_scale
from evalret.data.paths import Input
from evalret.data.stores import JUDGE_ANSWERS, CacheRoot, cache_root
from evalret.data.textfile import read_text
from evalret.engines.sqlite_table import SqliteTable
from evalret.errors import ConfigError, IncompleteError, docs_page

UMBRELA = "umbrela"
# the docs section on the judge: section (docs/how-to/annotate-and-judgments.md)
JUDGE_SECTION = "judging-with-an-llm"
HASH_CHARS = 12
FINAL = re.compile(r"##\s*final\s+score\s*:\s*\**\s*([+-]?\d+)\s*\**\s*\.?\s*$", re.IGNORECASE)
BARE = re.compile(r"\s*([+-]?\d+)\s*\.?\s*")
GRADE_CHARS = 12  # a grade written longer (leading zeros included) is not read as one
# the answer a request is assumed to cost when the dry run prices it: the closing line alone
ASSUMED_ANSWER = "##final score: 0"
SHOWN_FAILURES = 3  # the reasons a shortfall quotes

_BUILT_IN = """\
You are judging a search engine. Below are a search query and one text the engine returned for \
it. Grade how well the text serves the person who typed the query, on a whole-number scale \
from {lo} to {hi}:

{grades}

Grade {related} when the text is about the subject of the query without answering it; grade \
{partial} when it answers, but the answer is incomplete, vague or lost among other things; \
grade {hi} only when the text is devoted to the query and holds its answer plainly.

Query: {{query}}

Passage: {{document}}

Work through these steps, silently:
1. Work out what the person most likely wants to know or do.
2. Judge how closely the passage matches that intent (M).
3. Judge how trustworthy and accurate the passage seems (T).
4. Weigh M and T, M first, and settle on one grade (O).

Reply with the grade alone, on one line, in exactly this form and with no reasoning and no \
other text:
##final score: N
"""


@dataclass(frozen=True)
class Prompt:
    """The final template (``{query}`` and ``{document}`` still in it) and its hash."""

    template: str
    source: str  # "umbrela" or the file's path

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.template.encode("utf-8")).hexdigest()[:HASH_CHARS]

    def render(self, query: str, document: str) -> str:
        # one pass, so that a query holding "{document}" is not filled in again
        parts = re.split(r"(\{query\}|\{document\})", self.template)
        return "".join(
            query if p == "{query}" else document if p == "{document}" else p for p in parts
        )


def built_in_prompt(scale: Scale) -> str:
    """The built-in template for ``scale`` (after UMBRELA's design; the module docstring)."""
    grades = "\n".join(f"{d['grade']} = {d['label']}" for d in scale.definitions())
    span = scale.hi - scale.lo
    related = scale.lo + 1 if span >= 2 else scale.hi
    partial = scale.hi - 1 if span >= 2 else scale.hi
    return _BUILT_IN.format(
        lo=scale.lo, hi=scale.hi, grades=grades, related=related, partial=partial
    )


def load_prompt(judge: JudgeConfig) -> Prompt:
    """The configured prompt: the built-in one, or the template file (InputError naming the
    file when it cannot be read or lacks ``{query}`` or ``{document}``)."""
    scale = parse_scale(judge.scale)
    if judge.prompt == UMBRELA:
        return Prompt(built_in_prompt(scale), UMBRELA)
    path = Path(judge.prompt)
    text = read_text(path, "judge.prompt")
    missing = [p for p in ("{query}", "{document}") if p not in text]
    if missing:
        raise ConfigError(
            f"judge.prompt {path}: the template has no {' and no '.join(missing)} (the query's "
            "and the document's text are put there)"
        )
    return Prompt(text, str(path))


def parse_grade(answer: str | None, scale: Scale) -> int | None:
    """The grade an answer gives: the whole answer an integer on the scale, or a last line
    ``##final score: N``; None for anything else (never a guess)."""
    if answer is None:
        return None
    m = BARE.fullmatch(answer) or FINAL.search(answer.strip())
    if m is None or len(m.group(1)) > GRADE_CHARS:  # no grade (and past what int() reads)
        return None
    grade = int(m.group(1))
    return grade if grade in scale else None


def vote_grade(votes: Sequence[int]) -> int:
    """The votes' median, rounded down."""
    return math.floor(statistics.median(votes))


# --- the cache ---------------------------------------------------------------------------------


def cache_path(cfg: Config) -> Path:
    """The answer cache, in the directory the embedding cache uses."""
    return cache_root(cfg.cache).file(JUDGE_ANSWERS)


def answer_settings(judge: JudgeConfig, endpoint: str, prompt: Prompt) -> dict[str, Any]:
    """Every setting that decides the judge's answer to a prompt, in the cache key: a change
    of any asks again."""
    return {
        "endpoint": endpoint,
        "model": judge.name,
        "prompt_hash": prompt.hash,
        "scale": str(parse_scale(judge.scale)),
        "temperature": judge.temperature,
        "request_fields": judge.request_fields or {},
    }


def answer_key(settings: Mapping[str, Any], query: str, doc: str, vote: int) -> str:
    """The cache key of one vote: ``settings`` (answer_settings), the texts and the vote."""
    text = json.dumps([settings, query, doc, vote], ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class AnswerCache:
    """The judge's answers read, one SQLite row each, committed as each arrives."""

    def __init__(self, root: CacheRoot | None) -> None:  # None: no cache (cache.enabled false)
        self.table = SqliteTable(JUDGE_ANSWERS, root, durable=True)

    @classmethod
    def of(cls, cfg: Config) -> AnswerCache:
        """The answer cache of ``cfg``'s cache directory (none when the cache is off)."""
        return cls(cache_root(cfg.cache) if cfg.cache.enabled else None)

    def check(self) -> None:
        """Refuse (InputError, exit 2) a file at the cache's path that is not evalret's answer
        cache, before anything is read from or written to it."""
        self.table.check()

    def lookup(self, keys: Iterable[str], scale: Scale) -> tuple[dict[str, tuple[int, str]], int]:
        """(key -> (grade, graded_at) of the keys cached with a grade on ``scale``, how many
        cached rows were not used: a grade that is not an integer on the scale, read back as a
        fresh answer is read)."""
        found: dict[str, tuple[int, str]] = {}
        unusable = 0
        for key, grade, at in self.table.select("grade, graded_at", keys):
            if grade in scale and isinstance(at, str):
                found[key] = (grade, at)
            else:
                unusable += 1
        return found, unusable

    def store(self, key: str, grade: int, answer: str, graded_at: str) -> None:
        self.table.put([(key, grade, answer[:2000], graded_at)])

    def close(self) -> None:
        self.table.close()


# --- pairs, plan, judging ----------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """One (query, document) to grade, and the record its label line is made from."""

    query_id: str
    doc_id: str
    query: str
    document: str
    record: dict[str, Any]


@dataclass(frozen=True)
class Ask:
    """One vote of one pair: the position of the pair, the vote, its cache key, its prompt."""

    pair: int
    vote: int
    key: str
    prompt: str


@dataclass
class Plan:
    """What judging ``pairs`` takes: every vote's key and prompt, those cached, those to ask."""

    pairs: list[Pair]
    votes: int
    prompt: Prompt
    endpoint: str
    model: str
    asks: list[Ask]
    cached: dict[str, tuple[int, str]]
    unusable: int = 0  # cached answers not used (a grade off the scale): asked again

    @property
    def to_ask(self) -> list[Ask]:
        return [a for a in self.asks if a.key not in self.cached]


def make_plan(pairs: list[Pair], judge: JudgeConfig, votes: int, cache: AnswerCache) -> Plan:
    """Every vote of every pair, with what the cache has."""
    from evalret.engines.openai_api import endpoint_of

    prompt = load_prompt(judge)
    endpoint = endpoint_of(judge.base_url)
    settings = answer_settings(judge, endpoint, prompt)
    asks = [
        Ask(
            i,
            v,
            answer_key(settings, p.query, p.document, v),
            prompt.render(p.query, p.document),
        )
        for i, p in enumerate(pairs)
        for v in range(votes)
    ]
    cached, unusable = cache.lookup((a.key for a in asks), parse_scale(judge.scale))
    return Plan(pairs, votes, prompt, endpoint, judge.name, asks, cached, unusable)


def dry_run(plan: Plan, judge: JudgeConfig) -> dict[str, Any]:
    """Pairs, cached answers, answers to ask, input tokens (and how they were counted),
    requests and cost: nothing is sent."""
    from evalret.engines.tokens import token_counter

    counter = token_counter(plan.model)
    to_ask = plan.to_ask
    tokens_in = counter.total([a.prompt for a in to_ask])
    tokens_out = counter.count(ASSUMED_ANSWER) * len(to_ask)
    pin, pout = judge.price_per_million_input_tokens, judge.price_per_million_output_tokens
    cost = None
    if pin is not None and pout is not None:
        cost = round((tokens_in * pin + tokens_out * pout) / 1e6, 6)
    return {
        "endpoint": plan.endpoint,
        "model": plan.model,
        "prompt": plan.prompt.source,
        "prompt_hash": plan.prompt.hash,
        "pairs": len(plan.pairs),
        "votes": plan.votes,
        "cached": len(plan.asks) - len(to_ask),
        "cache_unusable": plan.unusable,
        "to_ask": len(to_ask),
        "requests": len(to_ask),
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "token_count": counter.method + (f" ({counter.note})" if counter.note else ""),
        "output_assumed": f"{ASSUMED_ANSWER!r} per request",
        "cost": cost,
    }


@dataclass
class Judged:
    """The outcome of judging a plan."""

    grades: dict[str, tuple[int, str]] = field(default_factory=dict)  # key -> (grade, at)
    asked: int = 0  # answers asked for (retries of unreadable answers included)
    unparseable: int = 0  # votes whose answer could not be read, asked twice
    failed: list[str] = field(default_factory=list)  # why each failed vote failed
    usage: Any = None  # engines.chat_api.ChatUsage

    def labels(self, plan: Plan) -> list[tuple[Pair, list[int], str]]:
        """(pair, its votes, graded_at) of every pair whose every vote was read."""
        by_pair: dict[int, list[tuple[int, int, str]]] = {}
        for a in plan.asks:
            if a.key in self.grades:
                grade, at = self.grades[a.key]
                by_pair.setdefault(a.pair, []).append((a.vote, grade, at))
        out = []
        for i, pair in enumerate(plan.pairs):
            got = sorted(by_pair.get(i, []))
            if len(got) == plan.votes:
                out.append((pair, [g for _, g, _ in got], max(at for _, _, at in got)))
        return out


def shortfall(judged: Judged, cache: Path | None) -> str | None:
    """What judging left undone, the one rule of `evalret judge` and `run --judge` (both exit 3
    on it): the requests that failed for good, with their first distinct reasons, and the
    answers that could not be read (each asked twice), and where the answers read are kept
    (``cache``: the answer cache, None when off); None when every vote asked was read."""
    parts = []
    if judged.failed:
        reasons = Counter(judged.failed).most_common(SHOWN_FAILURES)
        shown = "; ".join(f"{why} ({n} requests)" if n > 1 else why for why, n in reasons)
        parts.append(f"{len(judged.failed)} judge request(s) failed for good ({shown})")
    if judged.unparseable:
        parts.append(
            f"{judged.unparseable} answer(s) could not be read, each asked twice (an answer is "
            "a grade of judge.scale, alone or on a closing line '##final score: N')"
        )
    if not parts:
        return None
    if cache is None:
        kept = "cache.enabled is false: a rerun asks every pair again"
    elif not judged.grades:
        kept = "no answer was read: a rerun asks every pair again"
    else:
        kept = f"the {len(judged.grades)} answers read are kept in {cache}: a rerun asks the rest"
    return f"{' and '.join(parts)}; {kept}"


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def judge_plan(
    plan: Plan,
    judge: JudgeConfig,
    cache: AnswerCache,
    advance: Callable[[int], None] | None = None,
) -> Judged:
    """Ask every vote the cache lacks (an unreadable answer once more), keeping each grade in
    the cache as it arrives."""
    from evalret.engines.chat_api import ChatClient

    scale = parse_scale(judge.scale)
    judged = Judged(grades=dict(plan.cached))
    client = ChatClient(judge)
    judged.usage = client.usage
    todo = plan.to_ask
    for attempt in (1, 2):
        unread: list[Ask] = []
        by_key = {a.key: a for a in todo}
        judged.asked += len(todo)
        for reply in client.replies([(a.key, a.prompt) for a in todo]):
            ask = by_key[reply.key]
            grade = parse_grade(reply.text, scale)
            if reply.failed is not None:
                judged.failed.append(reply.failed)
            elif grade is None:
                unread.append(ask)
                if attempt == 1:
                    continue  # asked again: the bar moves with its second answer
            else:
                at = _now()
                cache.store(ask.key, grade, reply.text or "", at)
                judged.grades[ask.key] = (grade, at)
            if advance is not None:
                advance(1)
        todo = unread
        if not todo:
            break
    judged.unparseable = len(todo)
    return judged


def label_line(
    pair: Pair, votes: list[int], graded_at: str, model: str, prompt_hash: str
) -> dict[str, Any]:
    """The annotation line of a judged pair (the contract of issue #25)."""
    return {
        **pair.record,
        "grade": vote_grade(votes),
        "annotator": f"llm:{model}",
        "graded_at": graded_at,
        "prompt_hash": prompt_hash,
        "votes": list(votes),
    }


def spent(judge: JudgeConfig, judged: Judged, plan: dict[str, Any]) -> tuple[float | None, str]:
    """What the answers cost: from the API's token counts when every answer had them, else
    the dry run's estimate of what was asked; None without both prices."""
    pin, pout = judge.price_per_million_input_tokens, judge.price_per_million_output_tokens
    if pin is None or pout is None:
        return None, ""
    usage = judged.usage
    if usage is not None and usage.tokens_reported:
        return round((usage.input_tokens * pin + usage.output_tokens * pout) / 1e6, 6), "usage"
    return plan["cost"], "estimate"


# --- run --judge -------------------------------------------------------------------------------

RUN_K = 10  # `run --judge` labels the unjudged documents of each gated index's top 10


@dataclass(frozen=True)
class RunJudging:
    """`run --judge` (``cache_only``: `--judge-cache-only`, the cache's answers and nothing
    sent)."""

    cache_only: bool = False
    k: int = RUN_K


def _unjudged_pairs(golden: GoldenSet, rankings: Mapping[str, SearchResult], k: int) -> list[Pair]:
    """The unjudged (query, document) pairs of the rankings' top k, each once, in query order;
    a document the query's filter excludes is no answer to it, and is not graded."""
    seen: set[tuple[str, str]] = set()
    pairs: list[Pair] = []
    for qi, qid in enumerate(golden.query_ids):
        for name, ranking in rankings.items():
            for rank, doc in enumerate(ranking.names(qi, golden.doc_ids, k), start=1):
                known = doc in golden.doc_index and (qid, doc) not in seen
                if golden.is_judged(qid, doc) or not known or not golden.is_eligible(qid, doc):
                    continue
                seen.add((qid, doc))
                text = golden.doc_texts[golden.doc_index[doc]]
                record = {"query_id": qid, "doc_id": doc, "best_rank": rank, "index": name}
                pairs.append(Pair(qid, doc, golden.query_texts[qi], text, record))
    return pairs


def with_labels(
    golden: GoldenSet, labels: list[tuple[Pair, list[int], str]], source: str
) -> GoldenSet:
    """``golden`` with the judge's ``labels`` added to ``qrels`` (source ``source``) and to
    ``llm_qrels``."""
    qrels = {q: dict(g) for q, g in golden.qrels.items()}
    sources = {q: dict(s) for q, s in golden.sources.items()}
    llm = {q: dict(g) for q, g in golden.llm_qrels.items()}
    for pair, votes, _ in labels:
        grade = vote_grade(votes)
        qrels.setdefault(pair.query_id, {})[pair.doc_id] = grade
        sources.setdefault(pair.query_id, {})[pair.doc_id] = source
        llm.setdefault(pair.query_id, {})[pair.doc_id] = grade
    return replace(golden, qrels=qrels, sources=sources, llm_qrels=llm)


def run_judge(config: Config) -> JudgeConfig:
    """The config's judge: section (a ConfigError when it has none)."""
    if config.judge is None:
        raise ConfigError(
            "run --judge needs a judge: section in the config (see "
            f"{docs_page('how-to/annotate-and-judgments', JUDGE_SECTION)})"
        )
    return config.judge


def run_source(config: Config) -> str:
    """The source `run --judge`'s labels carry: ``llm:<model>@<prompt hash>``."""
    judge = run_judge(config)
    return llm_source(judge.name, load_prompt(judge).hash)


def judge_inputs(config: Config, judging: RunJudging | None) -> list[Input]:
    """What `run --judge` reads besides the run's inputs (a prompt file); a config without a
    judge: section is refused here, before any work."""
    if judging is None:
        return []
    prompt = run_judge(config).prompt
    return [] if prompt == UMBRELA else [Input("the prompt (judge.prompt)", Path(prompt))]


def judge_run(
    config: Config,
    golden: GoldenSet,
    rankings: Mapping[str, SearchResult],
    mode: RunJudging,
    progress: Callable[[str, int], Callable[[int], None]] | None = None,
) -> tuple[Callable[[GoldenSet], GoldenSet], dict[str, Any]]:
    """`run --judge`: the unjudged pairs of each gated index's top k graded by the judge (or,
    cache only, those the cache has); returns what adds those labels to a golden set's
    judgments (``with_labels``), and what was done, for the report's ``judge`` section. A
    request that failed for good or an answer that could not be read is an IncompleteError
    (exit 3: no verdict on part of the labels); the answers read are in the cache by then."""
    judge = run_judge(config)
    gated = [i for i in config.gated_indexes() if i in rankings]
    k = min(mode.k, *(rankings[i].ids.shape[1] for i in gated)) if gated else mode.k
    pairs = _unjudged_pairs(golden, {i: rankings[i] for i in gated}, k)
    cache = AnswerCache.of(config)
    try:
        plan = make_plan(pairs, judge, judge.votes, cache)
        if mode.cache_only:
            judged = Judged(grades=dict(plan.cached))
        else:
            advance = progress("judging", len(plan.to_ask)) if progress is not None else None
            judged = judge_plan(plan, judge, cache, advance)
    finally:
        cache.close()
    labels = judged.labels(plan)
    why = shortfall(judged, cache_path(config) if config.cache.enabled else None)
    if why is not None:
        raise IncompleteError(
            f"run --judge: {why} (--judge-cache-only scores with what the cache has). No "
            f"verdict is drawn from part of the labels ({len(labels)} of {len(pairs)} pairs "
            "labelled)"
        )
    source = llm_source(plan.model, plan.prompt.hash)
    info = {
        "source": source,
        "endpoint": plan.endpoint,
        "indexes": gated,
        "k": k,
        "cache_only": mode.cache_only,
        "pairs": len(pairs),
        "labelled": len(labels),
        "cached": len(plan.asks) - len(plan.to_ask),
        "cache_unusable": plan.unusable,
        "asked": judged.asked,
        "unparseable": judged.unparseable,
        "failed": len(judged.failed),
        "unjudged": len(pairs) - len(labels),
    }
    return (lambda g: with_labels(g, labels, source)), info
