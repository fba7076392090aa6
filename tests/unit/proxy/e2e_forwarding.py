#!/usr/bin/env python3
"""End-to-end forwarding checks for the kadmit binary against a tiny framed server.

The fake broker answers each request frame (int32 size, int16 api_key, int16
api_version, int32 correlation_id, ...) with a response frame carrying the
correlation id, except Produce v0-2 with acks=0, which gets no response. A
request whose api_key is 999 asks for a response of N bytes (N in the body),
for backpressure tests.

Usage: e2e_forwarding.py PATH_TO_KADMIT. Exits non-zero on the first failure.
"""
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

KADMIT = sys.argv[1]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class FakeBroker(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.requests = 0
        self.eofs = 0

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        buf = b""
        raw_left, opaque = 0, False
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    self.eofs += 1
                    break
                if opaque:
                    conn.sendall(data)  # GSSAPI stand-in: echo, no framing
                    continue
                buf += data
                while len(buf) >= 4 and not opaque:
                    size = struct.unpack(">i", buf[:4])[0]
                    if len(buf) < 4 + size:
                        break
                    frame, buf = buf[4 : 4 + size], buf[4 + size :]
                    self.requests += 1
                    if raw_left > 0:
                        raw_left -= 1
                        reply = b"srv-" + frame
                        conn.sendall(struct.pack(">i", len(reply)) + reply)
                        continue
                    key, ver, corr = struct.unpack(">hhi", frame[:8])
                    cid_len = max(struct.unpack(">h", frame[8:10])[0], 0)
                    rest = frame[10 + cid_len :]
                    if key == 0 and ver <= 2:
                        if struct.unpack(">h", rest[:2])[0] == 0:
                            continue
                    body = struct.pack(">i", corr)
                    if key == 997:
                        continue  # never answered: the drain timeout must cut it
                    if key == 998:
                        time.sleep(0.5)  # slow answer: the drain must wait for it
                    if key == 999:
                        n = struct.unpack(">i", frame[-4:])[0]
                        body += b"r" * n
                    elif key == 17 and ver == 0:
                        mlen = struct.unpack(">h", rest[:2])[0]
                        mech = rest[2 : 2 + mlen]
                        body += struct.pack(">hih", 0, 1, len(mech)) + mech
                        raw_left = {b"PLAIN": 1, b"SCRAM-SHA-256": 2}.get(mech, 0)
                        opaque = mech == b"GSSAPI"
                    elif key == 18 and ver == 0:
                        # ApiVersions v0: error, [key, min, max]: CreateTopics
                        # above anything kadmit decodes, Produce untouched.
                        body += struct.pack(">hi", 0, 2) + struct.pack(">hhh", 19, 2, 99)
                        body += struct.pack(">hhh", 0, 3, 11)
                    conn.sendall(struct.pack(">i", len(body)) + body)
                if opaque and buf:
                    conn.sendall(buf)
                    buf = b""
        except OSError:
            pass
        finally:
            conn.close()


def request(key, ver, corr, client_id=b"t", tail=b""):
    body = struct.pack(">hhih", key, ver, corr, len(client_id)) + client_id + tail
    return struct.pack(">i", len(body)) + body


def read_frames(sock, count, timeout=5.0):
    sock.settimeout(timeout)
    buf, pos, out = bytearray(), 0, []
    while len(out) < count:
        data = sock.recv(1 << 20)
        if not data:
            break
        buf += data
        while len(buf) - pos >= 4:
            size = struct.unpack_from(">i", buf, pos)[0]
            if len(buf) - pos < 4 + size:
                break
            out.append(bytes(buf[pos + 4 : pos + 4 + size]))
            pos += 4 + size
        if pos > (1 << 20):
            del buf[:pos]
            pos = 0
    return out


class Kadmit:
    def __init__(self, upstream_port, *extra):
        self.port = free_port()
        while self.port == upstream_port:  # a just-freed "dead" upstream port can come back
            self.port = free_port()
        self.log = tempfile.NamedTemporaryFile("w+", prefix="kadmit-e2e-", suffix=".log",
                                               delete=False)
        self.proc = subprocess.Popen(
            [KADMIT, "--listen", f"127.0.0.1:{self.port}", "--upstream",
             f"127.0.0.1:{upstream_port}", "--admin", "127.0.0.1:0", "--log-level", "debug",
             *extra],
            stdin=subprocess.DEVNULL,
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 5
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.02)
        raise SystemExit("kadmit did not start")

    def connect(self, rcvbuf=0):
        s = socket.socket()
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(5)
        s.connect(("127.0.0.1", self.port))
        return s

    def logtext(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def term(self):
        self.signaled = True
        self.proc.send_signal(signal.SIGTERM)

    def stop(self):
        if not getattr(self, "signaled", False):
            self.term()
        rc = self.proc.wait(timeout=10)
        if rc != 0:
            sys.stderr.write(self.logtext()[-4000:])
        os.unlink(self.log.name)
        return rc


T0 = time.time()


def check(cond, what):
    if not cond:
        raise SystemExit("FAIL: " + what)
    print(f"ok - {what} [{time.time() - T0:.2f} s]")


def main():
    broker = FakeBroker()
    broker.start()
    k = Kadmit(broker.port, "--max-frame-bytes", "4096")

    # 1. Pipelining: 1000 requests in one write, answered in order.
    s = k.connect()
    s.sendall(b"".join(request(3, 1, i) for i in range(1000)))
    frames = read_frames(s, 1000)
    corrs = [struct.unpack(">i", f[:4])[0] for f in frames]
    check(corrs == list(range(1000)), "1000 pipelined requests answered in order")

    # 2. acks=0 Produce gets no response, the next request still matches.
    s.sendall(request(0, 2, 5000, tail=struct.pack(">hi", 0, 1000)) + request(3, 1, 5001))
    frames = read_frames(s, 1)
    check([struct.unpack(">i", f[:4])[0] for f in frames] == [5001], "acks=0 Produce skipped")

    # 3. Byte-by-byte client: headers straddling every read boundary.
    data = b"".join(request(3, 1, 6000 + i, client_id=b"byte-by-byte") for i in range(5))
    for b in data:
        s.send(bytes([b]))
    frames = read_frames(s, 5)
    check([struct.unpack(">i", f[:4])[0] for f in frames] == list(range(6000, 6005)),
          "byte-by-byte requests forwarded")

    # 4. Half-close: requests then FIN; responses still arrive, then EOF.
    s.sendall(b"".join(request(3, 1, 7000 + i) for i in range(10)))
    s.shutdown(socket.SHUT_WR)
    frames = read_frames(s, 10)
    check(len(frames) == 10, "responses after a client half-close")
    s.settimeout(5)
    check(s.recv(1) == b"", "EOF reaches the client after the broker closes")
    s.close()

    # 5. Frame over the cap: closed with a log line naming size and cap.
    s = k.connect()
    s.sendall(struct.pack(">i", 5000) + b"x" * 100)
    s.settimeout(5)
    try:
        gone = s.recv(1) == b""
    except ConnectionResetError:
        gone = True
    check(gone, "oversize frame closes the connection")
    time.sleep(0.1)
    check("frame size above the cap" in k.logtext() and "size=5000" in k.logtext()
          and "cap=4096" in k.logtext(), "oversize log line names size and cap")
    s.close()

    # 6. TLS ClientHello on the plaintext port.
    s = k.connect()
    s.sendall(bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc]))
    try:
        gone = s.recv(1) == b""
    except ConnectionResetError:
        gone = True
    time.sleep(0.1)
    check(gone and "TLS handshake on a plaintext listener" in k.logtext(), "TLS refused")
    s.close()

    # 7. A client that never reads must not pin unbounded memory.
    s = k.connect()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    rss0 = k.rss_kib()
    n = 100
    for i in range(n):
        s.sendall(request(999, 0, 8000 + i, tail=struct.pack(">i", 1 << 20)))
    time.sleep(0.6)
    grown = k.rss_kib() - rss0
    check(grown < 16 * 1024, f"client that never reads: kadmit grew {grown} KiB for 100 MiB")
    frames = read_frames(s, n, timeout=20)
    check(len(frames) == n and all(len(f) == 4 + (1 << 20) for f in frames),
          "its responses all arrive once it reads")
    s.close()

    # 8. SASL after SaslHandshake v0: raw tokens are not parsed as requests.
    # The token below would be a malformed request (client_id runs past the
    # frame), so a proxy that parsed it would close the connection.
    token = b"\x00\x03\x00\x01\x00\x00\x00\x07\x7f\xff"
    def raw(b):
        return struct.pack(">i", len(b)) + b
    def handshake(mech, corr):
        return request(17, 0, corr, tail=struct.pack(">h", len(mech)) + mech)
    for mech, tokens in ((b"PLAIN", 1), (b"SCRAM-SHA-256", 2)):
        s = k.connect()
        s.sendall(handshake(mech, 1))
        frames = read_frames(s, 1)
        check(len(frames) == 1 and struct.unpack(">i", frames[0][:4])[0] == 1,
              f"{mech.decode()} handshake answered")
        for t in range(tokens):
            s.sendall(raw(token))
            frames = read_frames(s, 1)
            check(frames == [b"srv-" + token], f"{mech.decode()} raw token {t + 1} relayed")
        s.sendall(request(3, 1, 2))
        frames = read_frames(s, 1)
        check(len(frames) == 1 and struct.unpack(">i", frames[0][:4])[0] == 2,
              f"{mech.decode()}: framing resumes after the tokens")
        s.close()
    # A client that pipelines its token right behind the handshake.
    s = k.connect()
    s.sendall(handshake(b"PLAIN", 1) + raw(token) + request(3, 1, 2))
    frames = read_frames(s, 3)
    check(len(frames) == 3 and frames[1] == b"srv-" + token, "pipelined PLAIN token relayed")
    s.close()
    # GSSAPI: no fixed token count, so the connection becomes opaque.
    s = k.connect()
    s.sendall(handshake(b"GSSAPI", 1))
    frames = read_frames(s, 1)
    junk = b"\xff\xff\xff\xff not a frame at all"
    s.sendall(junk)
    s.settimeout(5)
    got = b""
    while len(got) < len(junk):
        d = s.recv(100)
        if not d:
            break
        got += d
    check(got == junk, "GSSAPI connection passed through opaquely")
    s.close()
    time.sleep(0.1)
    check(k.logtext().count("passing the connection through unframed") == 1,
          "opaque pass-through logged once")

    # 9. ApiVersions responses are clamped on their way to the client.
    s = k.connect()
    s.sendall(request(18, 0, 77))
    frames = read_frames(s, 1)
    check(len(frames) == 1, "ApiVersions answered")
    corr, err, n = struct.unpack(">ihi", frames[0][:10])
    entries = [struct.unpack(">hhh", frames[0][10 + 6 * i : 16 + 6 * i]) for i in range(n)]
    check(corr == 77 and err == 0 and len(frames[0]) == 22, "ApiVersions frame keeps its shape")
    check(entries[0][0] == 19 and entries[0][1] == 2 and entries[0][2] < 99,
          f"CreateTopics max lowered from 99 to {entries[0][2]}")
    check(entries[1] == (0, 3, 11), "Produce entry untouched")
    s.close()

    # 10. Drain: SIGTERM lets an in-flight request finish, then exit 0.
    s = k.connect()
    s.sendall(request(3, 1, 9000))
    check(len(read_frames(s, 1)) == 1, "request before drain answered")
    s.sendall(request(998, 0, 9001))
    time.sleep(0.1)
    k.term()
    frames = read_frames(s, 1)
    check(len(frames) == 1 and struct.unpack(">i", frames[0][:4])[0] == 9001,
          "a slow in-flight request completes during the drain")
    check(s.recv(1) == b"", "then the drained connection is closed")
    rc = k.stop()
    check(rc == 0, f"SIGTERM drains and exits 0 (rc={rc})")
    s.close()

    # 10b. Drain timeout, connection cap and idle timeout.
    k3 = Kadmit(broker.port, "--drain-timeout", "1", "--max-connections", "2",
                "--idle-timeout", "1")
    time.sleep(0.3)  # let the start-up probe connection close
    a, b = k3.connect(), k3.connect()
    time.sleep(0.1)
    c = k3.connect()
    c.settimeout(2)
    try:
        gone = c.recv(1) == b""
    except ConnectionResetError:
        gone = True
    check(gone and "connection limit reached" in k3.logtext(), "over --max-connections: closed")
    a.sendall(request(997, 0, 1))  # in flight forever: not idle, cut by the drain
    b.settimeout(3)
    t0 = time.time()
    idle_gone = b.recv(1) == b""
    waited = time.time() - t0
    check(idle_gone and 0.5 < waited < 5, f"idle connection closed after 1 s ({waited:.2f} s)")
    readable, _, _ = select.select([a], [], [], 0.4)
    check(not readable, "a connection with a request in flight is not idle")
    t0 = time.time()
    k3.term()
    rc = k3.proc.wait(timeout=10)
    check(rc == 0 and 0.8 < time.time() - t0 < 5, "drain timeout cuts after 1 s, exit 0")
    check("drain timeout, connections cut" in k3.logtext() and "cut=1" in k3.logtext(),
          "drain timeout logs how many connections were cut")
    os.unlink(k3.log.name)
    for x in (a, b, c):
        x.close()

    # 10c. A 1 MiB pool shared by 8 busy connections: reads wait for memory
    # and resume; every byte still arrives, in order, and ApiVersions is
    # still clamped (its whole-frame buffer uses the reserved share).
    # Each connection's responses must outgrow what the kernel can buffer
    # between kadmit and a client that does not read (up to tcp_wmem's
    # maximum), or kadmit never has to hold them and the pool never runs dry;
    # how much the kernel takes depends on TCP autotuning, so size for the max.
    try:
        with open("/proc/sys/net/ipv4/tcp_wmem") as f:
            wmem_max = int(f.read().split()[2])
    except (OSError, ValueError, IndexError):
        wmem_max = 4 << 20
    big = max(300000, 2 * wmem_max // 6)
    k4 = Kadmit(broker.port, "--buffer-memory", "1MiB")
    conns = [k4.connect(rcvbuf=16384) for _ in range(8)]
    for c in conns:
        c.sendall(b"".join(request(999, 0, i, tail=struct.pack(">i", big)) for i in range(6))
                  + request(18, 0, 6))
    # Nobody reads yet, so responses pile up in kadmit until the pool runs
    # dry. Wait for that event rather than for a fixed time: a loaded
    # machine may take longer to fill 1 MiB.
    deadline = time.time() + 20
    while "reading paused, memory pool depleted" not in k4.logtext() and time.time() < deadline:
        time.sleep(0.05)
    results = []
    def drain_conn(c):
        results.append(read_frames(c, 7, timeout=20))
    threads = [threading.Thread(target=drain_conn, args=(c,)) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = len(results) == 8 and all(
        [struct.unpack(">i", f[:4])[0] for f in r] == list(range(7))
        and all(len(f) == big + 4 for f in r[:6]) and len(r[6]) == 22 for r in results)
    check(ok, "8 connections through a 1 MiB pool: all responses intact and in order")
    check("reading paused, memory pool depleted" in k4.logtext(), "the pool ran dry and recovered")
    for c in conns:
        c.close()
    check(k4.stop() == 0, "small-pool kadmit exits 0")

    # 11. Upstream refused: the client is closed promptly with a log line.
    dead = free_port()
    k2 = Kadmit(dead)
    s = k2.connect()
    t0 = time.time()
    s.settimeout(5)
    try:
        gone = s.recv(1) == b""
    except ConnectionResetError:
        gone = True
    time.sleep(0.1)
    check(gone and time.time() - t0 < 5, "client closed promptly when the upstream refuses")
    check("upstream connect failed" in k2.logtext() and f"127.0.0.1:{dead}" in k2.logtext()
          and "connection refused" in k2.logtext(), "refusal log names the upstream and error")
    s.close()
    check(k2.stop() == 0, "idle kadmit exits 0 on SIGTERM")

    # 12. Startup errors: one line on stderr, exit 2 (config) or 1 (runtime).
    r = subprocess.run([KADMIT, "--upstream", "127.0.0.1:1", "--buffer-memory", "12XB"],
                       capture_output=True, text=True)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and "--buffer-memory 12XB" in r.stderr,
          "bad value: exit 2 with one line")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    bport = busy.getsockname()[1]
    r = subprocess.run([KADMIT, "--listen", f"127.0.0.1:{bport}", "--upstream", "127.0.0.1:1"],
                       capture_output=True, text=True)
    check(r.returncode == 1 and
          r.stderr.strip() == f"kadmit: --listen 127.0.0.1:{bport}: address already in use",
          "port in use: exit 1 with one line")
    lport = free_port()
    r = subprocess.run([KADMIT, "--listen", f"127.0.0.1:{lport}", "--upstream", "127.0.0.1:1",
                        "--admin", f"127.0.0.1:{bport}"], capture_output=True, text=True)
    check(r.returncode == 1 and r.stderr.count("\n") == 1 and
          f"--admin 127.0.0.1:{bport}" in r.stderr and "address already in use" in r.stderr,
          "admin port in use: exit 1 with one line")
    tok = tempfile.NamedTemporaryFile("w", delete=False)
    tok.close()
    os.unlink(tok.name)
    r = subprocess.run([KADMIT, "--listen", f"127.0.0.1:{lport}", "--upstream", "127.0.0.1:1",
                        "--admin-token-file", tok.name], capture_output=True, text=True)
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and
          f"--admin-token-file {tok.name}" in r.stderr,
          "missing admin token file: exit 2 with one line")
    busy.close()
    print("all end-to-end checks passed")


if __name__ == "__main__":
    main()
