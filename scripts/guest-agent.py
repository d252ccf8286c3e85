#!/usr/bin/env python3
"""Host side of the guest's screen channel (scripts/run-guest.sh starts it).

The guest writes one request per line to its second serial port
(/dev/ttyS1, a QEMU socket chardev here) and reads one reply line:

  screendump NAME        -> ok WIDTH HEIGHT CRC NCOLORS
      QMP screendump into DUMPS/PREFIX-NAME.ppm, read and removed (the
      pixels stay in memory for "pixel"); CRC is the zlib CRC-32
      (8 hex digits) of the RGB bytes (3 bytes a pixel, rows top to
      bottom, no padding), NCOLORS the number of distinct colours, counted
      up to 4096 (a screen with more says 4096)
  pixel NAME X Y         -> ok RRGGBB
      one pixel of the last "screendump NAME"
  screendump-png NAME    -> ok WIDTH HEIGHT PATH
      QMP screendump format=png into PNGS/NAME.png (or DUMPS/PREFIX-NAME.png
      without --pngs); PATH is the host's
  anything else, or a failure -> error MESSAGE

NAME is 1 to 64 characters of [A-Za-z0-9._-], not starting with a dot.
The agent connects to both sockets (retrying until QEMU has made them) and
stops when QEMU closes the serial socket (or, while it waits for QEMU,
when its parent is gone). It logs
every request and reply to stdout; a written PNG is logged as "wrote PATH".

  usage: guest-agent.py --qmp SOCKET --serial SOCKET --dumps DIR
                        --prefix PREFIX [--pngs DIR] [--follow]

With --follow (a guest that migrates from QEMU to QEMU,
scripts/migrate-guest.py) it connects to QMP anew for each screendump.
"""
import argparse
import array
import json
import os
import re
import socket
import struct
import sys
import time
import zlib

NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}\Z")
# A screendump of a large screen under TCG can take a few seconds.
QMP_TIMEOUT = 60
# The tests ask whether a screen has one colour, two or a few; counting
# every colour of a 2560x1600 pattern took a second a dump.
COLOUR_CAP = 4096
COLOUR_CHUNK = 65536


class AgentError(Exception):
    """A request that gets an "error" reply."""


def log(*words):
    print(time.strftime("%H:%M:%S"), *words, flush=True)


def connect(path, parent):
    """Connect to the unix socket PATH as soon as QEMU listens on it."""
    while True:
        if os.getppid() != parent:
            sys.exit(0)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except OSError:
            sock.close()
            time.sleep(0.1)


class Qmp:
    """A minimal QMP client: one command at a time, events skipped."""

    def __init__(self, sock):
        sock.settimeout(QMP_TIMEOUT)
        self.sock = sock
        self.file = sock.makefile("rwb")
        # Replies carry their command's id: a late reply to a command that
        # timed out is skipped.
        self.id = 0
        self.read()  # the greeting
        self.execute("qmp_capabilities")

    def close(self):
        self.file.close()
        self.sock.close()

    def read(self):
        line = self.file.readline()
        if not line:
            raise AgentError("QMP connection closed")
        return json.loads(line)

    def execute(self, command, **arguments):
        self.id += 1
        request = {"execute": command, "id": self.id}
        if arguments:
            request["arguments"] = arguments
        self.file.write(json.dumps(request).encode() + b"\n")
        self.file.flush()
        while True:
            reply = self.read()
            if reply.get("id") != self.id:
                continue
            if "return" in reply:
                return reply["return"]
            if "error" in reply:
                raise AgentError("QMP %s: %s" % (command, reply["error"].get("desc", reply["error"])))


def read_ppm(path):
    """(width, height, rgb bytes) of a binary PPM with maxval 255."""
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    # magic, width, height, maxval: separated by whitespace and comments
    while len(fields) < 4:
        while pos < len(data) and data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.find(b"\n", pos) + 1 or len(data)
            continue
        start = pos
        while pos < len(data) and not data[pos:pos + 1].isspace():
            pos += 1
        if start == pos:
            raise AgentError("truncated PPM header in %s" % path)
        fields.append(data[start:pos])
    pos += 1  # the single whitespace byte before the payload
    if fields[0] != b"P6" or fields[3] != b"255":
        raise AgentError("not a P6 PPM with maxval 255: %s" % path)
    width, height = int(fields[1]), int(fields[2])
    row = width * 3
    payload = data[pos:]
    # QEMU's screendump writes each row with its line buffer's stride, a
    # multiple of 4 bytes: a width that is not a multiple of 4 leaves padding
    # after every row. Drop it.
    padded = (row + 3) & ~3
    if padded != row and len(payload) == padded * height:
        payload = b"".join(payload[y * padded:y * padded + row] for y in range(height))
    if len(payload) != row * height:
        raise AgentError("PPM payload of %d bytes for %dx%d in %s" %
                         (len(payload), width, height, path))
    return width, height, payload


def count_colours(rgb):
    """Distinct colours of RGB bytes (3 a pixel), at most COLOUR_CAP."""
    pixels = bytearray(len(rgb) // 3 * 4)
    for channel in range(3):
        pixels[channel::4] = rgb[channel::3]
    words = array.array("I")
    words.frombytes(pixels)
    seen = set()
    for start in range(0, len(words), COLOUR_CHUNK):
        seen.update(words[start:start + COLOUR_CHUNK])
        if len(seen) >= COLOUR_CAP:
            return COLOUR_CAP
    return len(seen)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise AgentError("not a PNG: %s" % path)
    return struct.unpack(">II", head[16:24])


class Agent:
    def __init__(self, args, qmp):
        self.args = args
        self.qmp = qmp
        self.dumps = {}  # NAME -> (width, height, rgb) of its last screendump

    def screendump(self, path, fmt):
        if self.args.follow:
            # a guest that migrates: the QMP socket's name leads to the
            # QEMU it runs in now (a monitor takes one client at a time)
            if self.qmp is not None:
                self.qmp.close()
            self.qmp = Qmp(connect(self.args.qmp, self.args.parent))
        if self.qmp is None:
            raise AgentError("no QMP connection")
        if os.path.exists(path):
            os.unlink(path)
        self.qmp.execute("screendump", filename=path, format=fmt)

    def handle(self, line):
        words = line.split()
        if not words:
            raise AgentError("empty request")
        request, operands = words[0], words[1:]
        arity = {"screendump": 1, "pixel": 3, "screendump-png": 1}
        if request not in arity:
            raise AgentError("unknown request %r" % request)
        if len(operands) != arity[request]:
            raise AgentError("%s takes %d operand(s)" % (request, arity[request]))
        name = operands[0]
        if not NAME.match(name):
            raise AgentError("bad name %r" % name)

        if request == "screendump":
            path = os.path.join(self.args.dumps, "%s-%s.ppm" % (self.args.prefix, name))
            self.screendump(path, "ppm")
            try:
                width, height, rgb = read_ppm(path)
            finally:
                # a suite takes hundreds of dumps of up to 12 MB: none is kept on disk
                os.unlink(path)
            self.dumps[name] = (width, height, rgb)
            return "%d %d %08x %d" % (width, height, zlib.crc32(rgb) & 0xffffffff,
                                      count_colours(rgb))

        if request == "pixel":
            if name not in self.dumps:
                raise AgentError("no screendump named %r" % name)
            width, height, rgb = self.dumps[name]
            try:
                x, y = int(operands[1]), int(operands[2])
            except ValueError:
                raise AgentError("bad coordinates") from None
            if not (0 <= x < width and 0 <= y < height):
                raise AgentError("(%d, %d) outside %dx%d" % (x, y, width, height))
            return rgb[(y * width + x) * 3:(y * width + x) * 3 + 3].hex()

        if self.args.pngs:
            path = os.path.join(self.args.pngs, name + ".png")
        else:
            path = os.path.join(self.args.dumps, "%s-%s.png" % (self.args.prefix, name))
        self.screendump(path, "png")
        width, height = png_size(path)
        log("wrote", path)
        return "%d %d %s" % (width, height, path)

    def serve(self, serial):
        buf = b""
        while True:
            try:
                chunk = serial.recv(4096)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                line = raw.decode("ascii", "replace").strip()
                try:
                    reply = "ok " + self.handle(line)
                except (AgentError, OSError, ValueError) as e:
                    reply = "error " + " ".join(str(e).split())
                log(">", line, "<", reply)
                try:
                    serial.sendall(reply.encode() + b"\n")
                except OSError:
                    return


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qmp", required=True)
    parser.add_argument("--serial", required=True)
    parser.add_argument("--dumps", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--pngs")
    parser.add_argument("--follow", action="store_true",
                        help="connect to QMP for each screendump (the guest migrates)")
    args = parser.parse_args()
    parent = args.parent = os.getppid()
    if args.pngs:
        os.makedirs(args.pngs, exist_ok=True)

    serial = connect(args.serial, parent)
    qmp = None
    try:
        qmp = Qmp(connect(args.qmp, parent))
    except (AgentError, OSError, ValueError) as e:
        # Keep serving: every request then gets an error reply at once.
        log("QMP unusable:", e)
    log("connected")
    Agent(args, qmp).serve(serial)
    log("QEMU closed the channel")


if __name__ == "__main__":
    main()
