"""JSON that every parser reads. Python writes a NaN or an infinity as the bare words NaN and
Infinity, which are not JSON: ``jq``, JavaScript's ``JSON.parse`` and most other languages
refuse the whole file. A run's files hold null there instead, and say what stood there."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

NON_FINITE_KEY = "non_finite"
"""The field that names each value written as null and what it was: ``{"mean_reward_100": "inf"}``."""


def _finite(value: Any, path: str, found: dict[str, str]) -> Any:
    if isinstance(value, np.generic):  # a numpy number: the Python one it holds
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        found[path] = repr(value)  # 'nan', 'inf', '-inf'
        return None
    if isinstance(value, Mapping):
        return {key: _finite(item, f"{path}.{key}" if path else str(key), found) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item, f"{path}[{index}]", found) for index, item in enumerate(value)]
    return value


def strict_dumps(values: Mapping[str, Any], **options: Any) -> str:
    """``values`` as strict JSON: each non-finite float, however deep, becomes null and is
    named, with what it was, under ``non_finite``."""
    found: dict[str, str] = {}
    clean = _finite(values, "", found)
    if found:
        clean[NON_FINITE_KEY] = found
    return json.dumps(clean, allow_nan=False, **options)
