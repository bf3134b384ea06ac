"""find_skills' top-3 hit rate over a large real corpus: ``python -m bench.find [CORPUS] [--queries FILE]``.

CORPUS (or ``HARNESS_BENCH_CORPUS``): a directory of public skill repositories (bench/real_corpus.py).
The queries (bench/find_queries.json by default) are what a user would ask, each with the skill
name(s) that answer it. Each query goes through the real sidecar process: ``thread/start`` over
all the roots with a catalog budget so small that ``find_skills`` is offered, then a ``tools/call``
of ``find_skills`` per query; a hit is an expected name among the first three matches. Prints
each miss with what came first, and the rate; exits 1 below ``--target`` (0.9).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.common import SIDECAR, Raw
from bench.real_corpus import corpus_dir, describe, roots

QUERIES = Path(__file__).with_name("find_queries.json")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.find", description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", help="a directory of skill repositories (or HARNESS_BENCH_CORPUS)")
    parser.add_argument("--queries", type=Path, default=QUERIES)
    parser.add_argument("--top", type=int, default=3)
    parser.add_argument("--target", type=float, default=0.9)
    args = parser.parse_args()
    corpus = corpus_dir(args.corpus)
    root_list = roots(corpus)
    queries = json.loads(args.queries.read_text())["queries"]
    print(describe(corpus, root_list), flush=True)
    raw = Raw(SIDECAR)
    try:
        raw.call("initialize")
        started = raw.call("thread/start", {"roots": root_list, "limits": {"maxSkillsPerRoot": 2000,
                                                                           "catalogBytes": 1000}})
        thread = started["threadId"]
        listed = {s["name"] for s in started["catalog"]["skills"]}
        assert "find_skills" in [t["name"] for t in started["tools"]], "find_skills was not offered"
        hits, misses, unknown, elapsed = 0, [], [], []
        for number, item in enumerate(queries):
            if not any(name in listed for name in item["expected"]):
                unknown.append(item["query"])
                continue
            began = time.perf_counter()
            result = raw.call("tools/call", {"threadId": thread, "call": {
                "id": f"q{number}", "name": "find_skills", "arguments": {"query": item["query"]}}})["result"]
            elapsed.append((time.perf_counter() - began) * 1000)
            matches = result["details"]["matches"] if not result["isError"] else []
            if any(name in matches[:args.top] for name in item["expected"]):
                hits += 1
            else:
                misses.append((item["query"], item["expected"], matches[:args.top]))
    finally:
        raw.close()
    for query, expected, got in misses:
        print(f"miss: {query!r}: expected {' or '.join(expected)}; first {args.top}: {', '.join(got) or '(none)'}")
    for query in unknown:
        print(f"left out (no expected skill in this corpus): {query!r}")
    asked = len(queries) - len(unknown)
    rate = hits / asked if asked else 0.0
    elapsed.sort()
    print(f"top-{args.top} hit rate: {hits}/{asked} = {rate:.1%} ({len(listed)} skills listed; find_skills "
          f"round trip p50 {elapsed[len(elapsed) // 2]:.1f} ms)" if elapsed else "no query asked")
    return 0 if rate >= args.target else 1


if __name__ == "__main__":
    raise SystemExit(main())
