"""Name -> edit operator class registry (timm style: ``register_operator``, ``get_operator``,
``list_operators``), as :mod:`tags.mining.registry` for miners.

May import: ``base``, ``evidence`` (operator modules import it to register themselves).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tags.core.errors import UserError
from tags.negatives.operators.base import EditOperator
from tags.negatives.operators.evidence import SceneEvidence

__all__ = [
    "UnknownOperatorError",
    "get_operator",
    "list_operators",
    "operator_class",
    "register_operator",
    "unregister_operator",
]

_OPERATORS: dict[str, type[EditOperator]] = {}
#: Each operator's rank: the planner runs operators by (rank, registration order).
_RANKS: dict[str, int] = {}
T = TypeVar("T", bound=type[EditOperator])

#: The rank of an operator registered without one: after every built-in operator.
DEFAULT_RANK = 1000


class UnknownOperatorError(UserError, KeyError):
    """An operator name nothing registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def register_operator(name: str, rank: int = DEFAULT_RANK) -> Callable[[T], T]:
    """Class decorator registering an edit operator under ``name`` (lower case, unique);
    the planner runs operators in increasing ``rank`` (built-ins: 10 to 80)."""

    def wrap(cls: T) -> T:
        key = name.lower()
        if key in _OPERATORS and _OPERATORS[key] is not cls:
            raise ValueError(
                f"edit operator {key!r} is already registered by {_OPERATORS[key].__name__}"
            )
        _OPERATORS[key] = cls
        _RANKS[key] = rank
        cls.name = key
        return cls

    return wrap


def unregister_operator(name: str) -> None:
    """Remove an operator from the registry (for tests and plug-ins that undo themselves)."""
    _OPERATORS.pop(name.lower(), None)
    _RANKS.pop(name.lower(), None)


def list_operators() -> list[str]:
    """Every registered operator's name, in the order the planner runs them."""
    order = {name: i for i, name in enumerate(_OPERATORS)}
    return sorted(_OPERATORS, key=lambda n: (_RANKS[n], order[n]))


def operator_class(name: str) -> type[EditOperator]:
    """The class registered under ``name``."""
    try:
        return _OPERATORS[name.lower()]
    except KeyError:
        raise UnknownOperatorError(
            f"unknown edit operator {name!r}; registered: {', '.join(list_operators())}"
        ) from None


def get_operator(name: str, evidence: SceneEvidence) -> EditOperator:
    """Instantiate the operator registered under ``name`` over the shared ``evidence``."""
    return operator_class(name)(evidence)
