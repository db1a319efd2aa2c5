"""The notebook runner's stall, reproduced without a kernel.

nbclient waits for a cell's execute_reply with ``await shell_channel.get_msg(timeout)`` (a
``zmq.asyncio`` poll on the shell socket) while its Output-widget mimic may send a comm_msg on that
same socket (``shell_channel.send``: jupyter_client's Session.send, through a blocking shadow of
the socket). When the reply is already in the socket at that moment, libzmq's send consumes the
socket's edge-triggered wake-up and the poll only sees the reply at its timeout: nbmake's whole
per-cell timeout, both processes idle. The root conftest.py makes ``send`` re-check the socket."""
from __future__ import annotations

import asyncio
import time

import pytest

zmq = pytest.importorskip("zmq")
pytest.importorskip("jupyter_client")
import zmq.asyncio  # noqa: E402
from jupyter_client.channels import AsyncZMQSocketChannel  # noqa: E402
from jupyter_client.session import Session  # noqa: E402

POLL_TIMEOUT = 5.0  # seconds: what a stalled get_msg costs


def test_conftest_patches_the_channel():
    assert getattr(AsyncZMQSocketChannel.send, "wakes_pending_polls", False)


def test_reply_that_arrives_before_a_send_is_not_stranded():
    async def scenario():
        session = Session(key=b"test")
        kernel = zmq.Context.instance().socket(zmq.ROUTER)  # stands in for the kernel's shell socket
        actx = zmq.asyncio.Context()
        client = actx.socket(zmq.DEALER)
        try:
            port = kernel.bind_to_random_port("tcp://127.0.0.1")
            client.connect(f"tcp://127.0.0.1:{port}")
            shell = AsyncZMQSocketChannel(client, session)
            request = session.msg("execute_request", {"code": ""})
            shell.send(request)
            idents, frames = session.feed_identities(kernel.recv_multipart())
            delays = []
            for _ in range(3):
                waiting = asyncio.ensure_future(shell.get_msg(timeout=POLL_TIMEOUT))
                await asyncio.sleep(0.05)  # the client idles in epoll, its poll registered
                t0 = time.monotonic()
                session.send(kernel, "execute_reply", {"status": "ok"}, parent=request, ident=idents)
                time.sleep(0.05)  # the reply lands while the client is busy (no turn of the loop)
                shell.send(session.msg("comm_msg", {"comm_id": "x", "data": {}}))  # the widget's echo
                reply = await waiting
                delays.append(time.monotonic() - t0)
                assert reply["msg_type"] == "execute_reply"
                kernel.recv_multipart()  # the comm_msg
            assert max(delays) < 1.0, f"execute_reply seen only after {delays} s (the poll's timeout)"
        finally:
            client.close(linger=0)
            kernel.close(linger=0)
            actx.term()

    asyncio.run(scenario())
