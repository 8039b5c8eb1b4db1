"""The ibsim protocol's messages (fabric/ibsim_proto.py) against the C structs' layout as
umad2sim and ibsim 0.10 define them (include/ibsim.h: written out here by offset), and the
server's handling of arbitrary datagrams: a fuzz test (hypothesis) that every input is
refused with a ProtocolError or answered, never an exception of another kind."""
from __future__ import annotations

import socket
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from fabric.ibsim_proto import CTL_BYTES, REQ_BYTES, ClientInfo, Ctl, CtlType, ProtocolError, Request, sock_name


def test_layouts_by_offset():
    # struct sim_request: dlid@0 (be16 in a u32), slid@4, dqp@8, sqp@12, status@16 (be32), pad,
    # length@24 (be64), mad@32
    r = Request(dlid=0x1234, slid=0xFFFF, dqp=1, sqp=0x00ABCDEF, status=110, length=256, mad=bytes(range(256)))
    b = r.pack()
    assert len(b) == REQ_BYTES == 288
    assert b[0:4] == b"\x12\x34\x00\x00" and b[4:8] == b"\xff\xff\x00\x00"
    assert b[8:12] == b"\x00\x00\x00\x01" and b[12:16] == b"\x00\xab\xcd\xef"
    assert b[16:20] == (110).to_bytes(4, "big") and b[24:32] == (256).to_bytes(8, "big")
    assert b[32:] == bytes(range(256))
    assert Request.unpack(b) == r
    # struct sim_ctl: magic@0 clientid@4 type@8 len@12 (host order, little-endian), data@16
    c = Ctl(CtlType.GET_PKEYS, clientid=3, length=64, data=b"\x01" * 64)
    b = c.pack()
    assert len(b) == CTL_BYTES == 80
    assert struct.unpack_from("<IIII", b) == (0xDEADBEEF, 3, 10, 64) and b[16:] == b"\x01" * 64
    # struct sim_client_info: id@0 qp@4 issm@8 nodeid[32]@12
    i = ClientInfo(4242, 0, 1, "H7").pack()
    assert struct.unpack_from("<III", i) == (4242, 0, 1) and i[12:14] == b"H7" and len(i) == 44
    assert sock_name("sim", "ctl") == b"\0sim:ctl\0"


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=400))
def test_unpack_never_raises_other_errors(b):
    for f in (Ctl.unpack, Request.unpack):
        try:
            f(b)
        except ProtocolError:
            pass
    if len(b) >= 44:
        try:
            ClientInfo.unpack(b)
        except ProtocolError:
            pass


@settings(max_examples=300, deadline=None)
@given(typ=st.one_of(st.integers(0, 12), st.integers(0, 2**32 - 1)),
       cid=st.one_of(st.integers(0, 2), st.integers(0, 2**32 - 1)), ln=st.integers(0, 64),
       data=st.binary(min_size=64, max_size=64))
def test_server_answers_every_control_message(tmp_path_factory, typ, cid, ln, data):
    """Any well-formed control message to a live server gets an answer (the client blocks on
    it), and the server stays up."""
    from contracts.config import CONFIGS
    from fabric.ibsim_server import Client, IbsimServer
    from fabric.mad_fabric import MadFabric
    from fabric.topology import fat_tree_2
    global _SRV
    if _SRV is None:
        t = fat_tree_2(4)
        _SRV = IbsimServer(MadFabric(t, CONFIGS["small"], "H0", ca_agents=True), f"fuzz-{id(t)}", "H0",
                           log=lambda s: None)
        a, _b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        _SRV.clients[0] = Client(0, 1, "H0", False, a)     # a client in slot 0, so its messages are served
    if typ in (CtlType.CONNECT, CtlType.DISCONNECT):
        return                                  # a CONNECT needs a client socket (tests/test_opensm_server.py)
    m = Ctl(typ, cid, ln, data)
    r = _SRV._ctl(m)
    assert isinstance(r, Ctl) and len(r.pack()) == CTL_BYTES
    assert r.type in (typ, CtlType.ERROR)


_SRV = None
