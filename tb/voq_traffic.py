"""Traffic for the VOQ input buffer tests: unicast and multicast packets within the credit
budget, random reads of non-empty queues and of owed multicast copies (decided from the
model's registered state), random backpressure, and a scoreboard of order and data per
queue (a multicast copy for port o is queue ("mc", o)); credit comes back once per packet.
Without the VCRC in the charge (SwitchConfig.credit_vcrc False) some packets bring the one
flit past their charged blocks that a VCRC can need: it must read back as zeros."""
from contracts.config import BLOCK_BYTES
from contracts.streams import FLIT

__all__ = ["Traffic"]


class Traffic:
    def __init__(self, cfg, rng, npk, model, p_mc: float = 0.25):
        self.cfg, self.rng, self.model = cfg, rng, model
        self.p_mc = p_mc                         # the share of multicast packets
        self.old_seen = 0                        # cycles with a head past the switch lifetime
        self.ending_seen = 0                     # cycles with the reader ending but not done
        self.nb = cfg.bytes_per_flit
        self.used = [0] * cfg.data_vls           # charged blocks outstanding per input VL
        self.todo = npk
        self.wflits = []                         # flits left of the packet being written
        self.sent = {}                           # (o, v) -> list of packets (list of data words)
        self.got = {}
        self.rcur = []
        self.rkeys = []                          # queues of the reads started, in order
        self.voids = 0                           # packets read into the void (bad, complete)

    def new_packet(self):
        cfg, rng = self.cfg, self.rng
        ivl = rng.randrange(cfg.data_vls)
        fpb = BLOCK_BYTES // self.nb
        nflits = rng.choice([1, 2, 3, self.cfg.max_packet_flits // 2, rng.randrange(1, cfg.max_packet_flits),
                             fpb * rng.randrange(1, cfg.max_packet_blocks)])          # whole blocks
        n = -(-nflits * self.nb // BLOCK_BYTES) + rng.randrange(0, 2)        # charged >= used
        n = min(n, cfg.max_packet_blocks)
        extra = not cfg.credit_vcrc and nflits == n * fpb and rng.random() < 0.5
        nflits += extra                           # the flit past the charge (where a VCRC goes)
        if n * fpb + (0 if cfg.credit_vcrc else 1) < nflits or self.used[ivl] + n > cfg.buffer_blocks_per_vl:
            return None
        self.used[ivl] += n
        dest, ovl = rng.randrange(cfg.ports), rng.randrange(cfg.data_vls)
        mcast = int(rng.random() < self.p_mc)
        mask = rng.randrange(1, 1 << cfg.ports) if mcast else 0
        words = [rng.getrandbits(cfg.data_width) for _ in range(nflits)]
        kept = words[:-1] + [0] if extra else words       # the flit past the charge is not kept
        if mcast:
            for o in range(cfg.ports):
                if mask >> o & 1:
                    self.sent.setdefault(("mc", o), []).append(kept)
        else:
            self.sent.setdefault((dest, ovl), []).append(kept)
        self.todo -= 1
        bad = int(rng.random() < 0.15)            # tail marked bad: dropped if complete when read
        ar = {"ar": int(rng.random() < 0.5)} if cfg.adaptive else {}
        return [dict(**ar, data=wd, sop=int(k == 0), eop=int(k == nflits - 1), bytes=self.nb if k < nflits - 1 else
                     rng.randrange(1, self.nb + 1), bad=bad if k == nflits - 1 else 0, dest=dest, ovl=ovl,
                     blocks=n, ivl=ivl, mcast=mcast, mask=mask, sl=rng.randrange(16))
                for k, wd in enumerate(words)]

    def stim(self, cycles):
        rng = self.rng
        for _ in range(cycles):
            inp = {f"w__{k}": 0 for k in ("valid", *FLIT, "dest", "ovl", "blocks",
                                           "ivl", "mcast", "mask", "sl")}
            if not self.wflits and self.todo > 0 and rng.random() < 0.5:
                self.wflits = self.new_packet() or []
            if self.cfg.adaptive:
                inp["w__ar"] = 0
            if self.cfg.lifetimes:                # SwitchLifetime quarter ticks, often enough that
                inp["sw_tick"] = int(rng.random() < 0.05)    # heads grow old (head_old)
            if self.wflits and rng.random() < 0.8:
                f = self.wflits.pop(0)
                inp.update({f"w__{k}": v for k, v in f.items()})
                inp["w__valid"] = 1
            inp.update(rd_start=0, rd_port=0, rd_vl=0, rd_mc=0, rd_void=0, r__ready=int(rng.random() < 0.7),
                       first_ok=int(rng.random() < 0.8))
            # registered status of this cycle (the model's state after the last edge)
            if self.model.cur is None and rng.random() < 0.5:
                ne = [k for k, q in self.model.q.items() if q]
                if self.model.mc:
                    owed = self.model.mc[0].owed
                    ne += [("mc", o) for o in range(self.cfg.ports) if owed >> o & 1]
                if ne:
                    p, x = rng.choice(ne)
                    if p == "mc":       # a copy read into the void now and then (its port went down)
                        inp.update(rd_start=1, rd_port=x, rd_mc=1, rd_vl=rng.randrange(self.cfg.data_vls),
                                   rd_void=int(rng.random() < 0.1))
                    else:
                        inp.update(rd_start=1, rd_port=p, rd_vl=x)
            if self.cfg.failover:
                inp["rd_dest"] = inp["rd_port"]
            yield inp

    def observe(self, i, o):
        assert o["ending"] or not o["done"], "done without ending: the allocation hint would come too late"
        self.ending_seen += o["ending"] and not o["done"]
        if self.cfg.lifetimes:
            self.old_seen += any(o[f"head_old__{p}"] for p in range(self.cfg.ports))
        if i["rd_start"] and not o["busy"]:
            self.rkeys.append(("mc", i["rd_port"]) if i["rd_mc"] else (i["rd_port"], i["rd_vl"]))
        if o["r__valid"] and i["r__ready"]:
            key = self.rkeys[0]
            assert o["r__port"] == key[0 if key[0] != "mc" else 1], "flit tagged with another port"
            self.voids += bool(o["r__void"] and o["r__eop"] and not i["rd_void"])
            self.rcur.append(o["r__data"])
            if o["r__eop"]:
                self.got.setdefault(self.rkeys.pop(0), []).append(self.rcur)
                self.rcur = []
        if o["rel__valid"]:
            self.used[o["rel__ivl"]] -= o["rel__blocks"]
            assert self.used[o["rel__ivl"]] >= 0
