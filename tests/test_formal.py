"""The credit-loop proof (formal/credit_proof.py, `make formal`) as one regression item, so
that it runs beside the simulations: the proof holds, and its off-by-one mutant is rejected."""
from __future__ import annotations

from formal import credit_proof


def test_credit_loop_proved_and_the_mutant_rejected(tmp_path, capsys):
    rc = credit_proof.main(["--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "PASS" in out and "FAIL (counterexample)" in out, out
