"""Calling a user's callback method with the keyword arguments it takes. RLlib's callbacks
take keyword-only arguments and ``**kwargs`` (``on_train_result(*, algorithm, result,
**kwargs)``), this project's first ones took positions (``on_train_result(self, trainer,
result)``): each method gets every keyword where it takes ``**kwargs``, the ones it names
where it names all it needs, and the positions otherwise."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


@functools.cache
def _accepts(function: Callable[..., Any]) -> tuple[bool, frozenset[str], frozenset[str]]:
    """(takes **kwargs, the names it takes, the names it needs) of a plain function."""
    parameters = list(inspect.signature(function).parameters.values())[1:]  # without self
    names = frozenset(parameter.name for parameter in parameters if parameter.kind in NAMED)
    needed = frozenset(parameter.name for parameter in parameters
                       if parameter.kind in NAMED and parameter.default is inspect.Parameter.empty)
    return any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters), names, needed


def call_hook(method: Callable[..., Any], keywords: Mapping[str, Any], positional: Sequence[Any] = ()) -> Any:
    """``method`` (a bound method) called with the ``keywords`` it takes, or with
    ``positional`` where it does not name what it needs among them."""
    function = getattr(method, "__func__", None)
    if function is None:  # not a bound method (a function set on the instance): as it is
        return method(*positional)
    takes_all, names, needed = _accepts(function)
    if takes_all and not (needed - keywords.keys()):
        return method(**keywords)
    chosen = {name: value for name, value in keywords.items() if name in names}
    if needed <= chosen.keys():
        return method(**chosen)
    return method(*positional)
