"""The files an RLlib user reads in a run folder, written as the run goes: ``params.json``
(the settings), ``result.json`` (one JSON line per ``train()`` result, custom metrics
nested) and ``progress.csv`` (the same results flattened, a column per key: ``custom_metrics/
angle_mean``). Each write is flushed and closed, so pandas reads them while the run is
alive; a resumed run in the same folder goes on appending."""
from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from a3c.config import Config
from a3c.lifecycle.disk import replace_text, writing
from a3c.lifecycle.strict_json import strict_dumps

PARAMS_FILE, RESULT_FILE, PROGRESS_FILE = "params.json", "result.json", "progress.csv"


def flattened(result: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``result`` with nested mappings as ``outer/inner`` keys (RLlib's progress.csv
    columns); lists as JSON text, None as an empty cell."""
    flat: dict[str, Any] = {}
    for key, value in result.items():
        if isinstance(value, Mapping):
            flat.update(flattened(value, f"{prefix}{key}/"))
        elif isinstance(value, (list, tuple)):
            flat[prefix + key] = json.dumps(value)
        else:
            flat[prefix + key] = "" if value is None else value
    return flat


class RunFiles:
    """``params.json`` now, ``result.json`` and ``progress.csv`` a line per ``add``; their
    writes are guarded (``OutOfRoom`` on a full disk)."""

    def __init__(self, run_dir: Path, config: Config):
        self.run_dir = run_dir
        replace_text(run_dir / PARAMS_FILE, strict_dumps(dataclasses.asdict(config), indent=2, default=str) + "\n")
        self._columns = self._existing_columns()

    def _existing_columns(self) -> list[str]:
        """The header of a progress.csv a resumed run goes on from (empty if none)."""
        path = self.run_dir / PROGRESS_FILE
        if not path.is_file():
            return []
        with path.open(newline="") as stream:
            return next(csv.reader(stream), [])

    def add(self, result: Mapping[str, Any]) -> None:
        line = strict_dumps(dict(result), default=str)
        path = self.run_dir / RESULT_FILE
        with writing(path), path.open("a") as stream:
            stream.write(line + "\n")
        self._add_row(flattened(json.loads(line)))  # as written: non-finite figures null, objects as text

    def _add_row(self, row: dict[str, Any]) -> None:
        """One row of progress.csv; a key not seen before widens the table: the file is
        written again with the new column, the older rows' cells in it empty."""
        path = self.run_dir / PROGRESS_FILE
        new = [key for key in row if key not in self._columns]
        if new or not path.is_file():
            rows = []
            if path.is_file():
                with path.open(newline="") as stream:
                    rows = list(csv.DictReader(stream))
            self._columns = [*self._columns, *new]
            text = io.StringIO()
            table = csv.DictWriter(text, self._columns, restval="")
            table.writeheader()
            table.writerows([*rows, row])
            replace_text(path, text.getvalue())
            return
        with writing(path), path.open("a", newline="") as stream:
            csv.DictWriter(stream, self._columns, restval="").writerow(row)
