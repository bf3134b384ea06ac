"""Finding skills by what they are for: the builtin ``find_skills`` tool's matching and ranking.

Offered when ``limits.catalogBytes`` leaves skills out of the system prompt's listing, so the
model can still find (and then ``load_skill``) every skill of the catalog. Matching is by words,
not letters (protocol v3 §3): the query and each skill are split into lower-case words, lightly
stemmed (``forms``/``form``, ``testing``/``test``); a skill scores by the query words in its name
(weighted most), its description, then its folder, each word weighted by how rare it is among the
skills (a word every skill has says little). An exact name comes first: the whole query, or a run
of its words joined by ``-``, equal to a skill's name. Ties keep the order of the roots. A
one-letter word matches nothing on its own. The answer is bounded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness_sidecar.resources.find_skills import check_arguments

MAX_RESULTS = 20
NAME_WEIGHT = 3.0
DESCRIPTION_WEIGHT = 1.0
FOLDER_WEIGHT = 0.5
_WORD = re.compile(r"[^\W_]+")
# Words that say nothing about what a skill is for; they never match on their own (a name made
# of them still matches exactly).
STOP_WORDS = frozenset(
    "an and are as at be by can do does for from how i in into is it its me my of on or our so that the "
    "this to use used uses using when with you your we what which want need needs help please should".split())


def words(text: str) -> list[str]:
    """The lower-case words of ``text``, in order (runs of letters and digits)."""
    return _WORD.findall(text.lower())


def stem(word: str) -> str:
    """A light stem, the same for a word's common inflections: ``forms``/``form``,
    ``testing``/``tests``/``test``, ``debugging``/``debug``, ``builder``/``build``, ``writing``/``write``,
    ``policies``/``policy``, ``verification``/``verify``, ``systematically``/``systematic``. Both the
    query and the skills go through it, so a stem need not be a word."""
    if len(word) <= 3 or word.isdigit():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ification"):
        return word[:-9] + "if"
    if word.endswith("ify") and len(word) > 5:
        return word[:-3] + "if"
    if word.endswith("ally") and len(word) - 4 >= 5:
        word = word[:-4]
    elif word.endswith("ly") and len(word) - 2 >= 5:
        word = word[:-2]
    for suffix in ("ing", "ed", "er"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz" and word[-1] not in _VOWELS:
                word = word[:-1]  # 'debugg' -> 'debug', 'mapp' -> 'map'
            return word
    if word.endswith("e") and len(word) > 4:
        return word[:-1]  # 'write' and 'writing' -> 'writ'
    return word


_VOWELS = frozenset("aeiou")


def _terms(text: str) -> set[str]:
    """The stems that can match: one-letter words and stop words left out."""
    return {stem(w) for w in words(text) if len(w) > 1 and w not in STOP_WORDS}


@dataclass
class SkillDoc:
    """One skill as the search sees it: its name, its catalog description and its folder's words."""

    name: str
    description: str
    folder: str = ""


@dataclass
class _Indexed:
    doc: SkillDoc
    name_terms: set[str]
    description_terms: set[str]
    folder_terms: set[str]
    all_terms: frozenset[str] = frozenset()


@dataclass
class Index:
    """The skills of one catalog, split into words once (a catalog is searched many times)."""

    docs: list[_Indexed]
    document_frequency: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, docs: Iterable[SkillDoc]) -> "Index":
        indexed = []
        for d in docs:
            name, description, folder = _terms(d.name), _terms(d.description), _terms(d.folder)
            indexed.append(_Indexed(d, name, description, folder, frozenset(name | description | folder)))
        frequency: dict[str, int] = {}
        for item in indexed:
            for term in item.all_terms:
                frequency[term] = frequency.get(term, 0) + 1
        return cls(indexed, frequency)

    def weight(self, term: str) -> float:
        """How much a match of ``term`` says: rarer words say more (inverse document frequency)."""
        return math.log(1.0 + len(self.docs) / self.document_frequency.get(term, 1))

    def rank(self, query: str) -> list[SkillDoc]:
        """The skills that match ``query``, best first (see the module's docstring)."""
        raw = words(query)
        exact = _exact_names(raw)
        wanted = list(dict.fromkeys(stem(w) for w in raw if len(w) > 1 and w not in STOP_WORDS))
        # two words written apart may be one in a name ('web app' -> webapp-testing, 'clinical trials' ->
        # clinicaltrials): each word may also match as part of its join with a neighbour
        joined: dict[str, list[str]] = {term: [term] for term in wanted}
        for first, second in zip(raw, raw[1:]):
            if len(first) > 1 and len(second) > 1:
                compound = stem(first + second)
                for part in (stem(first), stem(second)):
                    if part in joined:
                        joined[part].append(compound)
        weights = {term: self.weight(term) for term in wanted}
        alternatives = [(term, weight, [(a, self.weight(a)) for a in joined[term]]) for term, weight in weights.items()]
        total_weight = sum(weights.values()) or 1.0
        every = frozenset(a for choices in joined.values() for a in choices)
        scored: list[tuple[int, float, int, SkillDoc]] = []  # (tier, -score, position, skill)
        for position, item in enumerate(self.docs):
            # exact names first, the one stating more of the query first ('pdf-forms' before 'pdf')
            tier = -exact.get(item.doc.name, 0)
            if not tier and item.all_terms.isdisjoint(every):
                continue
            score = 0.0
            covered = 0.0
            for term, weight, choices in alternatives:
                best = 0.0
                for alternative, alternative_weight in choices:
                    hit = 0.0
                    if alternative in item.name_terms:
                        hit += NAME_WEIGHT
                    if alternative in item.description_terms:
                        hit += DESCRIPTION_WEIGHT
                    if alternative in item.folder_terms:
                        hit += FOLDER_WEIGHT
                    if hit:
                        best = max(best, hit * alternative_weight)
                if best:
                    score += best
                    covered += weight
            if not tier and not score:
                continue
            # a skill with all the query's (weighty) words beats one with many hits of one word
            scored.append((tier, -score * (covered / total_weight), position, item.doc))
        scored.sort(key=lambda row: row[:3])
        return [row[3] for row in scored]


def _exact_names(raw: Sequence[str]) -> dict[str, int]:
    """Every name the query states exactly, with how many of its words: all its words, or a run of
    them, joined by ``-`` (a run that is one one-letter word states nothing)."""
    names: dict[str, int] = {}
    for start in range(len(raw)):
        for end in range(start + 1, min(len(raw), start + 12) + 1):
            if end - start == 1 and len(raw[start]) < 2:
                continue
            names["-".join(raw[start:end])] = end - start
    return names


def rank(entries: Iterable[tuple[str, str]], query: str) -> list[tuple[str, str]]:
    """The ``(name, description)`` entries that match ``query``, best first (entries in roots order)."""
    entries = list(entries)
    return [(d.name, d.description) for d in Index.build(SkillDoc(n, t) for n, t in entries).rank(query)]


def find_skills(index: Index | Iterable[tuple[str, str]], arguments: dict[str, Any],
                limit: int = MAX_RESULTS) -> tuple[str, dict[str, Any]]:
    """The text and details of a ``find_skills`` answer; ``invalid_arguments`` for a bad query."""
    query = check_arguments(arguments)
    if not isinstance(index, Index):
        index = Index.build(SkillDoc(n, t) for n, t in index)
    matches = index.rank(query)
    shown = matches[:limit]
    if not shown:
        text = f"No skill matches {query.strip()!r}. Try other words, or a skill's name."
    else:
        text = "".join(f"{d.name}: {d.description}\n" for d in shown)
        if len(matches) > len(shown):
            text += (f"({len(matches) - len(shown)} more match{'es' if len(matches) - len(shown) != 1 else ''}: "
                     "use more specific words)\n")
        text += "Load one with the load_skill tool.\n"
    return text, {"matches": [d.name for d in shown], "total": len(matches)}


# The index of the catalog searched last: a thread's model calls find_skills several times on the
# same catalog snapshot (which never changes once made).
_last: tuple[Any, Index] | None = None


def index_of(catalog: Any) -> Index:
    """The search index of a catalog snapshot: its skills in the order of its roots (then by name,
    the order each root lists them), the folder being the skill's root."""
    global _last
    if _last is not None and _last[0] is catalog:
        return _last[1]
    skills = sorted(catalog.skills.values(), key=lambda s: (s.root.index, s.name))
    index = Index.build(SkillDoc(s.name, s.description, _folder_words(s.root.path)) for s in skills)
    _last = (catalog, index)
    return index


def _folder_words(root_path: str) -> str:
    """The words of the folder a skill lives in: the last two parts of its root's path
    (``…/plugins/python-development``), which say what the skills there are about."""
    parts = [p for p in root_path.replace("\\", "/").split("/") if p and not p.startswith(".")]
    return " ".join(parts[-2:])
