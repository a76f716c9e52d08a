"""The shared range checks of settings (`rllib_synpo.utils.checks`), Ray-free."""

import pytest

from rllib_synpo.adaptation import AdaptConfig, AdaptError
from rllib_synpo.utils.checks import (
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    POSITIVE_NUMBER,
    PROBABILITY,
    bad_setting,
    check_settings,
    optional,
)


@pytest.mark.parametrize(
    "rule, good, bad",
    [
        (POSITIVE_NUMBER, [1e-9, 3], [0, -1.0, "1", None, True]),
        (PROBABILITY, [0, 0.5, 1], [-0.1, 1.01, "0.5", False]),
        (POSITIVE_INT, [1, 256], [0, 2.0, "8", True]),
        (NON_NEGATIVE_INT, [0, 7], [-1, 0.0, False]),
        (optional(POSITIVE_INT), [None, 3], [0, 1.5]),
    ],
)
def test_rules_accept_and_refuse(rule, good, bad):
    _, ok = rule
    assert all(ok(v) for v in good)
    assert not any(ok(v) for v in bad)


def test_the_first_bad_setting_is_named_with_its_rule_and_value():
    rules = {POSITIVE_INT: ("batch", "workers"), PROBABILITY: ("epsilon",)}
    check_settings({"batch": 8, "workers": 2, "epsilon": 0.1}, rules)
    assert bad_setting({"batch": 8, "workers": 2, "epsilon": 0.1}, rules) is None
    assert (
        bad_setting({"batch": 8, "workers": 0, "epsilon": 2}, rules, quote="`")
        == "`workers` must be an integer >= 1, got 0"
    )
    with pytest.raises(ValueError, match=r"^epsilon must be a probability in \[0, 1\], got 2$"):
        check_settings({"batch": 8, "workers": 2, "epsilon": 2}, rules)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("lr", 0, "lr must be a number > 0, got 0"),
        ("batch_size", True, "batch_size must be an integer >= 1, got True"),
        ("l3", "0.1", "l3 must be a number >= 0, got '0.1'"),
    ],
)
def test_adaptation_settings_are_checked(field, value, message):
    with pytest.raises(AdaptError) as err:
        AdaptConfig(setting=2, **{field: value}).check()
    assert str(err.value) == message
