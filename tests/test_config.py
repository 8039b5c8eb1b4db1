import json

import pytest

from contracts.config import CONFIGS, ConfigError, SwitchConfig, get_config


@pytest.mark.parametrize("name", list(CONFIGS))
def test_json_round_trip(name):
    c = CONFIGS[name]
    assert SwitchConfig.from_json(c.to_json()) == c
    assert json.loads(c.to_json())["name"] == name


@pytest.mark.parametrize("field,value", [
    ("ports", 1), ("ports", 65), ("data_width", 96), ("data_vls", 3), ("mtu", 1500),
    ("buffer_blocks_per_vl", 3), ("buffer_blocks_per_vl", 5000), ("vl15_buffer_blocks", 1),
    ("fc_period", 2), ("islip_iterations", 0), ("islip_iterations", 5), ("lft_entries", 100),
    ("lft_entries", 0x10000), ("ext_lid_bits", 6), ("ext_lid_bits", -1),
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


def test_extended_lid_index():
    """Extended LIDs: page p of 64 Ki LIDs at LFT entries p * lft_entries ..; reserved,
    multicast and permissive low bits, LIDs beyond a page's entries and pages beyond
    ext_lid_bits have no entry."""
    c = SwitchConfig(lft_entries=0x10000, ext_lid_bits=2)
    assert (c.lid_bits, c.lft_size) == (18, 0x40000)
    assert c.lft_index(0x0001) == 1 and c.lft_index(0x3BFFF) == 3 * 0x10000 + 0xBFFF
    assert [c.lft_index(x) for x in (0, 0x10000, 0x1C000, 0x2FFFF, 0x40001)] == [None] * 5
    small = CONFIGS["small-ext"]
    assert small.lft_size == 128 and small.lft_index(0x10005) == 69 and small.lft_index(0x10040) is None
    assert CONFIGS["small"].lft_index(0x10005) is None and CONFIGS["small"].lft_index(5) == 5
    SwitchConfig(lft_entries=0x8000)


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
    from verif.env.switch_env import OUTCOME, MixedTraffic
    assert set(OUTCOME) == set(MixedTraffic.KINDS)
