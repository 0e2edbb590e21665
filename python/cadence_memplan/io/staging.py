"""``plan --stage-out``: staging's copies and their times as JSON (docs/formats.md,
"Staging file"), written whole or not at all."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from .outputs import write_whole

__all__ = ["write_staging"]


def write_staging(path: str | os.PathLike[str], document: Mapping[str, Any]) -> None:
    """Write ``document`` (:func:`cadence_memplan.staging.report.staging_json`'s)."""
    with write_whole(path) as partial, partial.open("w", encoding="utf-8") as file:
        json.dump(document, file, indent=2)
        file.write("\n")
