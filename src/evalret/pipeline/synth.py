"""The machinery of `evalret golden synth`: the prompt and its hash, the reading of an answer, the
query writer's answer cache and the generation itself (engines/chat_api.py sends; the documents
and the filters are pipeline/synth_filters.py's).

- **prompt**: the built-in prompt asks for what a user would type to find the passage, in one
  style (``keyword``: a few search words; ``question``: a natural question; ``identifier``: a
  lookup of a code, name or number the passage holds), with a seeded handful of real queries as
  few-shot examples when a log is given (their style, not their topics), and, for a
  two-document question, both passages. ``synth.template: FILE`` replaces it: a template holding
  ``{document}`` and optionally ``{style}``, ``{examples}`` and ``{task}`` (replaced as plain
  text in one pass). The prompt hash is the sha256 of the template text, its first 12 hex
  characters: every synthetic query carries it (``generated.prompt_hash``).
- **answers**: with ``synth.answer_format: line`` the query is the answer's first non-empty line
  (quotes and a leading ``Query:`` taken off); with ``json`` the answer (a fenced block
  allowed) must be a JSON object holding a ``query`` string or a ``queries`` list (its first
  non-empty string). An answer that gives no query is asked once more (sample index 1), then
  counted as unreadable: a query is never made up.
- **cache**: every answer is kept at once (a SQLite row, committed before the next answer is
  handled) in ``judgments/synth.sqlite`` in the cache directory the embedding cache uses, keyed
  by everything that decides it: the endpoint, the model, the temperature, the extra request
  fields, the answer format, the prompt hash, the document text(s), the style, the few-shot
  examples and the sample index. A rerun or a resumed run sends nothing it has; a killed run
  keeps every answer it got.
- **failure**: a request that failed for good leaves its document without a query; the command
  then ends with exit 3 (IncompleteError) before writing anything, the answers got kept in the
  cache: a rerun asks only the rest.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evalret.data.config import ChatEndpointConfig, Config, SynthConfig
from evalret.data.stores import SYNTH_ANSWERS, CacheRoot, cache_root
from evalret.data.textfile import read_text
from evalret.engines.sqlite_table import SqliteTable
from evalret.errors import ConfigError

BUILT_IN = "built-in"
HASH_CHARS = 12
MAX_QUERY_CHARS = 500  # an answer line longer than this is no query
ANSWER_CHARS = 4000  # what the cache keeps of an answer
# the answer a request is assumed to cost when the dry run prices it
ASSUMED_ANSWER = "how do I configure the retention period"
SAMPLES = 2  # asks per document: an unreadable answer is asked once more

STYLE_TEXT = {
    "keyword": "a few search words (two to five), as typed into a search box: no question "
    "mark, no full sentence",
    "question": "a natural question, as a person would ask it in their own words",
    "identifier": "a lookup of an exact name, code, version, number or identifier that "
    "appears in the passage, as typed by someone who already knows it",
}
TASK_ONE = "Write one search query for which the passage below is the answer."
TASK_TWO = (
    "Write one search query that needs both passages below to be answered fully (a question "
    "that joins what each of them says)."
)
_PROMPT = """\
You are helping to test a search engine. {task} Write what a real user would type: do not copy \
sentences from the passage, and do not mention "the passage".

Style: {style}
{examples}
{document}

{reply}
"""
REPLY = {
    "line": "Reply with the query alone, on one line, with no quotes and no other text.",
    "json": 'Reply with a JSON object only, in exactly this form: {"query": "..."}',
}
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)
_LEAD = re.compile(r"^(?:query|search query)\s*:\s*", re.IGNORECASE)
_PLACEHOLDERS = re.compile(r"(\{document\}|\{style\}|\{examples\}|\{task\})")


@dataclass(frozen=True)
class SynthPrompt:
    """The template (placeholders still in it), where it came from, and its hash."""

    template: str
    source: str  # "built-in" or the file's path
    answer_format: str

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.template.encode("utf-8")).hexdigest()[:HASH_CHARS]

    def render(self, documents: Sequence[str], style: str, examples: Sequence[str]) -> str:
        """The prompt for ``documents`` (one or two passages) in ``style``; one pass, so that a
        passage holding ``{style}`` is not filled in again."""
        if len(documents) == 1:
            doc = f"Passage: {documents[0]}"
        else:
            doc = "\n\n".join(f"Passage {i}: {d}" for i, d in enumerate(documents, start=1))
        shown = ""
        if examples:
            lines = "".join(f"- {e}\n" for e in examples)
            shown = f"\nQueries real users typed (follow their style, not their topics):\n{lines}"
        values = {
            "{document}": doc,
            "{style}": STYLE_TEXT[style],
            "{examples}": shown,
            "{task}": TASK_ONE if len(documents) == 1 else TASK_TWO,
        }
        parts = _PLACEHOLDERS.split(self.template)
        return "".join(values.get(p, p) for p in parts)


def load_prompt(synth: SynthConfig) -> SynthPrompt:
    """The built-in prompt, or ``synth.template`` (ConfigError naming the file when it lacks
    ``{document}``)."""
    if synth.template is None:
        text = _PROMPT.replace("{reply}", REPLY[synth.answer_format])
        return SynthPrompt(text, BUILT_IN, synth.answer_format)
    text = read_text(synth.template, "synth.template")
    if "{document}" not in text:
        raise ConfigError(
            f"synth.template {synth.template}: the template has no {{document}} (the "
            "passage's text is put there)"
        )
    return SynthPrompt(text, str(synth.template), synth.answer_format)


def read_answer(answer: str | None, answer_format: str) -> str | None:
    """The query an answer gives (the module docstring), or None."""
    if answer is None:
        return None
    text = answer.strip()
    if answer_format == "json":
        fenced = _FENCE.match(text)
        try:
            data = json.loads(fenced.group(1) if fenced else text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        found = data.get("query")
        if not isinstance(found, str):
            many = data.get("queries")
            strings = (
                [q for q in many if isinstance(q, str) and q.strip()]
                if isinstance(many, list)
                else []
            )
            found = strings[0] if strings else None
        return _clean(found) if isinstance(found, str) else None
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    return _clean(line)


def _clean(text: str) -> str | None:
    """One query: whitespace collapsed, a leading ``Query:`` and surrounding quotes taken off;
    None when nothing is left or it is longer than a query."""
    q = " ".join(_LEAD.sub("", " ".join(text.split())).split())
    while len(q) >= 2 and q[0] == q[-1] and q[0] in "\"'`":
        q = q[1:-1].strip()
    if q.startswith(("“", "«")) and q.endswith(("”", "»")):
        q = q[1:-1].strip()
    return q if q and len(q) <= MAX_QUERY_CHARS else None


# --- the endpoint and the cache ----------------------------------------------------------------


@dataclass(frozen=True)
class Writer:
    """The chat endpoint that writes the queries: its settings (the generation temperature put
    in), the config section named in messages, and where it is."""

    endpoint: ChatEndpointConfig
    section: str  # "synth.chat" or "judge"
    url: str  # the endpoint shown (openai_api.endpoint_of)


def writer_of(cfg: Config) -> Writer:
    """``synth.chat``, else the judge's endpoint (ConfigError when there is neither)."""
    from evalret.engines.openai_api import endpoint_of

    synth = cfg.synth or SynthConfig()
    if synth.chat is not None:
        chat, section = synth.chat, "synth.chat"
    elif cfg.judge is not None:
        fields = set(ChatEndpointConfig.model_fields)
        chat = ChatEndpointConfig(**{k: getattr(cfg.judge, k) for k in fields})
        section = "judge"
    else:
        raise ConfigError(
            "golden synth needs a chat endpoint: a judge: section (judge: {name: MODEL, "
            "base_url: URL}) or synth.chat"
        )
    chat = chat.model_copy(update={"temperature": synth.temperature})
    return Writer(chat, section, endpoint_of(chat.base_url))


def answer_settings(writer: Writer, prompt: SynthPrompt) -> dict[str, Any]:
    """Every setting that decides an answer, in the cache key: a change of any asks again."""
    c = writer.endpoint
    return {
        "endpoint": writer.url,
        "model": c.name,
        "temperature": c.temperature,
        "request_fields": c.request_fields or {},
        "answer_format": prompt.answer_format,
        "prompt_hash": prompt.hash,
    }


def answer_key(
    settings: Mapping[str, Any],
    documents: Sequence[str],
    style: str,
    examples: Sequence[str],
    sample: int,
) -> str:
    """The cache key of one generation answer (the module docstring)."""
    text = json.dumps(
        [settings, list(documents), style, list(examples), sample],
        ensure_ascii=False,
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def synth_cache_path(cfg: Config) -> Path:
    """The query writer's answer cache, in the directory the embedding cache uses."""
    return cache_root(cfg.cache).file(SYNTH_ANSWERS)


class SynthCache:
    """The query writer's answers, one SQLite row each, committed as each arrives."""

    def __init__(self, root: CacheRoot | None) -> None:  # None: no cache (cache.enabled false)
        self.table = SqliteTable(SYNTH_ANSWERS, root, durable=True)

    @classmethod
    def of(cls, cfg: Config) -> SynthCache:
        return cls(cache_root(cfg.cache) if cfg.cache.enabled else None)

    def check(self) -> None:
        """Refuse (InputError, exit 2) a file at the cache's path that is not evalret's."""
        self.table.check()

    def lookup(self, keys: Sequence[str]) -> dict[str, str]:
        return {
            key: answer
            for key, answer in self.table.select("answer", keys)
            if isinstance(answer, str)
        }

    def store(self, key: str, answer: str) -> None:
        at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.table.put([(key, answer[:ANSWER_CHARS], at)])

    def close(self) -> None:
        self.table.close()


# --- the plan and the generation ---------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One query to write: its source documents (ids and texts) and its style."""

    doc_ids: tuple[str, ...]
    documents: tuple[str, ...]
    style: str


@dataclass(frozen=True)
class Ask:
    """One answer asked for: the item's position, the sample index, its key and its prompt."""

    item: int
    sample: int
    key: str
    prompt: str


@dataclass
class GenPlan:
    """What writing ``items`` takes: every first ask's key and prompt, and what the cache has
    (of first asks and of second ones)."""

    items: list[Item]
    prompt: SynthPrompt
    writer: Writer
    examples: list[str]
    settings: dict[str, Any]
    cached: dict[str, str]

    def ask(self, item: int, sample: int) -> Ask:
        it = self.items[item]
        key = answer_key(self.settings, it.documents, it.style, self.examples, sample)
        return Ask(item, sample, key, self.prompt.render(it.documents, it.style, self.examples))

    def first_asks(self) -> list[Ask]:
        return [self.ask(i, 0) for i in range(len(self.items))]


def make_gen_plan(
    items: list[Item],
    prompt: SynthPrompt,
    writer: Writer,
    examples: list[str],
    cache: SynthCache,
) -> GenPlan:
    settings = answer_settings(writer, prompt)
    plan = GenPlan(items, prompt, writer, examples, settings, {})
    keys = [
        answer_key(settings, it.documents, it.style, examples, s) for it in items for s in (0, 1)
    ]
    plan.cached = cache.lookup(keys)
    return plan


@dataclass
class Generated:
    """What the generation got: each item's query (None: none read), the counts."""

    queries: list[str | None]
    asked: int = 0  # requests sent
    cached: int = 0  # answers read from the cache
    unreadable: int = 0  # items whose two answers gave no query
    failed: list[str] = field(default_factory=list)  # why each failed request failed
    usage: Any = None  # engines.chat_api.ChatUsage


def to_ask(plan: GenPlan) -> tuple[list[Ask], int]:
    """The first asks the cache lacks, and how many answers it has of the first asks (a cached
    unreadable first answer whose second is cached counts both)."""
    todo = [a for a in plan.first_asks() if a.key not in plan.cached]
    return todo, len(plan.items) - len(todo)


def generate(
    plan: GenPlan, cache: SynthCache, advance: Callable[[int], None] | None = None
) -> Generated:
    """Ask every answer the cache lacks (an unreadable one once more, sample 1), keeping each
    answer in the cache as it arrives."""
    from evalret.engines.chat_api import ChatClient

    fmt = plan.prompt.answer_format
    out = Generated([None] * len(plan.items))
    client = ChatClient(plan.writer.endpoint, plan.writer.section)
    out.usage = client.usage
    pending = list(range(len(plan.items)))
    failed: set[int] = set()
    for sample in range(SAMPLES):
        todo = []
        for a in (plan.ask(i, sample) for i in pending):
            if a.key in plan.cached:
                out.cached += 1
                out.queries[a.item] = read_answer(plan.cached[a.key], fmt)
            else:
                todo.append(a)
        by_key = {a.key: a for a in todo}
        out.asked += len(todo)
        for reply in client.replies([(a.key, a.prompt) for a in todo]):
            ask = by_key[reply.key]
            if reply.failed is not None:
                out.failed.append(reply.failed)
                failed.add(ask.item)
            else:
                cache.store(ask.key, reply.text or "")
                out.queries[ask.item] = read_answer(reply.text, fmt)
            if advance is not None and sample == 0:
                advance(1)
        pending = [i for i in pending if out.queries[i] is None and i not in failed]
    out.unreadable = len(pending)
    return out


def shortfall(gen: Generated, cache: Path | None) -> str | None:
    """What the generation left undone (exit 3): the requests that failed for good, with their
    first distinct reasons, and where the answers got are kept; None when nothing failed."""
    if not gen.failed:
        return None
    reasons = sorted(set(gen.failed))[:3]
    said = f"{len(gen.failed)} generation request(s) failed for good ({'; '.join(reasons)})"
    if cache is None:
        return f"{said}; cache.enabled is false: a rerun asks every document again"
    return f"{said}; the answers got are kept in {cache}: a rerun asks only the rest"
