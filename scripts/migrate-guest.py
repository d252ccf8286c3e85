#!/usr/bin/env python3
"""Run a guest's QEMU, snapshot and restore it, and live-migrate it to new QEMUs.

scripts/run-guest.sh --migrate N starts the guest through this script. It
starts QEMU (its arguments follow "--") with the guest's console on a
socket whose bytes it copies to stdout, so the console goes on in one piece
whichever QEMU the guest runs in. Every INTERVAL seconds, N times, it starts
a second QEMU with the same arguments waiting for an incoming migration on
a socket, migrates the running guest to it over QMP (while the guest's GPU
work is in flight), waits for the migration to complete, quits the first
QEMU and goes on with the second. The guest's screen channel (ttyS1)
follows it: each QEMU connects to DIR/qemu-agent.sock, the screen agent
to DIR/agent.sock, and DIR/qmp.sock leads to the current QEMU's second
QMP socket. After each migration it prints

  PAGODA-MIGRATION K total MS downtime MS setup MS ram-transferred MIB
                   dirty-syncs N pages-sent-again N

on stdout (QMP's query-migrate figures), between console lines.

With --snapshots K it first, K times, every INTERVAL seconds, stops the
guest, saves a snapshot (savevm, into a qcow2 image it makes through QMP
in DIR), lets the guest run on for 2 s, then stops it and loads the
snapshot (loadvm) and lets it go on from there: the guest's GPU work in
flight at the snapshot runs again from the snapshot's state. What the
guest printed between the save and the load is dropped from the console,
as it never happened for the guest. It prints

  PAGODA-SNAPSHOT K saved and loaded, B console bytes of the discarded run

It exits with the status of the last QEMU once the guest powers off, or
3 when a migration or a snapshot fails.

  usage: migrate-guest.py --count N [--snapshots K] --interval S --rundir DIR
                          -- QEMU ARGS...
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


def listen(path):
    """A Unix socket server at path."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(2)
    return server


class Console:
    """The guest's ttyS0: a socket each QEMU connects to in turn, copied to stdout.

    While held, what arrives is kept aside instead: dropped, or let through.
    """

    def __init__(self, path):
        self.server = listen(path)
        self.lock = threading.Lock()
        self.held = None
        threading.Thread(target=self.serve, daemon=True).start()

    def hold(self):
        with self.lock:
            self.held = bytearray()

    def drop(self):
        """Stop holding; return how many bytes were held (and dropped)."""
        with self.lock:
            n, self.held = len(self.held), None
        return n

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
            if self.held is not None:
                self.held += data
                return
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()

    def note(self, text):
        """A line of the driver's own, never held."""
        with self.lock:
            sys.stdout.buffer.write(text.encode())
            sys.stdout.buffer.flush()


class AgentChannel:
    """The guest's ttyS1 across QEMUs: each QEMU connects to one socket, the
    screen agent (scripts/guest-agent.py) to another; what the guest sends
    goes to the agent, the agent's replies to the QEMU the guest runs in."""

    def __init__(self, rundir):
        self.lock = threading.Lock()
        self.qemus = []
        self.current = 0
        self.agent = None
        self.qemu_server = listen(os.path.join(rundir, "qemu-agent.sock"))
        self.agent_server = listen(os.path.join(rundir, "agent.sock"))
        threading.Thread(target=self.accept_qemus, daemon=True).start()
        threading.Thread(target=self.accept_agent, daemon=True).start()

    def accept_qemus(self):
        while True:
            conn, _ = self.qemu_server.accept()
            with self.lock:
                self.qemus.append(conn)
            threading.Thread(target=self.to_agent, args=(conn,), daemon=True).start()

    def to_agent(self, conn):
        while True:
            data = conn.recv(4096)
            if not data:
                return
            with self.lock:
                agent = self.agent
            if agent:
                agent.sendall(data)

    def accept_agent(self):
        self.agent, _ = self.agent_server.accept()
        while True:
            data = self.agent.recv(4096)
            if not data:
                return
            with self.lock:
                qemu = self.qemus[self.current] if self.current < len(self.qemus) else None
            if qemu:
                qemu.sendall(data)

    def move_to(self, index):
        """The guest runs in QEMU index now."""
        with self.lock:
            self.current = index


def point_agent_qmp(rundir, index):
    """The agent's QMP socket (a stable name) now leads to QEMU index's."""
    link = os.path.join(rundir, "qmp.sock")
    tmp = link + ".new"
    os.symlink(os.path.join(rundir, "agent-qmp-%d.sock" % index), tmp)
    os.replace(tmp, link)


def start_qemu(args, rundir, index, incoming):
    """QEMU number index, with its own QMP sockets, its console and screen
    channel on the shared ones."""
    qmp_path = os.path.join(rundir, "qmp-%d.sock" % index)
    extra = ["-qmp", "unix:%s,server=on,wait=off" % qmp_path,
             "-qmp", "unix:%s,server=on,wait=off" % os.path.join(rundir,
                                                               "agent-qmp-%d.sock" % index),
             "-chardev", "socket,id=con,path=%s,server=off" % os.path.join(rundir, "con.sock"),
             "-serial", "chardev:con",
             "-chardev", "socket,id=agent,path=%s,server=off" % os.path.join(rundir,
                                                                              "qemu-agent.sock"),
             "-serial", "chardev:agent"]
    if incoming:
        extra += ["-incoming", "unix:%s" % os.path.join(rundir, "mig-%d.sock" % index)]
    # the console chardev must be the first serial port: it goes first
    proc = subprocess.Popen(args[:1] + extra + args[1:], stdin=subprocess.DEVNULL,
                            stdout=sys.stderr, stderr=sys.stderr)
    return proc, qmp_path


def migrate(src_conn, rundir, index):
    """Migrate the running guest into QEMU index (waiting for it); its figures."""
    uri = "unix:%s" % os.path.join(rundir, "mig-%d.sock" % index)
    # a local socket: not QEMU's default 128 MiB/s
    qmp(src_conn, "migrate-set-parameters", **{"max-bandwidth": 16 << 30})
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


def hmp(conn, command):
    """An HMP command through QMP; raise if it printed an error."""
    out = qmp(conn, "human-monitor-command", **{"command-line": command})
    if out and ("rror" in out or "fail" in out):
        raise RuntimeError("%s: %s" % (command, out.strip()))


def wait_job(conn, job):
    """Wait for a QMP job to conclude, then dismiss it."""
    deadline = time.time() + 60
    while True:
        jobs = {j["id"]: j for j in qmp(conn, "query-jobs")}
        if jobs.get(job, {}).get("status") == "concluded":
            if jobs[job].get("error"):
                raise RuntimeError("%s: %s" % (job, jobs[job]["error"]))
            qmp(conn, "job-dismiss", id=job)
            return
        if time.time() > deadline:
            raise RuntimeError("%s did not conclude" % job)
        time.sleep(0.05)


def snapshot_image(conn, rundir):
    """A qcow2 node ("snapshots") savevm keeps the VM's state in, made through QMP."""
    path = os.path.join(rundir, "snapshots.qcow2")
    qmp(conn, "blockdev-create", **{"job-id": "make-file",
                                    "options": {"driver": "file", "filename": path, "size": 0}})
    wait_job(conn, "make-file")
    qmp(conn, "blockdev-add", driver="file", filename=path, **{"node-name": "snapshot-file"})
    qmp(conn, "blockdev-create", **{"job-id": "make-qcow2",
                                    "options": {"driver": "qcow2", "file": "snapshot-file",
                                                "size": 64 << 20}})
    wait_job(conn, "make-qcow2")
    qmp(conn, "blockdev-add", driver="qcow2", file="snapshot-file",
        **{"node-name": "snapshots"})


def snapshot_cycle(console, conn, k, run_on):
    """Save a snapshot, let the guest run on, load it back: the run on never happened."""
    qmp(conn, "stop")
    time.sleep(0.2)  # what the guest printed before it stopped reaches the console
    hmp(conn, "savevm pagoda-%d" % k)
    console.hold()
    qmp(conn, "cont")
    time.sleep(run_on)
    qmp(conn, "stop")
    hmp(conn, "loadvm pagoda-%d" % k)
    dropped = console.drop()
    console.note("PAGODA-SNAPSHOT %d saved and loaded, %d console bytes of the discarded run\n"
                 % (k, dropped))
    qmp(conn, "cont")


def wait_running(proc, seconds):
    """Sleep while QEMU runs; False when it ended first."""
    end = time.time() + seconds
    while time.time() < end and proc.poll() is None:
        time.sleep(0.1)
    return proc.poll() is None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--snapshots", type=int, default=0)
    parser.add_argument("--interval", type=float, required=True)
    parser.add_argument("--rundir", required=True)
    parser.add_argument("qemu", nargs=argparse.REMAINDER)
    opts = parser.parse_args()
    args = opts.qemu[1:] if opts.qemu and opts.qemu[0] == "--" else opts.qemu
    console = Console(os.path.join(opts.rundir, "con.sock"))
    agent = AgentChannel(opts.rundir)
    procs = []

    def kill_all():
        for p in procs:
            if p.poll() is None:
                p.kill()

    def on_sigterm(*_):
        kill_all()
        sys.exit(124)
    signal.signal(signal.SIGTERM, on_sigterm)

    proc, qmp_path = start_qemu(args, opts.rundir, 0, False)
    procs.append(proc)
    point_agent_qmp(opts.rundir, 0)
    sock, conn = qmp_connect(qmp_path, time.time() + 60)
    try:
        if opts.snapshots:
            snapshot_image(conn, opts.rundir)
        for k in range(1, opts.snapshots + 1):
            if not wait_running(proc, opts.interval):
                break
            snapshot_cycle(console, conn, k, 2)
    except (RuntimeError, OSError, ValueError) as err:
        console.note("PAGODA-SNAPSHOT failed: %s\n" % err)
        kill_all()
        return 3
    for k in range(1, opts.count + 1):
        if not wait_running(proc, opts.interval):
            break  # the guest finished first
        dst, dst_qmp = start_qemu(args, opts.rundir, k, True)
        procs.append(dst)
        dst_sock, dst_conn = qmp_connect(dst_qmp, time.time() + 60)
        try:
            info = migrate(conn, opts.rundir, k)
        except (RuntimeError, OSError, ValueError) as err:
            if proc.poll() is not None:
                # the guest powered off meanwhile: no migration to finish
                console.note("PAGODA-MIGRATION %d not made: the guest ended first\n" % k)
                dst.kill()
                return proc.returncode
            console.note("PAGODA-MIGRATION %d failed: %s\n" % (k, err))
            kill_all()
            return 3
        ram = info.get("ram", {})
        console.note(("PAGODA-MIGRATION %d total %d downtime %d setup %d ram-transferred %d "
                       "dirty-syncs %d pages-sent-again %d\n"
                       % (k, info.get("total-time", -1), info.get("downtime", -1),
                          info.get("setup-time", -1),
                          ram.get("transferred", 0) // (1 << 20),
                          ram.get("dirty-sync-count", 0),
                          max(0, ram.get("normal", 0) + ram.get("duplicate", 0) -
                              ram.get("total", 0) // max(1, ram.get("page-size", 4096)))
                          )))
        agent.move_to(k)
        point_agent_qmp(opts.rundir, k)
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
