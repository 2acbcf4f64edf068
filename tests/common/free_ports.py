"""Free TCP ports on loopback for the test drivers' stores and launchers.

A port the kernel hands out for bind(0) comes from the ephemeral range, where any other
test's outgoing connection may take it before the job binds it. torchrun also needs two:
its own store on MASTER_PORT and symmem's on MASTER_PORT + 1. So the ports come from below
the ephemeral range, where the kernel never hands one out by itself, checked free by
binding each."""
import random
import socket


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(count=1):
    """The first of `count` consecutive ports that are free on 127.0.0.1 now."""
    high = _ephemeral_low() - count
    for _ in range(1000):
        first = random.randint(10000, high)
        socks = []
        try:
            for p in range(first, first + count):
                s = socket.socket()
                socks.append(s)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", p))
            return first
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no %d consecutive free ports below %d" % (count, high))
