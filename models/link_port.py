"""Golden model of one port's link layer: receive + transmit + port state machine
(docs/link-layer.md), cycle by cycle. Port names follow hw.link.link_port.LinkPort with the
host side under `host` (a prefix can replace it)."""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.counters import LINK_RX_COUNTERS, LINK_TX_COUNTERS, PORT_STATE_COUNTERS
from contracts.streams import FLIT
from models.link_rx import LinkRxModel
from models.link_tx import LinkTxModel
from models.port_state import PortStateModel

__all__ = ["LinkPortModel"]

_BUF = ["valid", *FLIT]
_SAT = 0xFFFFFFFF


class LinkPortModel:
    def __init__(self, cfg: SwitchConfig, host: str = "host__"):
        self.cfg, self.h = cfg, host
        self.rx = LinkRxModel(cfg)
        self.tx = LinkTxModel(cfg)
        self.psm = PortStateModel()
        self.nvl = cfg.data_vls

    def tx_now(self) -> dict:
        """The registered PHY transmit outputs of this cycle (known before inputs)."""
        return dict(self.tx.tx)

    def step(self, inp: dict, rx: dict, tx_ready: int) -> dict:
        """`inp`: host-side inputs (prefixed); `rx`: the PHY receive fields (rx__*);
        returns host-side outputs (prefixed) plus tx__* of this cycle."""
        h, nvl = self.h, self.nvl
        ps = self.psm.step({"up": rx["rx__up"], "req": inp[f"{h}mgmt__req"], "want": inp[f"{h}mgmt__state"],
                            "data_rx": self.rx.data_rx})           # LinkRx's registered output
        state = ps["state"]
        rin = dict(rx)
        rin["state"] = int(state)
        for b in [f"vl__{i}" for i in range(nvl)] + ["vl15"]:
            rin[f"{b}__ready"] = inp[f"{h}{b}__ready"]
        ro = self.rx.step(rin)
        tin = {"state": int(state), "tx__ready": tx_ready}
        for b in [f"src__{i}" for i in range(nvl)] + ["src15"]:
            for k in _BUF:
                tin[f"{b}__{k}"] = inp[f"{h}{b}__{k}"]
        for k in ("valid", "op", "fctbs", "vl", "fccl"):
            tin[f"fc_rx__{k}"] = ro[f"fc_rx__{k}"]
        for i in range(nvl):
            tin[f"local_fccl__{i}"] = ro[f"fccl__{i}"]
        to = self.tx.step(tin)

        out = {f"{h}state": int(state)}
        out.update({f"{h}cport__{n}": ps[n] for n in PORT_STATE_COUNTERS})
        for b in [f"vl__{i}" for i in range(nvl)] + ["vl15"]:
            for k in _BUF:
                out[f"{h}{b}__{k}"] = ro[f"{b}__{k}"]
        for b in [f"src__{i}" for i in range(nvl)] + ["src15"]:
            out[f"{h}{b}__ready"] = to[f"{b}__ready"]
        out.update({f"{h}crx__{n}": ro[f"counters__{n}"] for n in LINK_RX_COUNTERS})
        out.update({f"{h}ctx__{n}": to[f"counters__{n}"] for n in LINK_TX_COUNTERS})
        out.update({k: v for k, v in to.items() if k.startswith("tx__")})

        return out
