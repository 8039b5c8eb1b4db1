import json

import pytest

from hw.common.config import CONFIGS, ConfigError, SwitchConfig, get_config


@pytest.mark.parametrize("name", list(CONFIGS))
def test_json_round_trip(name):
    c = CONFIGS[name]
    assert SwitchConfig.from_json(c.to_json()) == c
    assert json.loads(c.to_json())["name"] == name


@pytest.mark.parametrize("field,value", [
    ("ports", 1), ("ports", 65), ("data_width", 96), ("data_vls", 3), ("mtu", 1500),
    ("buffer_blocks_per_vl", 3), ("buffer_blocks_per_vl", 5000), ("vl15_buffer_blocks", 1),
    ("fc_period", 2), ("islip_iterations", 0), ("islip_iterations", 5), ("lft_entries", 100),
    ("mft_entries", 0), ("vlarb_entries", 65), ("name", ""), ("name", "a b"), ("ports", "8"), ("data_width", 64.0),
])
def test_bad_values_name_the_field(field, value):
    with pytest.raises(ConfigError) as e:
        SwitchConfig(**{field: value})
    assert e.value.field == field
    assert f"SwitchConfig.{field}" in str(e.value)


def test_buffer_must_hold_one_mtu_packet():
    with pytest.raises(ConfigError, match="cannot hold one largest packet"):
        SwitchConfig(mtu=4096, buffer_blocks_per_vl=64)
    SwitchConfig(mtu=4096, buffer_blocks_per_vl=67)


def test_unknown_key_rejected():
    d = CONFIGS["small"].to_dict() | {"prots": 4}
    with pytest.raises(ConfigError, match="prots.*unknown field"):
        SwitchConfig.from_dict(d)


def test_frozen():
    with pytest.raises(AttributeError):
        CONFIGS["small"].ports = 9


def test_get_config(tmp_path):
    assert get_config("small") is CONFIGS["small"]
    p = tmp_path / "c.json"
    p.write_text(CONFIGS["w512"].replace(name="mine").to_json())
    assert get_config(str(p)).name == "mine"
    with pytest.raises(ConfigError, match="no config named"):
        get_config("nope")


def test_demo_explains_every_kind_of_packet():
    """The demo's table has an outcome for every kind of packet the mixed traffic sends."""
    from sim.demo import OUTCOME
    from tb.common.switch_env import MixedTraffic
    assert set(OUTCOME) == set(MixedTraffic.KINDS)
