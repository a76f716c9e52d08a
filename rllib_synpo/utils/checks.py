"""Range checks of numeric settings, shared by the configs, the adaptation options and the network
factory (Ray-free): a bad value is refused up front with its name, what was expected and the
value, instead of failing deep in a run or running without meaning (a zero batch, an epsilon of 2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from synpo_envs.checks import is_int  # the one integer test of the project, shared with the envs

# What a setting must be, as the error words it, and the test of a value.
Rule = tuple[str, Callable[[object], bool]]


def is_number(value: object) -> bool:
    return is_int(value) or isinstance(value, float)


POSITIVE_NUMBER: Rule = ("a number > 0", lambda v: is_number(v) and v > 0)
NON_NEGATIVE_NUMBER: Rule = ("a number >= 0", lambda v: is_number(v) and v >= 0)
PROBABILITY: Rule = ("a probability in [0, 1]", lambda v: is_number(v) and 0 <= v <= 1)
DROPOUT: Rule = ("a number in [0, 1)", lambda v: is_number(v) and 0 <= v < 1)
POSITIVE_INT: Rule = ("an integer >= 1", lambda v: is_int(v) and v >= 1)
NON_NEGATIVE_INT: Rule = ("an integer >= 0", lambda v: is_int(v) and v >= 0)
BOOLEAN: Rule = ("true or false", lambda v: isinstance(v, bool))


def _is_schedule(value: object, valid: Callable[[object], bool] = lambda v: v > 0) -> bool:
    """``[[0, v0], [t1, v1], ...]``: increasing timesteps from 0, every value a number that is
    ``valid`` (default: > 0)."""
    points = value if isinstance(value, (list, tuple)) else ()
    if not points or not all(
        isinstance(p, (list, tuple)) and len(p) == 2 and all(map(is_number, p)) for p in points
    ):
        return False
    steps = [p[0] for p in points]
    return steps[0] == 0 and steps == sorted(steps) and all(valid(p[1]) for p in points)


# RLlib's ``lr``: a number or a piecewise-linear schedule. PyYAML reads 2e-05 (no dot) as a
# string, which RLlib would only trip over once a run passes the schedule's last point.
LEARNING_RATE: Rule = (
    (
        "a number > 0 or a schedule [[0, lr], [timestep, lr], ...] of numbers "
        "(YAML reads 2e-05 as a string: write 2.0e-05)"
    ),
    lambda v: (is_number(v) and v > 0) or _is_schedule(v),
)


# A dropout probability that may follow a schedule on the learning-rate schedule's clock.
DROPOUT_OR_SCHEDULE: Rule = (
    f"{DROPOUT[0]} or a schedule [[0, p], [timestep, p], ...] of such numbers",
    lambda v: DROPOUT[1](v) or _is_schedule(v, DROPOUT[1]),
)


def one_of(choices: Iterable[object]) -> Rule:
    """A value among ``choices``."""
    choices = list(choices)
    return f"one of {choices}", lambda v: v in choices


def optional(rule: Rule) -> Rule:
    """``rule``, or None (a setting whose None means "derive it")."""
    expected, ok = rule
    return f"None or {expected}", lambda v: v is None or ok(v)


def bad_setting(
    values: Mapping[str, object], rules: Mapping[Rule, Iterable[str]], *, quote: str = ""
) -> str | None:
    """The error for the first setting named in ``rules`` whose value in ``values`` (a config's
    ``vars``) breaks its rule, or None; ``quote`` wraps the name (RLlib's configs write `name`)."""
    for (expected, ok), names in rules.items():
        for name in names:
            if not ok(values[name]):
                return f"{quote}{name}{quote} must be {expected}, got {values[name]!r}"
    return None


def check_settings(values: Mapping[str, object], rules: Mapping[Rule, Iterable[str]]) -> None:
    """Raise ValueError with `bad_setting`'s error, if any."""
    error = bad_setting(values, rules)
    if error:
        raise ValueError(error)
