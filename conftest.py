"""Loaded by pytest for every test path, the notebooks' too (nbmake runs them through nbclient)."""


# nbmake runs the notebooks in pytest's process with nbclient. A widget's output (the profiler's
# plot in an ipywidgets Output) makes nbclient's Output-widget mimic send a comm_msg on the shell
# channel while it awaits the cell's execute_reply there (`await shell_socket.poll(timeout)`).
# jupyter_client's Session.send writes through a blocking shadow of that zmq.asyncio socket, so
# pyzmq does not look at the socket again after the send (its own sends do). If the reply landed
# just before, libzmq's send consumes the socket's edge-triggered ZMQ_FD wake-up and the reply
# sits unread until the poll times out, i.e. for nbmake's whole per-cell timeout, with client and
# kernel idle in epoll (jupyter/jupyter_client#1059, jupyter/nbclient#312; pyzmq fixed the same
# starvation for its own sends in zeromq/pyzmq#1208). Reading zmq.EVENTS through the asyncio
# socket after each send is pyzmq's way to re-check it: a pending poll sees the reply at once.
def _wake_pending_polls_after_send():
    try:
        import zmq
        from jupyter_client.channels import AsyncZMQSocketChannel
    except ImportError:  # no notebook runner installed
        return

    send = AsyncZMQSocketChannel.send
    if getattr(send, "wakes_pending_polls", False):
        return

    def send_and_wake(self, msg):
        result = send(self, msg)
        if self.socket is not None and not self.socket.closed:
            self.socket.get(zmq.EVENTS)  # zmq.asyncio schedules any pending poll/recv handler
        return result

    send_and_wake.wakes_pending_polls = True
    AsyncZMQSocketChannel.send = send_and_wake


_wake_pending_polls_after_send()
