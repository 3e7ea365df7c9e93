"""What a worker sends, declared: columns with a dtype and a per-row shape.

An algorithm declares its workers' payload: the columns (observations, actions of any
space, behaviour log-probabilities, a recurrent state, a flat gradient, ...), the most rows
one message holds, and how the object its sender hands over becomes columns and back
(``encode``, ``decode``). The transports carry whatever is declared and read nothing else;
each decides how from the columns' sizes (shared-memory slots for the large ones on the
process backend, the object store on Ray). A message that does not match its declaration is an error
in the worker that sent it, naming the column, before anything is written.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np


class PayloadError(ValueError):
    """A worker's message does not match the columns its algorithm declared."""


@dataclass(frozen=True)
class Column:
    """One column: ``dtype`` and ``shape`` of one row. How it travels is the transport's
    choice, from its size."""

    name: str
    dtype: str
    shape: tuple[int, ...] = ()

    @property
    def row_bytes(self) -> int:
        return np.dtype(self.dtype).itemsize * int(np.prod(self.shape, dtype=np.int64))

    def check(self, array: np.ndarray) -> None:
        """PayloadError unless ``array`` holds rows of this column."""
        if array.dtype != np.dtype(self.dtype) or array.shape[1:] != self.shape:
            raise PayloadError(f"column {self.name!r} was declared as rows of {self.dtype} {self.shape} and "
                               f"a worker sent {array.dtype} {array.shape[1:]}")


class Payload:
    """The columns one algorithm's workers send, at most ``max_rows`` rows a message.

    Subclasses say how the sender's object becomes columns and a small picklable ``meta``
    (``encode``), and how the learner's message is made from them (``decode``).
    """

    may_wait: ClassVar[bool] = True
    """A message may wait for others and travel with them (Ray's blocks of several vector
    steps); False where each must reach the learner as soon as it is made."""

    def __init__(self, columns: Sequence[Column], max_rows: int):
        names = [column.name for column in columns]
        if len(set(names)) != len(names):
            raise ValueError(f"a column is declared twice in {names}")
        self.columns = tuple(columns)
        self.max_rows = max_rows
        self.declared = {column.name: column for column in self.columns}

    def encode(self, item: Any) -> tuple[dict[str, np.ndarray], Any]:
        raise NotImplementedError

    def decode(self, worker_id: int, columns: dict[str, np.ndarray], meta: Any) -> Any:
        raise NotImplementedError

    def encode_checked(self, item: Any) -> tuple[dict[str, np.ndarray], Any]:
        """``encode`` then ``checked``: what every transport sends of a sender's item."""
        columns, meta = self.encode(item)
        self.checked(columns)
        return columns, meta

    def checked(self, columns: Mapping[str, np.ndarray]) -> Mapping[str, np.ndarray]:
        """``columns`` when they are exactly the declared ones, each of its declared rows and of
        one length, at most ``max_rows``; PayloadError otherwise."""
        declared = self.declared
        if set(columns) != set(declared):
            missing, undeclared = sorted(set(declared) - set(columns)), sorted(set(columns) - set(declared))
            raise PayloadError(f"a worker's message has undeclared columns {undeclared} and lacks declared "
                               f"columns {missing}")
        lengths = {len(array) for array in columns.values()}
        if len(lengths) > 1:
            raise PayloadError(f"a worker's message has columns of different lengths {sorted(lengths)}")
        if lengths and max(lengths) > self.max_rows:
            raise PayloadError(f"a worker's message has {max(lengths)} rows; the algorithm declared at most "
                               f"{self.max_rows}")
        for name, array in columns.items():
            declared[name].check(array)
        return columns


def concatenate_columns(parts: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The rows of ``parts`` (each with the same columns) as one set of columns."""
    return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
