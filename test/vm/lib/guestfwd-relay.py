#!/usr/bin/env python3
"""One guest connection to a host TCP port, over stdin/stdout (Python standard library only).

QEMU's user networking runs this for every TCP connection the guest opens to a `guestfwd`
address (`guestfwd=tcp:IP:PORT-cmd:guestfwd-relay.py HOSTPORT`): the guest's bytes arrive on
stdin and our stdout goes back to the guest. It connects to 127.0.0.1:HOSTPORT (the fake API
server) and copies both ways until either side closes. A `tcp:` chardev instead of `cmd:`
would be connected once when QEMU starts and carry a single connection, too few for kubectl
and the agent's watches.
"""

import os
import selectors
import socket
import sys


def main():
    port = int(sys.argv[1])
    sock = socket.create_connection(("127.0.0.1", port))
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(stdin, selectors.EVENT_READ, "guest")
    sel.register(sock, selectors.EVENT_READ, "host")
    open_sides = 2
    while open_sides:
        for key, _ in sel.select():
            if key.data == "guest":
                data = os.read(stdin, 65536)
                if not data:
                    sel.unregister(stdin)
                    sock.shutdown(socket.SHUT_WR)
                    open_sides -= 1
                else:
                    sock.sendall(data)
            else:
                data = sock.recv(65536)
                if not data:
                    return 0
                view = memoryview(data)
                while view:
                    n = os.write(stdout, view)
                    view = view[n:]
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, KeyboardInterrupt):
        sys.exit(1)
