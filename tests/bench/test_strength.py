"""bench.strength's engine specs: a network spec with weights or search settings makes the
network engine with them (it once went to the engine registry, which takes neither, and
failed), and other options still reach the registry."""

from __future__ import annotations

import pytest

from bench import strength
from engines.network import WEIGHTS
from engines.neural import LEVELS, NetworkEngine


@pytest.fixture(autouse=True)
def fresh():
    strength._KEPT.clear()
    yield
    strength._KEPT.clear()


def test_a_spec_with_search_settings_plays_them():
    spec = strength.parse_spec("network:3::k=4,margin=0.2,k2=2,margin2=0.05", 7)
    assert spec == ("network", 3, 7, {"search": {"k": 4, "margin": 0.2, "k2": 2, "margin2": 0.05}})
    engine = strength._engine(spec, "long")
    assert isinstance(engine, NetworkEngine)
    assert (engine.params.k, engine.params.margin) == (4, 0.2)
    assert (engine.params.k2, engine.params.margin2) == (2, 0.05)
    assert engine.params.noise == LEVELS[3].noise  # the rest is the level's


def test_a_spec_with_weights_and_the_previous_search():
    spec = strength.parse_spec(f"network:3:{WEIGHTS}:previous", 7)
    engine = strength._engine(spec, "long")
    assert engine.given is not None and engine.net is engine.given  # its own weights
    for field, value in strength.PREVIOUS_SEARCH.items():
        assert getattr(engine.params, field) == value


def test_a_plain_spec_and_a_registry_option():
    assert strength._engine(strength.parse_spec("network:2", 7), "long").params == LEVELS[2]
    with pytest.raises(ValueError, match="no --ply"):  # the option reached the registry
        strength._engine(("greedy", None, 7, {"ply": 1}), "long")


def test_a_win_rates_interval_stays_a_proportions():
    """Five pairs won 2-0 and one split printed 91.7% [75.3%, 108.0%]; a sweep printed
    100.0% [100.0%, 100.0%]. The interval stays within [0, 1], and where the pairs do not
    vary it is Wilson's over the games."""
    from engines.arena import rate_ci
    from nardy.stats import wilson

    rate, lo, hi = rate_ci([1.0] * 5 + [0.5])
    assert rate == pytest.approx(11 / 12) and 0 < lo < rate < hi == 1.0
    assert rate_ci([1.0] * 4) == (1.0, wilson(8, 8)[0], 1.0) and wilson(8, 8)[0] < 0.7
    assert rate_ci([0.5]) == (0.5, *wilson(1, 2))
