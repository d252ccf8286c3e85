#!/usr/bin/env python3
"""Run a guest's QEMU and live-migrate it, running, to a new QEMU, again and again.

scripts/run-guest.sh --migrate N starts the guest through this script. It
starts QEMU (its arguments follow "--") with the guest's console on a
socket whose bytes it copies to stdout, so the console goes on in one piece
whichever QEMU the guest runs in. Every INTERVAL seconds, N times, it starts
a second QEMU with the same arguments waiting for an incoming migration on
a socket, migrates the running guest to it over QMP (while the guest's GPU
work is in flight), waits for the migration to complete, quits the first
QEMU and goes on with the second. After each migration it prints

  PAGODA-MIGRATION K total MS downtime MS setup MS ram-transferred MIB
                   dirty-syncs N pages-sent-again N

on stdout (QMP's query-migrate figures), between console lines. It exits
with the status of the last QEMU once the guest powers off, or 3 when a
migration fails.

  usage: migrate-guest.py --count N --interval S --rundir DIR -- QEMU ARGS...
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time


def qmp_connect(path, deadline):
    """A QMP connection to the socket at path, past the capabilities handshake."""
    while True:
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(path)
            break
        except OSError:
            sock.close()
            if time.time() > deadline:
                raise
            time.sleep(0.05)
    conn = sock.makefile("rw")
    json.loads(conn.readline())  # greeting
    qmp(conn, "qmp_capabilities")
    return sock, conn


def qmp(conn, command, **arguments):
    """Run a QMP command; its return value, events skipped; raise on an error."""
    msg = {"execute": command}
    if arguments:
        msg["arguments"] = arguments
    conn.write(json.dumps(msg) + "\n")
    conn.flush()
    while True:
        reply = json.loads(conn.readline())
        if "event" in reply:
            continue
        if "error" in reply:
            raise RuntimeError("%s: %s" % (command, reply["error"]["desc"]))
        return reply.get("return")


class Console:
    """The guest's ttyS0: a socket each QEMU connects to in turn, copied to stdout."""

    def __init__(self, path):
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(2)
        self.lock = threading.Lock()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            conn, _ = self.server.accept()
            threading.Thread(target=self.copy, args=(conn,), daemon=True).start()

    def copy(self, conn):
        while True:
            data = conn.recv(65536)
            if not data:
                break
            self.write(data)
        conn.close()

    def write(self, data):
        with self.lock:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()


def start_qemu(args, rundir, index, incoming):
    """QEMU number index, with its own QMP socket, its console on the shared one."""
    qmp_path = os.path.join(rundir, "qmp-%d.sock" % index)
    extra = ["-qmp", "unix:%s,server=on,wait=off" % qmp_path,
             "-chardev", "socket,id=con,path=%s,server=off" % os.path.join(rundir, "con.sock"),
             "-serial", "chardev:con"]
    if incoming:
        extra += ["-incoming", "unix:%s" % os.path.join(rundir, "mig-%d.sock" % index)]
    # the console chardev must be the first serial port: it goes first
    proc = subprocess.Popen(args[:1] + extra + args[1:], stdin=subprocess.DEVNULL,
                            stdout=sys.stderr, stderr=sys.stderr)
    return proc, qmp_path


def migrate(console, src_conn, rundir, index):
    """Migrate the running guest into QEMU index (waiting for it); its figures."""
    uri = "unix:%s" % os.path.join(rundir, "mig-%d.sock" % index)
    qmp(src_conn, "migrate", uri=uri)
    deadline = time.time() + 600
    while True:
        info = qmp(src_conn, "query-migrate")
        status = info.get("status")
        if status == "completed":
            return info
        if status in ("failed", "cancelled") or time.time() > deadline:
            raise RuntimeError("migration %d: %s" % (index, info.get("error-desc", status)))
        time.sleep(0.05)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--interval", type=float, required=True)
    parser.add_argument("--rundir", required=True)
    parser.add_argument("qemu", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    args = opts.qemu[1:] if opts.qemu and opts.qemu[0] == "--" else opts.qemu
    console = Console(os.path.join(opts.rundir, "con.sock"))
    procs = []

    def stop(*_):
        for p in procs:
            if p.poll() is None:
                p.kill()
        sys.exit(124)
    signal.signal(signal.SIGTERM, stop)

    proc, qmp_path = start_qemu(args, opts.rundir, 0, False)
    procs.append(proc)
    sock, conn = qmp_connect(qmp_path, time.time() + 60)
    for k in range(1, opts.count + 1):
        end = time.time() + opts.interval
        while time.time() < end and proc.poll() is None:
            time.sleep(0.1)
        if proc.poll() is not None:
            break  # the guest finished first
        dst, dst_qmp = start_qemu(args, opts.rundir, k, True)
        procs.append(dst)
        dst_sock, dst_conn = qmp_connect(dst_qmp, time.time() + 60)
        try:
            info = migrate(console, conn, opts.rundir, k)
        except RuntimeError as err:
            console.write(("PAGODA-MIGRATION %d failed: %s\n" % (k, err)).encode())
            stop()
            return 3
        ram = info.get("ram", {})
        console.write(("PAGODA-MIGRATION %d total %d downtime %d setup %d ram-transferred %d "
                       "dirty-syncs %d pages-sent-again %d\n"
                       % (k, info.get("total-time", -1), info.get("downtime", -1),
                          info.get("setup-time", -1),
                          ram.get("transferred", 0) // (1 << 20),
                          ram.get("dirty-sync-count", 0),
                          ram.get("dirty-sync-missed-zero-copy", 0) +
                          max(0, ram.get("normal", 0) + ram.get("duplicate", 0) -
                              ram.get("total", 0) // max(1, ram.get("page-size", 4096)))
                          )).encode())
        try:
            qmp(conn, "quit")
        except (OSError, ValueError, RuntimeError):
            pass
        sock.close()
        proc.wait()
        proc, sock, conn = dst, dst_sock, dst_conn
    rc = proc.wait()
    # the last console bytes are copied before this returns
    time.sleep(0.2)
    return rc


if __name__ == "__main__":
    sys.exit(main())
