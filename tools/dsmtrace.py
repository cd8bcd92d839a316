"""dsmtrace.py — reading dsm's trace files (DSM_TRACE, dsmrun --trace).

The format is src/base/trace.c's: a 64-byte header (magic "DSMTRACE",
version, rank, nodes, threads, page size, datagram size, injected delay,
protocol, the number of message types named and each name's length), the
message types' names (src/base/trace.h's TRACE_TYPES, 256, of 24 bytes;
earlier traces name 64), then per thread a 16-byte header
(index, role, count) and its 32-byte records (src/base/trace.h). All
little-endian. Python 3 standard library only.

Used by tools/dsm-trace (timeline, counts) and tools/dsm-model (the cost
model); every malformed input raises TraceError with a one-line message.
"""
import os
import struct

MAGIC = b"DSMTRACE"
PROFILE_MAGIC = b"DSMPROF1"  # tools/dsmprofile.py's files, given here by mistake
VERSION = 1
HDR = struct.Struct("<8s4I2IQ16s2I")  # then ntypes names of name_len bytes
THREAD = struct.Struct("<2IQ")
REC = struct.Struct("<BBHIQQQ")
assert HDR.size == 64 and THREAD.size == 16 and REC.size == 32

SEND, RECV, FAULT, BARRIER, LOCK, UNLOCK, COND, MARK, CALL, DGRAM_OUT, DGRAM_IN, TASK = \
    range(1, 13)
KIND_NAMES = {SEND: "send", RECV: "recv", FAULT: "fault", BARRIER: "barrier",
              LOCK: "lock", UNLOCK: "unlock", COND: "cond", MARK: "mark", CALL: "call",
              DGRAM_OUT: "datagram out", DGRAM_IN: "datagram in", TASK: "task"}
# TASK's sub (src/base/trace.h, enum trace_task): an OpenMP task that left its node.
TASK_OFFERED, TASK_TAKEN, TASK_RAN, TASK_DONE, TASK_HARVESTED = range(5)
MARK_START, MARK_RESET, MARK_FREEZE, MARK_TAKEN, MARK_FINISH = range(1, 6)
MARK_NAMES = {MARK_START: "start", MARK_RESET: "stats reset", MARK_FREEZE: "stats freeze",
              MARK_TAKEN: "stats taken", MARK_FINISH: "finish"}
# A thread's role (src/base/trace.c, thread_role): 0 the node's first
# application thread, 1 a thread of dsm's own, 1 + N application thread N.
ROLE_NAMES = {0: "application", 1: "service"}


class TraceError(Exception):
    """A trace that cannot be read; str() is the one-line reason."""


class Thread:
    def __init__(self, index, role, recs, others=0):
        self.index, self.role, self.recs = index, role, recs
        self.others = others  # dsm's own threads before this one (role 1)
        self.several = False  # the node has application threads beyond the first

    @property
    def application(self):
        return self.role != 1

    @property
    def name(self):
        """application (one), application 0, 1, ... (several: dsmrun --threads,
        OpenMP, pthreads), service, service 2, ... (dsm's own threads)"""
        if self.role == 0:
            return "application 0" if self.several else "application"
        if self.role >= 2:
            return "application %d" % (self.role - 1)
        return "service" if self.others == 0 else "service %d" % (self.others + 1)


class Node:
    """One node's trace: header fields, and its threads' records as tuples
    (kind, sub, peer, arg, t0, t1, t2), in the order each thread made them."""

    def __init__(self, path, rank, nodes, page_size, datagram, delay_ns, protocol, names,
                 threads):
        self.path, self.rank, self.nodes = path, rank, nodes
        self.page_size, self.datagram, self.delay_ns = page_size, datagram, delay_ns
        self.protocol, self.names, self.threads = protocol, names, threads

    def type_name(self, t):
        return self.names[t] if t < len(self.names) and self.names[t] else "type_%d" % t

    def records(self, kind=None):
        """(thread, record) for every record, or those of one kind."""
        for th in self.threads:
            for r in th.recs:
                if kind is None or r[0] == kind:
                    yield th, r

    def marks(self):
        return {r[1]: r[4] for _, r in self.records(MARK)}

    def window(self):
        """The statistics' window: from dsm_stats_reset (else the start) to
        dsm_stats_freeze (else the moment the report was taken, else the end)."""
        m = self.marks()
        lo = m.get(MARK_RESET, m.get(MARK_START))
        hi = m.get(MARK_FREEZE, m.get(MARK_TAKEN, m.get(MARK_FINISH)))
        if lo is None or hi is None:
            raise TraceError("%s: no start or finish mark; the run did not end "
                             "in dsm_finish" % self.path)
        return lo, hi


def parse(data, path="<trace>"):
    """Parses one node's trace file from bytes."""
    if data[:len(PROFILE_MAGIC)] == PROFILE_MAGIC:
        raise TraceError("%s: a dsm sharing profile (dsmrun --profile), not a trace: "
                         "dsm-profile reads it; dsmrun --trace FILE writes a trace" % path)
    if len(data) < HDR.size:
        raise TraceError("%s: %d bytes, shorter than a trace header (%d); not a dsm trace "
                         "or cut short" % (path, len(data), HDR.size))
    (magic, version, rank, nodes, nthreads, page_size, datagram, delay_ns, proto, ntypes,
     name_len) = HDR.unpack_from(data, 0)
    if magic != MAGIC:
        raise TraceError("%s: not a dsm trace (bad magic %r)" % (path, magic))
    if version != VERSION:
        raise TraceError("%s: trace version %d, this tool reads %d" % (path, version, VERSION))
    if not (1 <= nodes <= 65535 and rank < nodes and 1 <= ntypes <= 256
            and 1 <= name_len <= 256 and nthreads <= 1024):
        raise TraceError("%s: inconsistent header (rank %d of %d nodes, %d threads, "
                         "%d type names of %d bytes)"
                         % (path, rank, nodes, nthreads, ntypes, name_len))
    at = HDR.size + ntypes * name_len
    if at > len(data):
        raise TraceError("%s: cut short in the message types' names (%d bytes, %d needed)"
                         % (path, len(data), at))
    names = data[HDR.size:at]
    tnames = [names[i * name_len:(i + 1) * name_len].split(b"\0")[0].decode("ascii", "replace")
              for i in range(ntypes)]
    threads = []
    for _ in range(nthreads):
        if at + THREAD.size > len(data):
            raise TraceError("%s: cut short in thread header %d" % (path, len(threads)))
        index, role, count = THREAD.unpack_from(data, at)
        at += THREAD.size
        end = at + count * REC.size
        if end > len(data):
            raise TraceError("%s: thread %d claims %d records, the file holds fewer"
                             % (path, index, count))
        recs = list(REC.iter_unpack(data[at:end]))
        for r in recs:
            if not SEND <= r[0] <= TASK:
                raise TraceError("%s: record of unknown kind %d in thread %d"
                                 % (path, r[0], index))
        threads.append(Thread(index, role, recs,
                              others=sum(1 for t in threads if t.role == 1)))
        at = end
    several = any(t.role >= 2 for t in threads)
    for t in threads:
        t.several = several
    if at != len(data):
        raise TraceError("%s: %d bytes after the last thread" % (path, len(data) - at))
    return Node(path, rank, nodes, page_size, datagram, delay_ns,
                proto.split(b"\0")[0].decode("ascii", "replace"), tnames, threads)


def load_node(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TraceError("%s: %s" % (path, e.strerror))
    return parse(data, path)


def load(prefix):
    """Every node's trace of one run: PREFIX.0 .. PREFIX.<nodes-1> (or the
    run of one file named PREFIX.<rank>). Checks they belong together."""
    first = prefix + ".0"
    if not os.path.exists(first):
        base, _, rank = prefix.rpartition(".")
        if rank.isdigit() and os.path.exists(base + ".0"):
            prefix, first = base, base + ".0"
        else:
            raise TraceError("%s: no such trace (expected %s.0, %s.1, ... as dsmrun --trace "
                             "writes them)" % (prefix, prefix, prefix))
    n0 = load_node(first)
    nodes = [n0]
    for r in range(1, n0.nodes):
        n = load_node("%s.%d" % (prefix, r))
        if n.nodes != n0.nodes or n.rank != r:
            raise TraceError("%s.%d: node %d of %d, expected node %d of %d (files of "
                             "different runs?)" % (prefix, r, n.rank, n.nodes, r, n0.nodes))
        nodes.append(n)
    if n0.rank != 0:
        raise TraceError("%s: holds node %d, expected node 0" % (first, n0.rank))
    return nodes


# ---- messages --------------------------------------------------------------

class Msg:
    """One message, its send matched with its receipt."""
    __slots__ = ("src", "dst", "type", "size", "s_thread", "s0", "s1", "r_thread", "r0", "r1",
                 "r2", "id")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))


def match_messages(nodes):
    """Pairs every send with its receipt. The transport delivers each
    peer's messages in order, so the k-th message of a type from A to B is
    the k-th of that type B received from A. Returns (matched, unmatched
    sends, unmatched receipts); a send the run ended before delivering stays
    unmatched."""
    sends, recvs = {}, {}
    for n in nodes:
        for th, r in n.records(SEND):
            sends.setdefault((n.rank, r[2], r[1]), []).append((r[4], th.index, r))
        for th, r in n.records(RECV):
            recvs.setdefault((r[2], n.rank, r[1]), []).append((r[5], th.index, r))
    out, lone_s, lone_r = [], 0, 0
    for key in set(sends) | set(recvs):
        s = sorted(sends.get(key, []), key=lambda x: x[0])
        r = sorted(recvs.get(key, []), key=lambda x: x[0])
        for i in range(min(len(s), len(r))):
            ss, rr = s[i][2], r[i][2]
            out.append(Msg(src=key[0], dst=key[1], type=key[2], size=ss[3], s_thread=s[i][1],
                           s0=ss[4], s1=ss[5], r_thread=r[i][1], r0=rr[4], r1=rr[5], r2=rr[6]))
        lone_s += max(0, len(s) - len(r))
        lone_r += max(0, len(r) - len(s))
    out.sort(key=lambda m: m.s0)
    for i, m in enumerate(out):
        m.id = i + 1
    return out, lone_s, lone_r


def match_tasks(nodes):
    """The OpenMP tasks that left their node, as two flows each: (kind,
    from_node, from_thread, from_ns, to_node, to_thread, to_ns, address),
    kind "steal" (offered by its creator, taken by another node) or
    "completion" (handed back by that node, taken in by the creator). A task
    is known by its address, the same on every node; an address used again
    later is another task, so each record pairs with the latest record of the
    other end before it."""
    ends = {}
    for n in nodes:
        for th, r in n.records(TASK):
            ends.setdefault((r[1], r[6]), []).append((r[4], r[5], n.rank, th.index, r[2]))
    flows = []
    for (first, last, kind) in ((TASK_OFFERED, TASK_TAKEN, "steal"),
                                (TASK_DONE, TASK_HARVESTED, "completion")):
        for (sub, addr), lst in ends.items():
            if sub != last:
                continue
            starts = sorted(ends.get((first, addr), []))
            for t0, t1, rank, thread, peer in lst:
                before = [s for s in starts if s[0] <= t1 and
                          (s[2] == peer if kind == "steal" else s[4] == rank)]
                if before:
                    s = before[-1]
                    flows.append((kind, s[2], s[3], s[1], rank, thread, t0, addr))
    return flows


def sent_counts(nodes, windowed=True):
    """{rank: {type name: [count, bytes]}} of messages sent, within each
    node's statistics window (as the statistics count them)."""
    out = {}
    for n in nodes:
        lo, hi = n.window() if windowed else (0, 1 << 64)
        c = out.setdefault(n.rank, {})
        for _, r in n.records(SEND):
            if lo <= r[4] <= hi:
                e = c.setdefault(n.type_name(r[1]), [0, 0])
                e[0] += 1
                e[1] += r[3]
    return out


# ---- locks -----------------------------------------------------------------

def lock_summary(nodes, slow_ns=1000000, top=5):
    """Per node, where its lock time went (issue 42: Barnes's hand-overs):
    {rank: {acquires, remote, locks, remote_locks, wait_median_us,
    wait_mean_us, wait_ms, slow, slow_ms, apply_ms, unlock_ms, top}} within
    the statistics' window. `remote` are acquires that needed another node
    (sub 1); their wait is entry to grant (t0..t1), their notices' applying
    t1..t2; `slow` are waits over slow_ns; `top` the locks most often taken
    from another node, as (id, count)."""
    out = {}
    for n in nodes:
        lo, hi = n.window()
        locks = [r for _, r in n.records(LOCK) if lo <= r[4] <= hi]
        remote = [r for r in locks if r[1] == 1]
        waits = sorted(r[5] - r[4] for r in remote)
        per = {}
        for r in remote:
            per[r[3]] = per.get(r[3], 0) + 1
        slow = [w for w in waits if w > slow_ns]
        mid = len(waits) // 2
        median = (waits[mid] if len(waits) % 2 else (waits[mid - 1] + waits[mid]) / 2) if waits else 0
        unlock_ns = sum(r[6] - r[4] for _, r in n.records(UNLOCK) if lo <= r[4] <= hi)
        out[n.rank] = {
            "acquires": len(locks), "remote": len(remote),
            "locks": len({r[3] for r in locks}), "remote_locks": len(per),
            "wait_median_us": median / 1e3,
            "wait_mean_us": (sum(waits) / len(waits) / 1e3) if waits else 0.0,
            "wait_ms": sum(waits) / 1e6, "slow": len(slow), "slow_ms": sum(slow) / 1e6,
            "apply_ms": sum(r[6] - r[5] for r in remote) / 1e6, "unlock_ms": unlock_ns / 1e6,
            "top": sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))[:top],
        }
    return out


# ---- barriers and faults: where a node's waits went --------------------------

def barrier_summary(nodes):
    """Per node, where its barrier time went, within the statistics' window:
    {rank: {barriers, ms, release_ms, late_ms, after_ms, one_clock}}.
    `release_ms`: its own release (the diffs of its writes, t0..t1);
    `late_ms`: waiting for the last node to arrive (from its release's end
    to the latest entry of the same epoch on any node); `after_ms`: the rest,
    from the last arrival to its leaving (the tree's messages up and down,
    the release's notices applied); the three add up to `ms`. The split
    needs the nodes' clocks to be one (nodes on one host): where some node
    left an epoch before another entered it, they are not, `one_clock` is
    False and late_ms and after_ms are None."""
    entered, spans = {}, {}
    for n in nodes:
        lo, hi = n.window()
        for _, r in n.records(BARRIER):
            epoch, t0, t1, t2 = r[3], r[4], r[5], r[6]
            entered[epoch] = max(entered.get(epoch, t0), t0)
            if lo <= t0 <= hi:
                spans.setdefault(n.rank, []).append((epoch, t0, t1 if t1 else t0, t2))
    one_clock = all(t2 >= entered[e] for v in spans.values() for e, _, _, t2 in v)
    out = {}
    for n in nodes:
        v = spans.get(n.rank, [])
        total = sum(t2 - t0 for _, t0, _, t2 in v)
        release = sum(t1 - t0 for _, t0, t1, _ in v)
        late = sum(max(0, min(entered[e], t2) - t1) for e, _, t1, t2 in v)
        out[n.rank] = {"barriers": len(v), "ms": total / 1e6, "release_ms": release / 1e6,
                       "late_ms": late / 1e6 if one_clock else None,
                       "after_ms": (total - release - late) / 1e6 if one_clock else None,
                       "one_clock": one_clock}
    return out


def fault_summary(nodes):
    """Per node, its faults within the statistics' window and what they
    waited for: {rank: {"read"|"write": {faults, ms, asked, asked_ms}}},
    `asked` the faults that sent a message (a fetch, a request to a
    manager: they waited on another node), the rest served on the node (a
    twin, a protection change, a page already here)."""
    out = {}
    for n in nodes:
        lo, hi = n.window()
        kinds = {"read": dict(faults=0, ms=0.0, asked=0, asked_ms=0.0),
                 "write": dict(faults=0, ms=0.0, asked=0, asked_ms=0.0)}
        for th in n.threads:
            recs = th.recs
            for j, r in enumerate(recs):
                if r[0] != FAULT or not lo <= r[4] <= hi:
                    continue
                k = kinds["write" if r[1] else "read"]
                ms = (r[5] - r[4]) / 1e6
                k["faults"] += 1
                k["ms"] += ms
                # A record is made as it ends (a fault after what it did):
                # the records just before it that ended within it.
                asked = False
                for q in range(j - 1, -1, -1):
                    if max(recs[q][4:7]) < r[4]:
                        break
                    asked |= recs[q][0] == SEND
                if asked:
                    k["asked"] += 1
                    k["asked_ms"] += ms
        out[n.rank] = kinds
    return out


# ---- the latency of one message, step by step (seed 004, Fig. 6) ------------

# The steps of a port message from the sender's dsm_msg_send to the
# receiver's dsm_msg_recv returning it, each from one stamp to the next:
BREAKDOWN_STEPS = [
    ("send call", "dsm_msg_send: the right checked, flow control, the message's header"),
    ("encode and authentication", "ipc header, datagram, payload MAC, send window, header seal"),
    ("kernel send and wire", "sendmmsg until the datagram is in the receiving socket (the "
                             "kernel's stamp); on loopback the wire is that copy, inside the call"),
    ("receive wake-up", "until the receiving thread's recvmmsg returns it"),
    ("decode", "datagram check (MAC), order, delivery, ipc parse and dispatch"),
    ("queue", "the port: its turn, the sender's right, onto the queue, waiters woken"),
    ("receive call", "dsm_msg_recv sees it, takes it, returns"),
]


def breakdown(nodes, msg_type, lo=None, hi=None):
    """Every port message (type msg_type) between two nodes, matched end to
    end: [(step durations in ns, ...)] in BREAKDOWN_STEPS' order, for the
    messages whose dsm_msg_send began within [lo, hi) (default: each node's
    statistics window). Needs the TRACE_CALL and datagram records (a UDP
    run traced with this version). Matching: the sender's call holds its
    ipc send and the datagram's system call (each recorded as it ended,
    so just before the call's record); the datagram's sequence
    number finds it at the receiver, whose handler runs next on the same
    thread; the receiver's first dsm_msg_recv that took a message of that
    sender after the handler ended is the one that got it."""
    import bisect
    dgram_in, takes = {}, {}
    for n in nodes:
        for th in n.threads:
            for j, r in enumerate(th.recs):
                if r[0] == DGRAM_IN:
                    dgram_in.setdefault((n.rank, r[2], r[3]), (th, j))
                elif r[0] == CALL and r[1] == 1:
                    takes.setdefault((n.rank, r[2]), []).append(r)
    for v in takes.values():
        v.sort(key=lambda r: r[5])
    take_t1 = {k: [r[5] for r in v] for k, v in takes.items()}
    out = []
    for a in nodes:
        wlo, whi = a.window()
        lo_a = wlo if lo is None else lo
        hi_a = whi if hi is None else hi
        for th in a.threads:
            recs = th.recs
            for i, call in enumerate(recs):
                if call[0] != CALL or call[1] != 0 or not lo_a <= call[4] < hi_a:
                    continue
                if call[2] >= len(nodes) or call[2] == a.rank:
                    continue
                b = call[2]
                # Recorded as they ended: the datagram, the ipc send, the call.
                send = _before(recs, i, lambda r: r[0] == SEND and r[2] == b)
                if not send or send[1] != msg_type or send[4] < call[4]:
                    continue
                dout = _before(recs, i, lambda r: r[0] == DGRAM_OUT and r[2] == b,
                               first=True)
                if not dout or dout[4] < send[4]:
                    continue
                hit = dgram_in.get((b, a.rank, dout[3]))
                if not hit:
                    continue
                rth, j = hit
                din = rth.recs[j]
                handler = _after(rth.recs, j + 1, lambda r: r[0] == RECV and r[2] == a.rank)
                if not handler or handler[1] != msg_type or not din[4]:
                    continue
                key = (b, a.rank)
                k = bisect.bisect_left(take_t1.get(key, []), handler[6])
                if k >= len(take_t1.get(key, [])):
                    continue
                take = takes[key][k]
                stamps = [call[4], send[4], dout[4], din[4], din[5], handler[5], handler[6],
                          take[6]]
                if any(y < x for x, y in zip(stamps, stamps[1:])):
                    continue  # a clock step, or a match gone wrong: left out
                out.append(tuple(y - x for x, y in zip(stamps, stamps[1:])))
    return out


def _before(recs, end, pred, limit=16, first=False):
    """The last record before `end` (within `limit`) for which pred holds;
    with `first`, the first of the run of such records that ends there (a
    datagram sent twice at once, on a path that lost some)."""
    for j in range(end - 1, max(-1, end - 1 - limit), -1):
        if pred(recs[j]):
            while first and j > 0 and pred(recs[j - 1]):
                j -= 1
            return recs[j]
    return None


def _after(recs, start, pred, limit=64):
    """The first record from `start` (within `limit`) for which pred holds."""
    for j in range(start, min(len(recs), start + limit)):
        if pred(recs[j]):
            return recs[j]
    return None
