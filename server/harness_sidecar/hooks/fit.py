"""Hook text never costs a result (protocol-v4 §2): what hooks add is cut to fit ``--max-result-bytes``.

An answer is the part its method made (a tool's result, the catalog, a system prompt) plus texts hooks
added (``additionalContext``, ``systemMessage``, PostToolUse feedback, SessionStart context, …). The
texts are given in declaration order with how many times each is written into the answer (PostToolUse
feedback is both a content item and a ``details.hookFeedback`` entry); they are kept whole while they
fit under the limit less what the answer is without them; one that does not fit is cut at a character
boundary to what room is left (none, at worst) and marked (``CUT_MARK``). The answer then fits whenever
the part its method made fits: that part is never replaced by ``too_large`` because of the hooks.

Sizes are bytes of the compact JSON the endpoint writes (escapes counted), so what is measured here is
what is measured there; ``SLACK`` covers the JSON-RPC envelope around the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from harness_sidecar.base import jsonio

SLACK = 1024  # {"jsonrpc":"2.0","id":…,"result":…} around the answer, ids up to hundreds of bytes
CUT_MARK = "… [hook text cut by the sidecar: {left} more bytes did not fit --max-result-bytes]"


def json_size(value: Any) -> int:
    """Bytes of ``value`` as the endpoint writes it."""
    return len(jsonio.dumps(value))


def _string_size(text: str) -> int:
    return json_size(text)


@dataclass
class Fitted:
    texts: list[str]
    cut: int = 0  # how many texts were cut (each marked)
    left_out_bytes: int = 0  # UTF-8 bytes of hook text left out, in all
    cuts: list[int] = field(default_factory=list)  # the indexes of the cut texts
    dropped: bool = False  # no room even for the marks: ``texts`` is empty and the caller leaves the hooks' part out


def fit(texts: list[str], weights: list[int] | None, budget: int) -> Fitted:
    """``texts`` (in declaration order), each written ``weights[i]`` times, within ``budget`` bytes of JSON."""
    weights = weights or [1] * len(texts)
    sizes = [_string_size(t) for t in texts]
    if sum(s * w for s, w in zip(sizes, weights)) <= budget:  # the common case: everything fits
        return Fitted(list(texts))
    out = Fitted([])
    # room kept for the marks of the texts after each one, should they all be cut to nothing
    marks = [_string_size(CUT_MARK.format(left=len(t.encode("utf-8")))) * w for t, w in zip(texts, weights)]
    reserve = sum(marks)
    if reserve > budget:  # not even the marks fit beside the method's answer: the hooks' say is left out whole
        total = sum(len(t.encode("utf-8")) for t in texts)
        return Fitted([], cut=len(texts), left_out_bytes=total, cuts=list(range(len(texts))), dropped=True)
    used = 0
    for i, (text, size, weight) in enumerate(zip(texts, sizes, weights)):
        reserve -= marks[i]
        if used + size * weight + reserve <= budget:
            out.texts.append(text)
            used += size * weight
            continue
        room = max(0, (budget - used - reserve) // weight)
        kept = _prefix_within(text, room - marks[i] // weight)
        left = len(text.encode("utf-8")) - len(kept.encode("utf-8"))
        cut = kept + CUT_MARK.format(left=left)
        out.texts.append(cut)
        out.cut += 1
        out.cuts.append(i)
        out.left_out_bytes += left
        used += _string_size(cut) * weight
    return out


def _prefix_within(text: str, room: int) -> str:
    """The longest prefix of ``text`` whose JSON string (quotes included) takes at most ``room`` bytes."""
    if room <= 2 or not text:
        return ""
    low, high = 0, min(len(text), room)  # every character takes at least one byte
    while low < high:
        mid = (low + high + 1) // 2
        if _string_size(text[:mid]) <= room:
            low = mid
        else:
            high = mid - 1
    return text[:low]


def fit_and_say(texts: list[str], weights: list[int] | None, limit: int, size_without: Callable[[], int],
                notify: Callable[[dict[str, Any]], None], thread_id: str, where: str) -> Fitted:
    """``fit`` within ``limit`` (``--max-result-bytes``) less ``SLACK`` less ``size_without()`` (what the answer
    is without the texts); one ``thread/diagnostic`` ``hook_text_truncated`` when anything was cut."""
    if not texts:
        return Fitted([])
    fitted = fit(texts, weights, limit - SLACK - size_without())
    if fitted.cut:
        how = ("left out whole: the answer leaves no room even for a mark" if fitted.dropped else "each cut is marked")
        notify({"threadId": thread_id, "kind": "hook_text_truncated", "cut": fitted.cut,
                "leftOutBytes": fitted.left_out_bytes, "limit": limit,
                "message": f"{fitted.cut} hook text(s) of {where} were cut ({fitted.left_out_bytes} bytes left out) "
                           f"to fit --max-result-bytes ({limit}); {how}"})
    return fitted


def fit_answer(answer: dict[str, Any], keys: tuple[str, ...], limit: int, notify: Callable[[dict[str, Any]], None],
               thread_id: str, where: str) -> dict[str, Any]:
    """``answer`` with the string lists at ``keys`` (texts hooks added) cut to fit beside the rest of it."""
    present = [k for k in keys if type(answer.get(k)) is list and answer[k]]
    if not present:
        return answer
    texts = [t for k in present for t in answer[k]]
    fitted = fit_and_say(texts, None, limit, lambda: json_size({**answer, **{k: [""] * len(answer[k]) for k in present}}),
                         notify, thread_id, where)
    out = dict(answer)
    if fitted.dropped:
        for k in present:
            out[k] = []
        return out
    i = 0
    for k in present:
        out[k] = fitted.texts[i:i + len(answer[k])]
        i += len(answer[k])
    return out
