"""dsmmodel.py — seed 000's communication-cost model over dsm's traces.

Seed 000 §3.3 splits communication cost into *latency* (a node sends a
request and waits for the reply: the cost is the request's and the reply's
one-way latency) and *overhead* (a node receives a request and answers it:
the cost is the receive overhead of the one and the send overhead of the
other), models both for UDP on its machines (per-packet software cost,
per-byte cost, interrupt cost; Figs 4-5) and for a low-overhead network
(Table 2), and re-estimates each application's run time by putting the new
costs in place of the old (§4.3, Figs 12-15, Tables 6-8).

Here:
- Net: a network's costs for a message of s bytes; presets for the seed's
  Eth, LOH and LOH-HB, today's 10/25/100 GbE UDP and RDMA; `this`, fitted on
  this machine from a size sweep (fit_line over traced ping-pongs).
- costs(): the seed's split per category (read fault, write fault, barrier,
  lock: latency; request service: overhead) of one traced run, for a Net.
- replay(): the traced run's timeline re-played with every message's
  latency changed by dl(msg) and its sender's send overhead by ds(msg): each
  thread keeps its measured busy stretches; a receipt starts when the
  message arrives (its measured latency plus the change) or when its
  thread is free; a waiting application thread goes on when the message
  that woke it was handled. The predicted run time is the statistics'
  window (dsm_stats_reset .. freeze) in the new timeline.

Times are in microseconds, sizes in bytes. Pure functions only (no I/O but
what dsmtrace does); tests/model/test_model.py checks them by hand.
"""
import bisect
import math

import dsmtrace as dt


class ParamError(Exception):
    """A bad parameter; str() is the one-line reason."""


# ---- networks --------------------------------------------------------------

FIELDS = {
    # name: (meaning, unit)
    "send0": ("host CPU per message sent (socket/library)", "us"),
    "send_per_byte": ("host CPU per byte sent (copies)", "us/B"),
    "recv0": ("host CPU per message received (socket/library, wake-up)", "us"),
    "recv_per_byte": ("host CPU per byte received (copies)", "us/B"),
    "per_packet": ("protocol and driver work per packet, each side (seed: P + D)", "us"),
    "irq": ("interrupt per packet at the receiver", "us"),
    "irq_send": ("interrupt per message at the sender (DMA done), overhead only", "us"),
    "wire": ("fixed wire, switch and NIC latency", "us"),
    "bandwidth": ("bottleneck of I/O bus and link", "B/us"),
    "mtu": ("payload bytes per packet", "B"),
}


class Net:
    """Costs of one network. latency(s) is one-way, from the send call to
    the receiver's handler: send overhead + wire + s/bandwidth + receive
    overhead. send_overhead/recv_overhead are host CPU time (seed 000's
    'overhead')."""

    def __init__(self, name, desc="", **p):
        self.name, self.desc = name, desc
        self.p = {k: 0.0 for k in FIELDS}
        self.p["mtu"] = 1e12
        self.p["bandwidth"] = 1e12
        for k, v in p.items():
            self.set(k, v)

    def set(self, key, value):
        if key not in FIELDS:
            raise ParamError("unknown network parameter '%s' (known: %s)"
                             % (key, ", ".join(sorted(FIELDS))))
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ParamError("%s=%s: expected a number" % (key, value))
        if not math.isfinite(v) or v < 0 or (key in ("bandwidth", "mtu") and v <= 0):
            raise ParamError("%s=%s: expected a %s number" %
                             (key, value, "positive" if key in ("bandwidth", "mtu") else
                              "non-negative finite"))
        self.p[key] = v

    def packets(self, size):
        return max(1, math.ceil(size / self.p["mtu"]))

    def send_overhead(self, size):
        p = self.p
        return (p["send0"] + p["send_per_byte"] * size + p["per_packet"] * self.packets(size)
                + p["irq_send"])

    def recv_overhead(self, size):
        p = self.p
        return (p["recv0"] + p["recv_per_byte"] * size
                + (p["per_packet"] + p["irq"]) * self.packets(size))

    def latency(self, size):
        return (self.send_overhead(size) - self.p["irq_send"] + self.p["wire"]
                + size / self.p["bandwidth"] + self.recv_overhead(size))

    def describe(self):
        return ", ".join("%s=%g" % (k, v) for k, v in self.p.items()
                         if v and not (k in ("mtu", "bandwidth") and v >= 1e12))


def cycles(n, mhz):
    return n / mhz


def presets(mhz, this=None):
    """The networks by name. Cycle counts (seed 000, Table 2 and §3.3.1)
    become time at `mhz`. `this`: the Net fitted on this machine, which the
    UDP-over-NIC presets take their host costs from."""
    io_bus = 132.0  # 32-bit 33 MHz PCI, B/us (= MB/s)
    out = {}
    # Seed §3.3.1: UDP/IP over 100Base-TX. Socket-level work S (taken as the
    # receive call's overhead; 1500 cycles assumed, Fig. 5's values are not
    # in the text), P + D = 4000 cycles per Ethernet packet, 3000 cycles per
    # interrupt, one copy each side at the I/O bus's speed.
    out["eth"] = Net("eth", "seed 000 Eth: UDP/IP, 100 Mb/s Ethernet",
                     send0=cycles(1500, mhz), recv0=cycles(1500, mhz),
                     per_packet=cycles(4000, mhz), irq=cycles(3000, mhz),
                     send_per_byte=1 / io_bus, recv_per_byte=1 / io_bus,
                     bandwidth=12.5, mtu=1472)
    # Seed §3.3.2, Table 2: 400 cycles of software overhead, 0-copy DMA over
    # a 132 MB/s I/O bus overlapped with the link, 3000-cycle interrupts.
    for name, link, desc in (("loh", 12.5, "seed 000 LOH: low overhead, 100 Mb/s"),
                             ("loh-hb", 125.0, "seed 000 LOH-HB: low overhead, 1 Gb/s")):
        out[name] = Net(name, desc, send0=cycles(400, mhz), recv0=cycles(400, mhz),
                        irq=cycles(3000, mhz), irq_send=cycles(3000, mhz),
                        bandwidth=min(io_bus, link), mtu=1e12)
    # Today's Ethernet with the kernel's UDP: this machine's host costs (as
    # fitted), plus a NIC and a switch (fixed latency assumed) and the link.
    if this is not None:
        for name, gbps, wire in (("udp-10g", 10, 5.0), ("udp-25g", 25, 4.0),
                                 ("udp-100g", 100, 3.0)):
            n = Net(name, "%d GbE, kernel UDP (host costs fitted here), %g us NIC+switch"
                    % (gbps, wire), **this.p)
            n.set("wire", this.p["wire"] + wire)
            n.set("bandwidth", gbps * 125.0)
            n.set("mtu", 8972)
            out[name] = n
    # RDMA (verbs over 100 Gb/s InfiniBand or RoCE), polled completions:
    # no interrupts, no copies, ~0.2 us of host work per side.
    out["rdma"] = Net("rdma", "RDMA, 100 Gb/s, polled completions", send0=0.2, recv0=0.2,
                      wire=1.5, bandwidth=12500.0, mtu=4096)
    if this is not None:
        out["this"] = this
    return out


def apply_settings(net, settings):
    """settings: ["key=value", ...] (the command line's --set)."""
    for s in settings:
        k, eq, v = s.partition("=")
        if not eq or not k:
            raise ParamError("--set %s: expected KEY=VALUE" % s)
        net.set(k.strip(), v.strip())
    return net


# ---- fitting this machine --------------------------------------------------

def fit_line(points):
    """Least-squares a + b*x through [(x, y)]; b = 0 with one distinct x."""
    if not points:
        raise ParamError("nothing to fit: no messages in the sweep")
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return my, 0.0
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - b * mx, b


def median(v):
    s = sorted(v)
    n = len(s)
    if not n:
        raise ParamError("median of nothing")
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def fit_this(msgs, min_samples=5):
    """This machine's Net from matched messages of a size sweep: the send
    call's time (send overhead) and send-to-handler time (latency), their
    medians per size, each fitted to a + b*size. The receive overhead is
    what the latency leaves (loopback has no wire): recv = latency - send.
    Returns (Net, table of (size, samples, send median, latency median))."""
    by = {}
    for m in msgs:
        by.setdefault(m.size, []).append(((m.s1 - m.s0) / 1e3, (m.r1 - m.s0) / 1e3))
    rows = []
    for size in sorted(by):
        v = by[size]
        if len(v) >= min_samples:
            rows.append((size, len(v), median(x for x, _ in v), median(y for _, y in v)))
    if len(rows) < 2:
        e = ParamError("the sweep has %d message sizes with %d or more samples; need 2"
                       % (len(rows), min_samples))
        e.short = "%d message sizes with %d or more samples, 2 needed" % (len(rows), min_samples)
        raise e
    s0, s1 = fit_line([(r[0], r[2]) for r in rows])
    l0, l1 = fit_line([(r[0], r[3]) for r in rows])
    s0, s1, l0, l1 = max(s0, 0.0), max(s1, 0.0), max(l0, 0.0), max(l1, 0.0)
    net = Net("this", "this machine, fitted", send0=s0, send_per_byte=s1,
              recv0=max(l0 - s0, 0.0), recv_per_byte=max(l1 - s1, 0.0))
    return net, rows


# ---- a traced run ----------------------------------------------------------

# Message types a node serves without anyone on it waiting for them (seed
# 000's "receives a request and answers it": overhead); every other type
# may be what a waiting application thread waits for (latency).
REQUEST_TYPES = {"PAGE_REQ", "PAGE_RUN_REQ", "DIFF", "LOCK_ACQ", "LOCK_FWD", "COND_WAIT", "COND_SEEN",
                 "COND_SIGNAL", "FREE", "STATS", "LRC_BASE_REQ", "LRC_DIFF_REQ", "LRC_COVER_REQ",
                 "LRC_SEEN", "SC_REQ", "SC_FWD", "SC_INV", "ERC_INV", "ERC_UPD", "LOOKUP_REQ", "REQ",
                 "ACCEPT"}

WAITS = {dt.FAULT: None, dt.BARRIER: "barrier", dt.LOCK: "lock", dt.UNLOCK: "lock",
         dt.COND: "lock"}
CATEGORIES = ("read fault", "write fault", "barrier", "lock", "request service")


def wait_category(rec):
    if rec[0] == dt.FAULT:
        return "write fault" if rec[1] else "read fault"
    return WAITS.get(rec[0])


def wait_end(rec):
    return rec[5] if rec[0] == dt.FAULT else rec[6]


def is_request(nodes, m):
    return nodes[m.dst].type_name(m.type) in REQUEST_TYPES


class Run:
    """A traced run, digested: its nodes, matched messages, and per node the
    application thread's waits [(category, t0, t1)] and statistics window."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.msgs, self.lone_sends, self.lone_recvs = dt.match_messages(nodes)
        self.waits = {}
        self.window = {}
        for n in nodes:
            self.window[n.rank] = n.window()
            app = [th for th in n.threads if th.role == 0]
            w = []
            for th in app:
                for r in th.recs:
                    c = wait_category(r) if r[0] in WAITS else None
                    if c:
                        w.append((c, r[4], wait_end(r)))
            w.sort(key=lambda x: x[1])
            self.waits[n.rank] = w

    def time_split(self, rank):
        """ms per category of the application thread's waits, total and
        computing, inside the statistics window (as the statistics split)."""
        lo, hi = self.window[rank]
        out = {c: 0.0 for c in CATEGORIES[:4]}
        for c, t0, t1 in self.waits[rank]:
            a, b = max(t0, lo), min(t1, hi)
            if b > a:
                out[c] += (b - a) / 1e6
        out["total"] = (hi - lo) / 1e6
        out["computing"] = max(0.0, out["total"] - sum(out[c] for c in CATEGORIES[:4]))
        return out


def costs(run, net, rank):
    """Seed 000's communication cost of one node under `net`, in ms, by
    category: latency for the application thread's waits (each message it
    sent in a wait, and each message that ended one, costs its one-way
    latency), overhead for request service (each request's receive
    overhead and its answers' send overhead). Returns {category:
    (messages, bytes, cost ms, kind)}."""
    lo, hi = run.window[rank]
    waits = run.waits[rank]
    starts = [w[1] for w in waits]
    out = {c: [0, 0, 0.0] for c in CATEGORIES}

    def in_wait(t):
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0 and waits[i][1] <= t <= waits[i][2]:
            return waits[i][0]
        return None

    served = {}  # (node, thread) -> [(r1, r2)] of requests, for their answers
    for m in run.msgs:
        if m.dst == rank and lo <= m.r1 <= hi and is_request(run.nodes, m):
            e = out["request service"]
            e[0] += 1
            e[1] += m.size
            e[2] += net.recv_overhead(m.size) / 1e3
            served.setdefault(m.r_thread, []).append((m.r1, m.r2))
    for v in served.values():
        v.sort()
    for m in run.msgs:
        if m.src == rank and lo <= m.s0 <= hi:
            v = served.get(m.s_thread, [])
            i = bisect.bisect_right(v, (m.s0, float("inf"))) - 1
            if i >= 0 and v[i][0] <= m.s0 <= v[i][1]:
                e = out["request service"]
                e[0] += 1
                e[1] += m.size
                e[2] += net.send_overhead(m.size) / 1e3
                continue
            c = in_wait(m.s0)
            if c:
                e = out[c]
                e[0] += 1
                e[1] += m.size
                e[2] += net.latency(m.size) / 1e3
        if m.dst == rank and lo <= m.r1 <= hi and not is_request(run.nodes, m):
            c = in_wait(m.r1)
            if c:
                e = out[c]
                e[0] += 1
                e[1] += m.size
                e[2] += net.latency(m.size) / 1e3
    return {c: (v[0], v[1], v[2], "overhead" if c == "request service" else "latency")
            for c, v in out.items()}


def replay(run, dl, ds=None, split=None):
    """The run's timeline with each message's one-way latency changed by
    dl(msg) microseconds and its send call's time by ds(msg) (None: 0).
    Returns {rank: predicted statistics window in ms}. With a dict as
    `split`, fills it with {rank: {part: ms}}: the first application
    thread's new window split into PARTS (replay_parts).

    Every point of every thread (sends' start and end, receipts' handler
    start and end, waits' start and end, marks) gets a new time, in the
    order of the original times (every dependency comes earlier, all nodes
    sharing one clock):
    - a receipt's handler starts when its message arrives (new send start
      + measured latency + dl) or when its thread is free, the later;
    - a point of a waiting application thread after a message of a
      non-request type was handled on another thread of its node goes on
      from that handling's end (or its own last point, the later), keeping
      the measured time in between;
    - any other point keeps the measured time since its thread's last point
      (a send's end: plus ds).
    """
    pts = []
    for m in run.msgs:
        pts.append((m.s0, 0, "s0", m))
        pts.append((m.s1, 1, "s1", m))
        pts.append((m.r1, 2, "r1", m))
        pts.append((m.r2, 3, "r2", m))
    wid = 0
    for n in run.nodes:
        for th in n.threads:
            for r in th.recs:
                if r[0] in WAITS and wait_category(r):
                    wid += 1
                    tag = (n.rank, th.index, wid, r if th.role == 0 else None)
                    pts.append((r[4], 0, "w0", tag))
                    # A release's end inside a barrier or an unlock: only
                    # looked at (split), never a point others go on from.
                    if split is not None and tag[3] and r[0] in (dt.BARRIER, dt.UNLOCK) \
                            and r[4] <= r[5] <= r[6]:
                        pts.append((r[5], 4, "wm", tag))
                    pts.append((wait_end(r), 4, "w1", tag))
                elif r[0] == dt.MARK:
                    pts.append((r[4], 0, "mark", (n.rank, th.index, r[1])))
    pts.sort(key=lambda p: (p[0], p[1]))
    ready = {}    # (rank, thread) -> (orig time, new time) of its last point
    depth = {}    # (rank, thread) -> waits open
    wake = {}     # rank -> (orig r2, new r2, thread) of the last waking receipt
    new_s0 = {}
    marks = {}
    waits = {}    # wait id -> {"w0": new, "wm": new, "w1": new, "rec": record}
    for t, _, what, x in pts:
        if what in ("s0", "s1"):
            key = (x.src, x.s_thread)
        elif what in ("r1", "r2"):
            key = (x.dst, x.r_thread)
        else:
            key = (x[0], x[1])
        last = ready.get(key)
        if what == "r1":
            s = new_s0.get(x.id, x.s0)
            arrive = s + (x.r1 - x.s0) + dl(x) * 1e3
            new = max(last[1], arrive) if last else arrive
        elif last is None:
            new = t
        else:
            new = last[1] + (t - last[0])
            w = wake.get(key[0])
            if depth.get(key, 0) > 0 and w and w[2] != key[1] and last[0] < w[0] <= t:
                new = max(last[1], w[1]) + (t - w[0])
            if what == "s1" and ds:
                new += ds(x) * 1e3
        if what in ("w0", "wm", "w1") and x[3]:
            waits.setdefault(x[2], {"rec": x[3], "rank": x[0]})[what] = new
            if what == "wm":
                continue
        ready[key] = (t, new)
        if what == "s0":
            new_s0[x.id] = new
        elif what == "r2" and not is_request(run.nodes, x):
            wake[key[0]] = (t, new, key[1])
        elif what == "w0":
            depth[key] = depth.get(key, 0) + 1
        elif what == "w1":
            depth[key] = max(0, depth.get(key, 0) - 1)
        elif what == "mark":
            marks[(key[0], x[2])] = new
    entered = {}  # barrier epoch -> its latest entry on any node, new time
    for w in waits.values():
        if w["rec"][0] == dt.BARRIER and "w0" in w:
            e = w["rec"][3]
            entered[e] = max(entered.get(e, w["w0"]), w["w0"])
    out = {}
    for n in run.nodes:
        m = {k[1]: v for k, v in marks.items() if k[0] == n.rank}
        lo = m.get(dt.MARK_RESET, m.get(dt.MARK_START))
        hi = m.get(dt.MARK_FREEZE, m.get(dt.MARK_TAKEN, m.get(dt.MARK_FINISH)))
        out[n.rank] = (hi - lo) / 1e6
        if split is not None:
            split[n.rank] = replay_parts([w for w in waits.values() if w["rank"] == n.rank],
                                         lo, hi, entered)
    return out


# What a node's application thread spent its time on, as `forecast` names
# it: the rest of its window is computing.
PARTS = ("computing", "faults", "barrier wait", "diff traffic", "lock hand-offs")


def replay_parts(waits, lo, hi, entered=None):
    """{part: ms} of one thread's window lo..hi (ns) from its waits, each
    {"rec": record, "w0", "w1", "wm" (a release's end): times}: a fault is
    faults; a barrier is diff traffic (its own release: the diffs made,
    sent and acknowledged) then barrier wait (for the others, and the
    tree's messages); a lock or condition wait is lock hand-offs; an
    unlock is diff traffic (its release) then lock hand-offs. With
    `entered` ({epoch: latest entry on any node}), "barrier late" is the
    part of the barrier wait before the last node arrived (as dsm-trace
    barriers splits it); the rest of it is the tree's messages."""
    out = {p: 0.0 for p in PARTS}
    out["barrier late"] = 0.0

    def add(part, a, b):
        a, b = max(a, lo), min(b, hi)
        if b > a:
            out[part] += (b - a) / 1e6
    for w in waits:
        kind, t0, t1 = w["rec"][0], w.get("w0"), w.get("w1")
        if t0 is None or t1 is None:
            continue
        mid = min(max(w.get("wm", t0), t0), t1)
        if kind == dt.FAULT:
            add("faults", t0, t1)
        elif kind == dt.BARRIER:
            add("diff traffic", t0, mid)
            add("barrier wait", mid, t1)
            last = (entered or {}).get(w["rec"][3])
            if last is not None:
                add("barrier late", mid, min(max(last, mid), t1))
        elif kind == dt.UNLOCK:
            add("diff traffic", t0, mid)
            add("lock hand-offs", mid, t1)
        else:
            add("lock hand-offs", t0, t1)
    out["total"] = (hi - lo) / 1e6
    out["computing"] = max(0.0, out["total"] - sum(out[p] for p in PARTS[1:]))
    return out


def net_change(this, net):
    """dl and ds for replacing this machine's network by `net`: each
    message's measured latency changes by the difference of the two
    models' latencies for its size (so what this machine added beyond its
    model, e.g. waiting for a CPU, stays), its send call by the difference
    of their send overheads."""
    def dl(m):
        return net.latency(m.size) - this.latency(m.size)

    def ds(m):
        return net.send_overhead(m.size) - this.send_overhead(m.size)
    return dl, ds
