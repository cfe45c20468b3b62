"""Endpoint URLs, parsed (never substring-tested): the host a call goes to, a URL with its credentials removed, and
whether a host is the official judge's. Standard library only.

``host_of`` gives what a verdict records as ``endpoint_host``; ``redact`` is what run-meta, the scorecard, the
report and every printed line show of a URL. Parsed, so ``http://127.0.0.1:P/api.openai.com/v1`` (a proxy path)
and ``http://api.openai.com@127.0.0.1:P/v1`` (a user name) are 127.0.0.1, not OpenAI.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

OPENAI_API_HOST = "api.openai.com"
AZURE_RESOURCE_HOST = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?\.openai\.azure\.com$")
"""One DNS label, then ``.openai.azure.com``: the host of an Azure OpenAI resource."""
DEFAULT_PORTS = {"http": 80, "https": 443}
REDACTED = "***"
"""What credentials become (a user name and password together; a secret query value). Not ``[redacted]``: brackets
in a URL's host part mean IPv6 to a URL parser."""
_SECRET_PARAM = re.compile(r"(key|token|secret|password|passwd|pwd|sig|signature|auth|credential)", re.I)
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()\[\]{},]+")

TEST_OFFICIAL_HOSTS: frozenset[str] = frozenset()
"""Hosts (``host:port``) a test treats as the official judge's, over any scheme: the fake server on 127.0.0.1.
Only code in the same process can set it (tests monkeypatch it); nothing a user writes or passes reaches it."""


def _split(url: str):
    try:
        parts = urlsplit(str(url).strip())
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        return None
    return parts if parts.scheme and parts.hostname else None


def host_of(url: str | None) -> str | None:
    """``host`` or ``host:port`` of ``url`` (the port only when it is not the scheme's default), lower-cased, without
    user, password, path or query; None when it has no scheme or host (not a URL a client can call)."""
    parts = None if url is None else _split(url)
    if parts is None:
        return None
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    port = parts.port
    if port is None or port == DEFAULT_PORTS.get(parts.scheme.lower()):
        return host
    return f"{host}:{port}"


def redact(url: str | None) -> str | None:
    """``url`` without credentials: user info and secret query values become ``***``; the rest is kept
    as written. A string that is not a URL has anything before an ``@`` in its first segment redacted."""
    if url is None:
        return None
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError:
        parts = None
    if parts is None or not parts.scheme or not parts.netloc:
        return re.sub(r"^[^/@]*@", f"{REDACTED}@", text)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@" + netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_PARAM.search(k) for k, _ in pairs):
            query = urlencode([(k, REDACTED if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str) -> str:
    """Every URL inside ``text`` redacted (``redact``): for messages and notes that quote an endpoint."""
    return _URL_IN_TEXT.sub(lambda m: redact(m.group(0)) or "", str(text))


def is_official_host(provider: str | None, host: str | None) -> bool:
    """``host`` (as ``host_of`` gives it) serves the official snapshot for ``provider``: ``api.openai.com`` for
    ``openai``, an Azure OpenAI resource host for ``azure``. A host with a port is neither."""
    if not host:
        return False
    host = host.lower()
    if host in TEST_OFFICIAL_HOSTS:
        return provider in ("openai", "azure")
    if provider == "openai":
        return host == OPENAI_API_HOST
    if provider == "azure":
        return bool(AZURE_RESOURCE_HOST.match(host))
    return False


def is_official_endpoint(provider: str | None, url: str | None) -> bool:
    """``url`` is the official judge's endpoint for ``provider``: HTTPS to the host ``is_official_host`` names."""
    parts = None if url is None else _split(url)
    host = host_of(url)
    if parts is None or host is None:
        return False
    if host.lower() in TEST_OFFICIAL_HOSTS:
        return is_official_host(provider, host)
    return parts.scheme.lower() == "https" and is_official_host(provider, host)
