"""The switch's congestion control agent (CCA, IBA Annex A10; class 0x21, class version 2,
on QP1): the attributes that set and read the switch's FECN marking (hw/switch/congestion.py,
registers CC_PORT and CC_MARKED; docs/reliability.md, "Congestion control").

  ClassPortInfo                   Get
  CongestionInfo                  Get: no credit starvation (CongestionInfo 0), no
                                  CongestionControlTable (a switch has none)
  CongestionKeyInfo               Get, Set: the CC_Key and its protect bit
  CongestionLog                   Get: LogType 1 (switch); PortMap has bit p for each port that
                                  marked a packet since the last Get, LogEventsCounter the
                                  marks since then (saturating at 65535); the hardware keeps no
                                  per-packet record, so the event list is empty, and it has no
                                  clock the agent can read (CurrentTimeStamp 0)
  SwitchCongestionSetting         Get, Set: Threshold + Packet_Size (ControlMap bit 2) and
                                  Marking_Rate (bit 4) go to every port's CC_PORT; Victim_Mask
                                  (bit 0) is kept and reported (the hardware marks at every
                                  congested port, as if every bit were set); credit starvation
                                  (bits 1 and 3) is not built: a Set that asks for it (a
                                  Credit_Mask bit or CS_Threshold not 0) is refused whole
  SwitchPortCongestionSetting     Get, Set: block b (AttributeModifier) holds ports 32b..32b+31;
                                  a valid element with ControlType 0 sets that port's CC_PORT;
                                  ControlType 1 (credit starvation) refuses the Set whole;
                                  elements for port 0 and ports beyond N are ignored

CC_Key (A10.4.1): while the node's CC_Key is 0 every MAD passes. Otherwise a MAD whose CC_Key
differs is discarded without an answer and counted (CC_KeyViolations, saturating), but a Get
passes while the protect bit is 0. The lease period is kept and reported; it never runs out
(the agent has no timer).
Any other attribute, or Set of a Get-only one, is answered with status "unsupported
method/attribute"; a block beyond the ports, or a refused Set, with "invalid field" and the
request's data.
"""
from __future__ import annotations

from fw.attrs import (
    CLASS_PORT_INFO,
    CONGESTION_INFO,
    CONGESTION_KEY_INFO,
    CONGESTION_LOG_SWITCH,
    SWITCH_CONGESTION_SETTING,
    SWITCH_PORT_CONGESTION_ELEMENT,
)
from fw.hw import SwitchRegs
from fw.mad import CCMAD, CCAttr, Method, Status

__all__ = ["CCA", "CC_CLASS_VERSION"]

CC_CLASS_VERSION = 2
_BLOCK = 32                       # SwitchPortCongestionSetting elements per block
_CM_VICTIM, _CM_CREDIT, _CM_THRESHOLD, _CM_CS, _CM_RATE = 1, 2, 4, 8, 16


def _cc_port(threshold: int, packet_size: int, rate: int) -> int:
    return threshold | packet_size << 8 | rate << 16


class CCA:
    def __init__(self, hw: SwitchRegs):
        self.hw = hw
        self.cfg = hw.cfg
        self.key = {"cc_key": 0, "cc_key_protect_bit": 0, "cc_key_lease_period": 0, "cc_key_violations": 0}
        self.setting = {"victim_mask": 0, "threshold": 0, "packet_size": 0, "marking_rate": 0}
        self.marked_seen = [0] * self.cfg.ports          # CC_MARKED at the last CongestionLog Get
        self.discarded = 0                               # MADs discarded for their CC_Key

    async def _ports(self) -> list[dict]:
        out = []
        for p in range(self.cfg.ports):
            w = await self.hw.read("CC_PORT", p)
            out.append({"threshold": w & 0xF, "packet_size": w >> 8 & 0xFF, "rate": w >> 16 & 0xFFFF})
        return out

    def _key_ok(self, mad: CCMAD) -> bool:
        k = self.key
        if k["cc_key"] == 0 or mad.cc_key == k["cc_key"]:
            return True
        if mad.hdr.method == Method.GET and not k["cc_key_protect_bit"]:
            return True
        k["cc_key_violations"] = min(k["cc_key_violations"] + 1, 0xFFFF)
        self.discarded += 1
        return False

    async def process(self, mad: CCMAD) -> CCMAD | None:
        h = mad.hdr
        if h.method == Method.GET_RESP:
            return None
        if not self._key_ok(mad):
            return None
        rsp = CCMAD(hdr=type(h)(**vars(h)), cc_key=mad.cc_key, log_data=bytes(32), data=bytes(192))
        rsp.hdr.method = Method.GET_RESP
        rsp.hdr.status = 0
        get, a = h.method == Method.GET, h.attr_id
        if h.base_version != 1 or h.class_version != CC_CLASS_VERSION:
            rsp.hdr.status = Status.BAD_VERSION
        elif h.method not in (Method.GET, Method.SET):
            rsp.hdr.status = Status.UNSUP_METHOD
        elif a == CCAttr.CLASS_PORT_INFO and get:
            rsp.data = _pad(CLASS_PORT_INFO.pack({"base_version": 1, "class_version": CC_CLASS_VERSION,
                                                  "resp_time_value": 18}))
        elif a == CCAttr.CONGESTION_INFO and get:
            rsp.data = _pad(CONGESTION_INFO.pack({"congestion_info": 0, "control_table_cap": 0}))
        elif a == CCAttr.CONGESTION_KEY_INFO:
            if not get:
                v = CONGESTION_KEY_INFO.unpack(mad.data)
                self.key.update({k: v[k] for k in ("cc_key", "cc_key_protect_bit", "cc_key_lease_period")})
            rsp.data = _pad(CONGESTION_KEY_INFO.pack(self.key))
        elif a == CCAttr.CONGESTION_LOG and get:
            now = [await self.hw.read("CC_MARKED", p) for p in range(self.cfg.ports)]
            delta = [(x - y) & 0xFFFFFFFF for x, y in zip(now, self.marked_seen, strict=True)]
            self.marked_seen = now
            log = CONGESTION_LOG_SWITCH.pack({
                "log_type": 1, "log_events_counter": min(sum(delta), 0xFFFF),
                "port_map": sum(1 << (p + 1) for p, d in enumerate(delta) if d)})
            whole = log + bytes(224 - len(log))       # from byte 32: log data, then management data
            rsp.log_data, rsp.data = whole[:32], whole[32:]
        elif a == CCAttr.SWITCH_CONGESTION_SETTING:
            if get:
                rsp.data = _pad(SWITCH_CONGESTION_SETTING.pack(self.setting))
            else:
                rsp.data, rsp.hdr.status = await self._set_switch(mad.data)
        elif a == CCAttr.SWITCH_PORT_CONGESTION_SETTING:
            rsp.data, rsp.hdr.status = await self._port_setting(h.attr_mod, None if get else mad.data)
        else:
            rsp.hdr.status = Status.UNSUP_METHOD_ATTR
        if rsp.hdr.status and rsp.hdr.status != Status.BAD_VERSION:
            rsp.log_data, rsp.data = mad.log_data, mad.data
        return rsp

    async def _set_switch(self, data: bytes) -> tuple[bytes, int]:
        v = SWITCH_CONGESTION_SETTING.unpack(data)
        cm = v["control_map"]
        if (cm & _CM_CREDIT and v["credit_mask"]) or (cm & _CM_CS and v["cs_threshold"]):
            return data, Status.INVALID_FIELD                    # credit starvation: not built
        if cm & _CM_VICTIM:
            self.setting["victim_mask"] = v["victim_mask"]
        if cm & _CM_THRESHOLD:
            self.setting.update(threshold=v["threshold"], packet_size=v["packet_size"])
        if cm & _CM_RATE:
            self.setting["marking_rate"] = v["marking_rate"]
        if cm & (_CM_THRESHOLD | _CM_RATE):
            for p, cur in enumerate(await self._ports()):
                if cm & _CM_THRESHOLD:
                    cur.update(threshold=v["threshold"], packet_size=v["packet_size"])
                if cm & _CM_RATE:
                    cur["rate"] = v["marking_rate"]
                await self.hw.write("CC_PORT", p, _cc_port(cur["threshold"], cur["packet_size"], cur["rate"]))
        return _pad(SWITCH_CONGESTION_SETTING.pack(self.setting)), Status.OK

    async def _port_setting(self, block: int, data: bytes | None) -> tuple[bytes, int]:
        n = self.cfg.ports
        if block > n // _BLOCK:
            return data if data is not None else bytes(192), Status.INVALID_FIELD
        first = block * _BLOCK
        if data is not None:
            elems = [SWITCH_PORT_CONGESTION_ELEMENT.unpack(data[4 * k:4 * k + 4]) for k in range(_BLOCK)]
            mine = [(first + k, e) for k, e in enumerate(elems) if e["valid"] and 1 <= first + k <= n]
            if any(e["control_type"] for _p, e in mine):
                return data, Status.INVALID_FIELD                # credit starvation: not built
            for p, e in mine:
                await self.hw.write("CC_PORT", p - 1, _cc_port(e["threshold"], e["packet_size"], e["cong_parm"]))
        ports = await self._ports()
        out = bytearray()
        for k in range(_BLOCK):
            p = first + k
            if 1 <= p <= n:
                c = ports[p - 1]
                out += SWITCH_PORT_CONGESTION_ELEMENT.pack({"valid": 1, "control_type": 0, "threshold": c["threshold"],
                                                            "packet_size": c["packet_size"], "cong_parm": c["rate"]})
            else:
                out += bytes(4)
        return _pad(bytes(out)), Status.OK


def _pad(b: bytes) -> bytes:
    return b + bytes(192 - len(b))
