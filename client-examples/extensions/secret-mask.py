"""secret-mask: redact secrets from every tool result before the model or the editor sees them.

Shows: a ``tool_result_transform`` that patches the result (``content`` and ``details``), and why
transforms are policy: if this code raises — a broken pattern in the settings, say — the sidecar
withholds the whole result (``details.withheld``) instead of passing the secret on.
Ported from the PII redactor of Pi's command-pipeline example (``examples/extensions/
command-pipeline/redaction-audit.ts``, Pi commit 2d9369e8, since removed from Pi), which redacts
exported sessions; here the same idea guards tool results, whoever ran the tool (an extension,
the editor, the builtin ``load_skill``). Only tool results pass transforms: what
``context/build`` puts in the system prompt (instructions, active skills) is not a tool result.

Settings (``thread/start.extensionSettings["secret-mask"]``), all optional:
  patterns  extra {name: regular expression}; a group named ``secret`` limits what is replaced
  notify    tell the user how many secrets were redacted (default true)
"""

import re

# Each match becomes [REDACTED:<name>]; where the pattern has a group named "secret", only that
# group is replaced (so "api_key = [REDACTED:assignment]" keeps its name).
PATTERNS = {
    "private_key": r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    "live_key": r"\b[rs]k[-_](?:live|test)[-_][A-Za-z0-9]{4,}",
    "openai_key": r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}",
    "aws_access_key": r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    "github_token": r"\bgh[pousr]_[A-Za-z0-9]{36,}\b",
    "assignment": (r"(?i)\b(?:api[_-]?key|token|secret|password)[\"']?\s*[=:]\s*[\"']?"
                   r"(?P<secret>(?!\[REDACTED)[^\s\"',;]{8,})"),
}

_compiled = {}


def compiled(patterns):
    key = tuple(sorted(patterns.items()))
    if key not in _compiled:
        _compiled[key] = [(name, re.compile(source)) for name, source in patterns.items()]
    return _compiled[key]


def redact(text, patterns, found):
    for name, pattern in patterns:
        def replace(match, name=name):
            found.append(name)
            if "secret" in pattern.groupindex and match.group("secret") is not None:
                start, end = match.span("secret")
                whole = match.group(0)
                offset = match.start()
                return whole[:start - offset] + f"[REDACTED:{name}]" + whole[end - offset:]
            return f"[REDACTED:{name}]"
        text = pattern.sub(replace, text)
    return text


def redact_value(value, patterns, found):
    """Every string inside a JSON value (dict keys stay as they are)."""
    if isinstance(value, str):
        return redact(value, patterns, found)
    if isinstance(value, list):
        return [redact_value(item, patterns, found) for item in value]
    if isinstance(value, dict):
        return {key: redact_value(item, patterns, found) for key, item in value.items()}
    return value


def mask(event, ctx):
    patterns = compiled({**PATTERNS, **ctx.settings.get("patterns", {})})  # a bad regex raises: withheld
    result = event["result"]
    found = []
    # text items are redacted; an image, audio clip, link or embedded resource (v4) is kept as it came
    content = [{**item, "text": redact(item["text"], patterns, found)} if item.get("type") == "text" else item
               for item in result["content"]]
    details = redact_value(result["details"], patterns, found)
    if not found:
        return None  # keep the result as it is
    if ctx.settings.get("notify", True):
        kinds = ", ".join(sorted(set(found)))
        ctx.ui.notify(f"Redacted {len(found)} secret(s) ({kinds}) from the result of {event['call']['name']}",
                      level="warning")
    return {"content": content, "details": details}


def activate(api):
    api.on("tool_result_transform", mask)
