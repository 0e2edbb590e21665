"""Configuration documents as text, JSON or TOML: the one reader behind memory config
files (``io/memories.py``) and staging's cost models (``staging/cost_model.py``).

TOML comes from the standard library's ``tomllib`` on Python 3.11 and newer, and from
``tomli`` (the same parser, a declared dependency there) on 3.10.
"""

from __future__ import annotations

import json
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised by the 3.10 wheel's test run
    import tomli as tomllib

__all__ = ["parse_document"]


def parse_document(text: str, *, toml: bool) -> object:
    """The document ``text`` holds, parsed as TOML or else as JSON; a malformed one raises
    ``ValueError`` (both parsers' errors are ``ValueError``)."""
    return tomllib.loads(text) if toml else json.loads(text)
