"""What the configuration says of the endpoints: where requests go (never a key), and
the keys no answer or message may carry."""

from __future__ import annotations

import os

from gligabao.base.redact import safe_url
from gligabao.config import CONFIG_NAME, Config, user_config_dir
from gligabao.llm.endpoint import Endpoints

__all__ = ["secrets", "where_from"]


def secrets(config: Config) -> tuple[str, ...]:
    """The API keys of the configured endpoints."""
    return Endpoints.from_config(config).secrets


def where_from(config: Config) -> list[tuple[str, str]]:
    """(what, how) lines under `gb config`'s table: the file read, and the endpoints."""
    if config.path is not None:
        read = str(config.path)
    else:
        user = os.path.join(user_config_dir(), CONFIG_NAME)  # where find_config_file looks
        read = f"none found (looked for ./{CONFIG_NAME} and {user}; --config or GB_CONFIG)"
    ends = Endpoints.from_config(config)
    chat_key = f"{config['llm.api_key_env']} or llm.base_url"
    embed_key = config["embeddings.api_key_env"] or chat_key
    return [
        ("config file", read),
        ("LLM (chat)", _endpoint(ends.chat_url, ends.chat_key, chat_key)),
        ("embeddings", _endpoint(ends.embed_url, ends.embed_key, embed_key)),
    ]


def _endpoint(url: str | None, key: str | None, to_set: str) -> str:
    """Whether requests can go out, and where; only whether a key is set, never the key."""
    if not (url or key):  # as Endpoints.chat_available / embeddings_available
        return f"not configured: set {to_set} (gb works offline until then)"
    where = safe_url(url) if url else "the OpenAI API"
    return f"configured: {where}, {'with' if key else 'without'} an API key"
