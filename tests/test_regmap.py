"""Register map description: no overlaps, decode round trip, docs/registers.md up to date."""
from pathlib import Path

import pytest

from hw.common.config import CONFIGS
from hw.mgmt.regmap import build_regmap

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_no_overlap_and_decode(name):
    rm = build_regmap(CONFIGS[name])
    spans = sorted((r.offset, r.end, r.name) for r in rm.regs)
    for (_a0, a1, n0), (b0, _b1, n1) in zip(spans, spans[1:], strict=False):
        assert a1 <= b0, f"{n0} overlaps {n1}"
    for r in rm.regs:
        for idx in {0, r.count - 1}:
            assert rm.decode(r.addr(idx)) == (r, idx)
    assert rm.decode(0x24) is None and rm.decode(rm.size) is None and rm.decode(2) is None
    assert (rm.decode(0x20) is None) != CONFIGS[name].lifetimes            # SWITCH_LIFE


def test_field_pack_checks():
    rm = build_regmap(CONFIGS["small"])
    assert rm["VLARB_LOW"].pack(vl=3, weight=200) == 3 | 200 << 8
    with pytest.raises(KeyError, match="no field"):
        rm["VLARB_LOW"].pack(vll=1)
    with pytest.raises(ValueError, match="does not fit"):
        rm["VLARB_LOW"].pack(vl=16)
    with pytest.raises(IndexError):
        rm["PORT_STATE"].addr(4)


def test_docs_registers_md_is_generated():
    from hw.mgmt.regmap import doc_config
    text = build_regmap(doc_config()).markdown() + "\n"
    assert (ROOT / "docs" / "registers.md").read_text() == text, \
        "docs/registers.md is stale: run `python -m hw.mgmt.regmap`"
