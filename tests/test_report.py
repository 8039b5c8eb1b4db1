"""tools/report.py: the computed FEC share and the argument errors (the measured part, rx sop
-> tx sop, is the same run as tb/test_switch.py::uncontended_latency)."""
import pytest

from tools.report import main, phy_budget


def test_fec_accumulation_is_two_codewords_at_the_port_rate():
    rows = {p["share"]: p for p in phy_budget()}
    fec = rows["RS-FEC receive: codeword accumulation"]
    assert fec["kind"] == "computed"
    assert fec["ns"] == pytest.approx(2 * 544 * 10 / 425.0, abs=0.01)      # 25.6 ns
    assert all(p["kind"] in ("computed", "assumed") and p["source"] for p in rows.values())


def test_unknown_config_is_named(capsys):
    with pytest.raises(SystemExit):
        main(["--configs", "nonesuch"])
    assert "nonesuch" in capsys.readouterr().err
