"""A TCP relay to an arbiter for tests of lost connections: it can cut every connection, as
a network drop would, and hold back what the arbiter sends while still passing on what the
client sends (an answer lost on its way back)."""

from __future__ import annotations

import contextlib
import socket
import threading


class Proxy:
    """A TCP relay to the arbiter on ``port`` (loopback), listening on ``address``."""

    def __init__(self, port: int) -> None:
        self.target = ("127.0.0.1", port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.downstream = threading.Event()  # set: the arbiter's bytes are passed on
        self.downstream.set()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            up = socket.create_connection(self.target)
            with self.lock:
                self.sockets += [down, up]
            threading.Thread(target=self._pump, args=(down, up, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, down, self.downstream),
                             daemon=True).start()  # fmt: skip

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket, gate: threading.Event | None) -> None:
        try:
            while data := a.recv(65536):
                if gate is not None:
                    gate.wait()
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def hold(self) -> None:
        """Stop passing on what the arbiter sends (the client's bytes still go through)."""
        self.downstream.clear()

    def cut(self) -> None:
        """Drop every open connection (new ones are still let through), and pass on the
        arbiter's bytes again."""
        with self.lock:
            sockets, self.sockets = self.sockets, []
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        self.downstream.set()

    def close(self) -> None:
        self.listener.close()
        self.cut()
