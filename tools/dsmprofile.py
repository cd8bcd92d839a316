"""dsmprofile.py — reading and explaining dsm's sharing profiles (DSM_PROFILE).

The files are src/base/profile.c's: per node FILE.<rank>, a 384-byte header
(magic "DSMPROF1", version, rank, nodes, threads, the region's layout, the
run's start and end, protocol, executable), the node's /proc/self/maps,
then per thread a 16-byte header (index, role, bytes) and its records: a
56-byte struct profile_rec (src/base/profile.h) followed by `nextra`
64-bit words (a call stack, or the bytes a diff wrote). All little-endian.

What this module adds to the records:
- program counters become functions and source lines (LLVM's addr2line,
  else binutils', over the binary's debug information, one call per
  object; nm for the names of shared globals), frames inside dsm and the
  C library left out;
- addresses become allocation sites (the program's call of malloc,
  dsm_malloc, G_MALLOC, or the global variable, or the master's stack);
- diffs become sharing: in one interval between barriers, the pages two
  nodes wrote are *true* sharing where their bytes overlap and *false*
  sharing where they are disjoint; a fault that fetched a page is a *true*
  miss when another node wrote a byte its access touched (the faulting
  instruction's width, from objdump) since this node last fetched the page, *false* when others wrote only other bytes of it, and
  *cold* when nobody else wrote it (a first touch).

Python 3 standard library, and addr2line, nm and objdump. Every malformed input raises
ProfileError with a one-line message.
"""
import bisect
import collections
import os
import re
import shutil
import struct
import subprocess

import dsmaccess

MAGIC = b"DSMPROF1"
TRACE_MAGIC = b"DSMTRACE"  # tools/dsmtrace.py's files, given here by mistake
VERSION = 1
HDR = struct.Struct("<8s4I3Q5Q2Q16s256sQ")
THREAD = struct.Struct("<2IQ")
REC = struct.Struct("<BBHIIiQQQQQ")
assert HDR.size == 384 and THREAD.size == 16 and REC.size == 56

(FAULT, FETCH, DIFF, INVAL, MIGRATE, ALLOC, FREE, BARRIER, LOCK, LOCKSTAT, RELEASE,
 STACK, INTERVAL, DIFFSUM, FRAMES) = range(1, 16)
KIND_NAMES = {FAULT: "fault", FETCH: "fetch", DIFF: "diff", INVAL: "invalidation",
              MIGRATE: "migration", ALLOC: "alloc", FREE: "free", BARRIER: "barrier",
              LOCK: "lock", LOCKSTAT: "lock counts", RELEASE: "release", STACK: "stack",
              INTERVAL: "interval", DIFFSUM: "diff counts", FRAMES: "frames"}
WRITE = 0x01
STACKED = 0x80
BITMAP = 0x80
FETCH_FAULT, FETCH_AHEAD, FETCH_WRITE_AHEAD, FETCH_PULL, FETCH_GET = range(5)
DIFF_SENT, DIFF_HOME, DIFF_LAZY = range(3)
ALLOC_HEAP, ALLOC_STACK = range(2)
SYNC_USER_ID_MAX = 0x5fffffff  # src/sync/sync.h: ids above are dsm's own
BYTES_ALL = 32                 # src/base/profile.h: PROFILE_BYTES_ALL


class ProfileError(Exception):
    """A profile that cannot be read; str() is the one-line reason."""


class Rec:
    """One record: the struct's fields, the extra words, its node and thread."""
    __slots__ = ("kind", "sub", "page", "epoch", "lock", "t", "dur", "a", "b", "site",
                 "extra", "node", "thread")

    def __init__(self, fields, extra, node, thread):
        (self.kind, self.sub, _n, self.page, self.epoch, self.lock, self.t, self.dur,
         self.a, self.b, self.site) = fields
        self.extra, self.node, self.thread = extra, node, thread


class Mapping:
    __slots__ = ("start", "end", "perms", "offset", "path")

    def __init__(self, start, end, perms, offset, path):
        self.start, self.end, self.perms, self.offset, self.path = start, end, perms, offset, path


def parse_maps(text):
    """The executable mappings of a /proc/PID/maps text, sorted by start."""
    out = []
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 5 or "-" not in parts[0]:
            continue
        lo, hi = parts[0].split("-", 1)
        try:
            m = Mapping(int(lo, 16), int(hi, 16), parts[1], int(parts[2], 16),
                        parts[5].strip() if len(parts) > 5 else "")
        except ValueError:
            continue
        if "x" in m.perms and m.path.startswith("/"):
            out.append(m)
    out.sort(key=lambda m: m.start)
    return out


class Node:
    """One node's profile: its header fields, maps and records."""

    def __init__(self, path, fields, maps_text, threads):
        (_magic, _version, self.rank, self.nodes, _nthreads, self.page_size, self.npages,
         self.arena_pages, self.base, self.gbase, self.gsize, self.gpages, self.prestart_size,
         self.t_start, self.t_end, protocol, exe, _maps_len) = fields
        self.path = path
        self.protocol = protocol.split(b"\0", 1)[0].decode("ascii", "replace")
        self.exe = exe.split(b"\0", 1)[0].decode("utf-8", "replace")
        self.maps = parse_maps(maps_text)
        self.threads = threads  # [(index, role, [Rec])]

    def records(self, kind=None):
        for _index, _role, recs in self.threads:
            for r in recs:
                if kind is None or r.kind == kind:
                    yield r

    def page_addr(self, page):
        """The application's address of a page (the globals' pages at theirs)."""
        if page < self.gpages:
            return self.gbase + page * self.page_size
        return self.base + page * self.page_size

    def seconds(self):
        return (self.t_end - self.t_start) / 1e9


def parse_records(data, node, thread):
    """The records of one thread's bytes."""
    out = []
    pos, n = 0, len(data)
    unpack = REC.unpack_from
    while pos < n:
        if n - pos < REC.size:
            raise ProfileError("node %d: a record cut short at byte %d of thread %d"
                               % (node, pos, thread))
        f = unpack(data, pos)
        pos += REC.size
        nextra = f[2]
        if nextra:
            if n - pos < 8 * nextra:
                raise ProfileError("node %d: a record's %d extra words cut short (thread %d)"
                                   % (node, nextra, thread))
            extra = struct.unpack_from("<%dQ" % nextra, data, pos)
            pos += 8 * nextra
        else:
            extra = ()
        if not 1 <= f[0] <= FRAMES:
            raise ProfileError("node %d: a record of unknown kind %d (thread %d)"
                               % (node, f[0], thread))
        out.append(Rec(f, extra, node, thread))
    return out


def read_node(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ProfileError("cannot read %s: %s" % (path, e.strerror))
    if data[:len(TRACE_MAGIC)] == TRACE_MAGIC:
        raise ProfileError("%s: a dsm trace (dsmrun --trace), not a profile: dsm-trace and "
                           "dsm-model read it; dsmrun --profile FILE writes a profile" % path)
    if len(data) < HDR.size:
        raise ProfileError("%s: too short for a profile (%d bytes)" % (path, len(data)))
    fields = HDR.unpack_from(data, 0)
    if fields[0] != MAGIC:
        raise ProfileError("%s: not a dsm profile (dsmrun --profile FILE writes them)" % path)
    if fields[1] != VERSION:
        raise ProfileError("%s: profile version %d, this tool reads %d" % (path, fields[1], VERSION))
    pos = HDR.size
    maps_len = fields[-1]
    if len(data) < pos + maps_len:
        raise ProfileError("%s: cut short in its maps" % path)
    maps_text = data[pos:pos + maps_len].decode("utf-8", "replace")
    pos += maps_len
    threads = []
    for _ in range(fields[4]):
        if len(data) < pos + THREAD.size:
            raise ProfileError("%s: cut short in a thread's header" % path)
        index, role, nbytes = THREAD.unpack_from(data, pos)
        pos += THREAD.size
        if len(data) < pos + nbytes:
            raise ProfileError("%s: thread %d's records cut short" % (path, index))
        threads.append((index, role, parse_records(data[pos:pos + nbytes], fields[2], index)))
        pos += nbytes
    return Node(path, fields, maps_text, threads)


def load(prefix):
    """Every node's profile of one run: PREFIX.0, PREFIX.1, ... as many as
    node 0's header says the job had (or the run of one file named
    PREFIX.<rank>)."""
    if not os.path.exists(prefix + ".0"):
        base, _, rank = prefix.rpartition(".")
        if rank.isdigit() and os.path.exists(base + ".0"):
            prefix = base  # one node's file named: the run's
    first = read_node(prefix + ".0")
    nodes = [first]
    for r in range(1, first.nodes):
        nodes.append(read_node("%s.%d" % (prefix, r)))
    for r, n in enumerate(nodes):
        if n.rank != r or n.nodes != first.nodes:
            raise ProfileError("%s: node %d of %d, expected node %d of %d (files of two runs?)"
                               % (n.path, n.rank, n.nodes, r, first.nodes))
    return nodes


# ---- bytes ------------------------------------------------------------------

ONES = re.compile("1+")
M64 = (1 << 64) - 1


def bytes_wanted(page, epoch):
    """src/base/profile.c's profile_bytes_wanted: whether the nodes kept
    the bytes of their diffs of `page` in interval `epoch`."""
    if epoch < BYTES_ALL:
        return True
    r = 1
    while r * 2 <= epoch // BYTES_ALL:
        r *= 2
    h = ((page * 0x9E3779B97F4A7C15) & M64) ^ ((epoch * 0xC2B2AE3D27D4EB4F) & M64)
    h ^= h >> 31
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    return (h & (r - 1)) == 0


def bits_of(rec):
    """The bytes a diff record wrote as an integer, bit i for byte i of the
    page: the representation the report works in (unions, overlaps and
    counts of a page's bytes are single integer operations); runs are made
    from it only where they are shown or compared run by run."""
    if rec.sub & BITMAP:
        words = rec.extra
        return int.from_bytes(struct.pack("<%dQ" % len(words), *words), "little")
    x = 0
    for w in rec.extra:
        s, e = w & 0xFFFFFFFF, w >> 32
        if e > s:
            x |= ((1 << (e - s)) - 1) << s
    return x


def bits_of_runs(runs):
    x = 0
    for s, e in runs:
        x |= span_mask(s, e)
    return x


def runs_of_bits(x, page_size):
    """bits_of's integer as sorted, maximal [start, end) ranges."""
    if not x:
        return []
    return [m.span() for m in ONES.finditer(bin(x)[:1:-1][:page_size])]


if hasattr(int, "bit_count"):
    def count_bits(x):
        return x.bit_count()
else:  # before Python 3.10
    def count_bits(x):
        return bin(x).count("1")


def span_mask(lo, hi):
    """Bits lo .. hi - 1."""
    return ((1 << (hi - lo)) - 1) << lo


def merge_runs(runs):
    """A sorted, merged list of [start, end) ranges."""
    if len(runs) < 2:
        return list(runs)
    out = []
    for s, e in sorted(runs):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def runs_bytes(runs):
    if not runs:
        return 0
    starts, ends = zip(*runs)
    return sum(ends) - sum(starts)


def intersect(a, b):
    """The ranges two merged lists share."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def classify_writers(by_node):
    """One page in one interval: {node: merged runs}. Returns (kind, shared,
    writers): "true" when two nodes wrote a byte in common (shared: those
    bytes), "false" when two or more nodes wrote only disjoint bytes, None
    with fewer than two writers."""
    writers = sorted(n for n, r in by_node.items() if r)
    if len(writers) < 2:
        return None, [], writers
    shared = []
    for i, a in enumerate(writers):
        for b in writers[i + 1:]:
            shared.extend(intersect(by_node[a], by_node[b]))
    shared = merge_runs(shared)
    return ("true" if shared else "false"), shared, writers


def classify_bits(by_node):
    """classify_writers for bits_of's integers: (kind, shared bits, writers)."""
    writers = sorted(n for n, b in by_node.items() if b)
    if len(writers) < 2:
        return None, 0, writers
    seen = shared = 0
    for n in writers:
        shared |= seen & by_node[n]
        seen |= by_node[n]
    return ("true" if shared else "false"), shared, writers


def interleave(by_node):
    """How the writers' bytes of one page interleave: (grain, blocks,
    borders). grain: the shortest stretch of the page that one node wrote
    before another node's bytes begin (what a layout change must
    separate); blocks: whether each node's bytes form one stretch (a block
    per node, with borders inside the page); borders: the offsets where one
    node's stretch ends and another's begins."""
    marks = []
    for n, runs in by_node.items():
        for s, e in runs:
            marks.append((s, e, n))
    marks.sort()
    stretches = []  # maximal sequences of one node's runs
    for s, e, n in marks:
        if stretches and stretches[-1][2] == n:
            stretches[-1][1] = e
        else:
            stretches.append([s, e, n])
    if len(stretches) < 2:
        return None, True, []
    borders = [stretches[i + 1][0] for i in range(len(stretches) - 1)]
    grains = [stretches[i + 1][0] - stretches[i][0] for i in range(len(stretches) - 1)]
    nodes_seen = collections.Counter(st[2] for st in stretches)
    return min(grains), all(c == 1 for c in nodes_seen.values()), borders


def advice(kind, page_size, grain=None, blocks=False, borders=(), neighbours=()):
    """What a user can change, in a sentence or two, for data whose pages
    are shared `kind` ("false" or "true"): grain, blocks and borders as
    interleave() gives them; neighbours: the data that other nodes wrote
    on its pages where they wrote none of its own bytes."""
    if kind == "true":
        return ("the nodes write the same bytes between two synchronisations: they communicate "
                "through them, and padding will not help; write them less often (accumulate "
                "in a private variable and combine once, as a reduction does), or let one node "
                "own them (a schedule that gives the same iterations to the same node).")
    if kind != "false":
        return ""
    small = 4096
    parts = []
    if blocks:
        parts.append("each node writes one stretch of the page, and the border between two "
                     "nodes' parts lies inside it: align each node's part to %d bytes "
                     "(DSM_PAGE_SIZE), e.g. by rounding the per-node block up to a multiple of "
                     "it, or let one node write the page holding the border" % page_size)
    elif grain is not None:
        parts.append("the nodes' bytes alternate every %d bytes of a %d-byte page: give each "
                     "node a contiguous part of whole pages (a block schedule, e.g. "
                     "schedule(static) without a chunk, or chunks of %d bytes), or pad each "
                     "node's element to %d bytes" % (grain, page_size, page_size, page_size))
    if page_size > small and borders:
        if all(b % small == 0 for b in borders):
            parts.append("DSM_PAGE_SIZE=%d would put the writers on different pages" % small)
        elif blocks:
            parts.append("with DSM_PAGE_SIZE=%d only the 4 KiB around a border would be shared"
                         % small)
    if neighbours:
        parts.append("other nodes wrote only neighbouring data on its pages (%s): give it "
                     "pages of its own (align it to %d bytes, or pad between it and its "
                     "neighbours)" % (", ".join(neighbours[:3]), page_size))
    if not parts:
        parts.append("separate the nodes' data by DSM_PAGE_SIZE (%d bytes)" % page_size)
    return "; ".join(parts) + "."


# ---- code: ELF, addr2line, nm ----------------------------------------------

def elf_loads(path):
    """(e_type, [(p_offset, p_vaddr, p_filesz)]) of a 64-bit little-endian
    ELF file's PT_LOAD segments, or None if it is not one."""
    try:
        with open(path, "rb") as f:
            h = f.read(64)
            if len(h) < 64 or h[:4] != b"\x7fELF" or h[4] != 2 or h[5] != 1:
                return None
            e_type = struct.unpack_from("<H", h, 16)[0]
            e_phoff, = struct.unpack_from("<Q", h, 32)
            e_phentsize, e_phnum = struct.unpack_from("<HH", h, 54)
            f.seek(e_phoff)
            ph = f.read(e_phentsize * e_phnum)
    except OSError:
        return None
    loads = []
    for i in range(e_phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
            "<IIQQQQ", ph, i * e_phentsize)
        if p_type == 1:
            loads.append((p_offset, p_vaddr, p_filesz))
    return e_type, loads


RUNTIME_FUNC = re.compile(r"^(dsm_|__dsm_|__kmpc_|__wrap_|__real_|__tsan_|kmp_|__kmp|omp_|"
                          r"profile_|stack_private|sync_|mem_|coherence_|hlrc_|lrc_|erc_|sc_|"
                          r"on_segv|__restore_rt|_start$|__libc_start|backtrace|"
                          r"parallel_|runtime_|G_MALLOC)")
DSM_SOURCE = re.compile(r"/src/(base|net|ipc|mem|coherence|sync|parallel|omp|runtime|start)/")
SYSTEM_OBJECT = re.compile(r"^/(usr/)?lib(32|64|x32)?/|/ld-linux|/libc[.-]|/libm[.-]|/libgcc|"
                           r"/libstdc\+\+|/libpthread|/libdsm[.-]")


# The functions a compiler outlines an OpenMP construct's body into:
# clang's .omp_outlined._debug__.N, .omp_task_entry.; flang's _QQmain..omp_par
OUTLINED = re.compile(r"omp_outlined|\.omp_par|omp_task_entry")
# dsm's runtime: what its OpenMP runtime, its parallel loops and its
# pthreads allocate (a region's description, a task) is its own data, not
# the program's; the program's malloc (runtime/heap.c) and omp_alloc are
# dsm's code allocating for the program: allocators, as dsm_malloc is.
DSM_OWN = re.compile(r"/src/(omp|parallel|runtime)/|^(__kmpc_|__kmp|kmp_)")
DSM_ALLOCATOR = re.compile(r"/src/(mem|base)/|/src/runtime/heap\.c|/src/omp/omp_(api|fortran)\.c")
# What dsm's own data is, by the file (or function) that made it
DSM_DATA = [(re.compile(p), name) for p, name in (
    (r"/src/omp/region", "OpenMP region descriptions"),
    (r"/src/omp/task", "OpenMP task records"),
    (r"/src/omp/doacross", "OpenMP doacross (ordered depend) words"),
    (r"/src/omp/team_single", "OpenMP single and copyprivate words"),
    (r"/src/omp/affinity", "OpenMP places"),
    (r"/src/omp/|^(__kmpc_|__kmp|kmp_)", "OpenMP runtime data"),
    (r"/src/parallel/", "parallel loops' shared state"),
    (r"/src/runtime/pthreads", "pthreads tables"))]


class Loc:
    """A source location: function, file, line, and the object it is in;
    for a function outlined from an OpenMP construct, the construct's own
    location (region: the pragma's file and line)."""
    __slots__ = ("func", "file", "line", "obj", "inlined", "region")

    def __init__(self, func, file, line, obj, inlined=()):
        self.func, self.file, self.line, self.obj, self.inlined = func, file, line, obj, inlined
        self.region = None

    def key(self):
        return (self.func, self.file, self.line)

    def known(self):
        return self.file not in ("", "??") and self.line > 0

    def runtime(self):
        """Inside dsm, the C library or the loader: not the program's code."""
        return bool(RUNTIME_FUNC.match(self.func) or DSM_SOURCE.search(self.file) or
                    SYSTEM_OBJECT.search(self.obj))

    def dsm_own(self):
        """In dsm's runtime proper (its OpenMP runtime, parallel loops,
        pthreads), not in an allocator that serves the program."""
        return bool((DSM_OWN.search(self.file) or DSM_OWN.search(self.func)) and
                    not DSM_ALLOCATOR.search(self.file))

    def name(self):
        """The function as a reader knows it: an outlined function by the
        construct it came from."""
        if self.region:
            return "OpenMP region at %s:%d" % (short_path(self.region[0]), self.region[1])
        return self.func

    def text(self):
        if self.known():
            return "%s (%s:%d)" % (self.name(), short_path(self.file), self.line)
        if self.region:
            return "%s (line unknown)" % self.name()
        if self.func and self.func != "??":
            return "%s (%s)" % (self.func, os.path.basename(self.obj))
        return "?? (%s)" % os.path.basename(self.obj or "?")


def short_path(p):
    """A source file as a reader finds it: relative to here if below it."""
    if not p or p == "??":
        return "??"
    try:
        rel = os.path.relpath(p)
        if not rel.startswith(".."):
            return rel
    except ValueError:
        pass
    parts = p.split("/")
    return "/".join(parts[-2:])


def find_addr2line():
    """LLVM's addr2line where it is (dsmcc needs LLVM anyway), else
    binutils'. binutils 2.40 names the compile unit's file for every line
    of clang's DWARF 5 whose #line directives name another (dsmcc's
    m4-expanded PARMACS sources: /tmp/dsmcc.X/fft.c for fft.C); LLVM's
    names the file the line is in."""
    for name in ("llvm-addr2line", "llvm-addr2line-19", "llvm-addr2line-14", "addr2line"):
        path = shutil.which(name)
        if path:
            return path
    return None


# gdb's names of the registers a frame's locals are placed from (x86-64, aarch64)
FRAME_REGS = {"rsp": "sp", "sp": "sp", "rbp": "fp", "x29": "fp"}


def parse_scope(text, va):
    """[(name, base, offset, length)] of the locals in memory that gdb's
    `info scope *VA` lists, base the frame's "cfa", "sp" or "fp" (gdb
    describes each place from the function's debug information; of a
    variable in several places, the one at VA). Registers, constants and
    values computed on the DWARF stack are no memory: left out."""
    out = []
    for block in re.split(r"^Symbol ", text, flags=re.M)[1:]:
        m = re.match(r"(\S+) is ", block)
        ln = re.search(r"length (\d+)\.\s*$", block)
        if not m or not ln:
            continue
        desc = block
        if "multi-location" in block.split("\n", 1)[0]:
            desc = None
            for r in re.finditer(r"Range (0x[0-9a-f]+)-(0x[0-9a-f]+): (.*?)(?=\n  Range |\n, length|$)",
                                 block, flags=re.S):
                if int(r.group(1), 16) <= va < int(r.group(2), 16):
                    desc = r.group(3)
                    break
            if desc is None:
                continue
        if "DW_OP_stack_value" in desc or "DW_OP_deref" in desc or "DW_OP_piece" in desc:
            continue
        place = None
        f = re.search(r"frame base reg \$(\w+) offset (-?\d+)\+(-?\d+)", desc)
        if f:
            place = (FRAME_REGS.get(f.group(1)), int(f.group(2)) + int(f.group(3)))
        f = f or re.search(r"at offset (-?\d+) from base reg \$(\w+)", desc)
        if f and not place:
            place = (FRAME_REGS.get(f.group(2)), int(f.group(1)))
        b = re.search(r"DW_OP_breg\d+ (-?\d+) \[\$(\w+)\]", desc)
        if b and not place:
            place = (FRAME_REGS.get(b.group(2)), int(b.group(1)))
        b = re.search(r"DW_OP_fbreg (-?\d+)", desc)
        if b and not place:  # gcc's frame base is the CFA (DW_OP_call_frame_cfa)
            place = ("cfa", int(b.group(1)))
        if place and place[0]:
            out.append((m.group(1), place[0], place[1], int(ln.group(1))))
    return out


class Symbols:
    """Program counters to source locations, and addresses to global
    variables, through addr2line (LLVM's or binutils') and nm. One
    addr2line process per object, for all its addresses at once."""

    def __init__(self, addr2line=None, nm=None):
        self.addr2line = addr2line or find_addr2line()
        self.nm = nm or shutil.which("nm")
        self.loads = {}
        self.cache = {}   # (obj, vaddr) -> Loc
        self.pending = collections.defaultdict(set)
        self.globals_ = {}
        self.regions = {}  # obj -> {outlined function: (file, line) of its construct}
        self.gdb = shutil.which("gdb")
        self.locals_ = {}  # (obj, vaddr) -> parse_scope's answer

    def _bias(self, m):
        """Runtime address minus ELF virtual address, for mapping m."""
        if m.path not in self.loads:
            self.loads[m.path] = elf_loads(m.path)
        el = self.loads[m.path]
        if not el:
            return m.start - m.offset
        e_type, loads = el
        if e_type == 2:  # ET_EXEC: absolute addresses
            return 0
        for off, vaddr, filesz in loads:
            if off <= m.offset < off + max(filesz, 1):
                return m.start - (vaddr + (m.offset - off))
        return m.start - m.offset

    def place(self, maps, pc):
        """(object path, ELF virtual address) of a runtime address."""
        starts = [m.start for m in maps]
        i = bisect.bisect_right(starts, pc) - 1
        if i < 0 or pc >= maps[i].end:
            return None, pc
        return maps[i].path, pc - self._bias(maps[i])

    def want(self, maps, pc):
        obj, va = self.place(maps, pc)
        if obj and (obj, va) not in self.cache:
            self.pending[obj].add(va)
        return obj, va

    def resolve(self):
        """Runs addr2line for every address asked for since the last call."""
        for obj, vas in self.pending.items():
            vas = sorted(vas)
            locs = self._addr2line(obj, vas)
            for va, loc in zip(vas, locs):
                if OUTLINED.search(loc.func):
                    # the body (.omp_outlined._debug__.1) is inlined into
                    # its symbol (.omp_outlined..2), whose entry is the
                    # pragma's line: the outermost function names it
                    regions = self.regions_of(obj)
                    for f in [c[0] for c in reversed(loc.inlined)] + [loc.func]:
                        if f in regions:
                            loc.region = regions[f]
                            break
                self.cache[(obj, va)] = loc
        self.pending.clear()

    def regions_of(self, obj):
        """{outlined function: (file, line)} of an object: the line of each
        outlined function's first instruction, which the compilers give the
        construct's pragma (clang's and flang's debug information), one
        addr2line for them all."""
        got = self.regions.get(obj)
        if got is not None:
            return got
        got = self.regions[obj] = {}
        starts = [(va, name) for va, _size, name in self._symbols(obj, "tTwW")
                  if OUTLINED.search(name)]
        if starts:
            locs = self._addr2line(obj, [va for va, _ in starts])
            for (_va, name), loc in zip(starts, locs):
                if loc.known():
                    # clang's symbol (.omp_outlined..24) calls the body its
                    # debug information names (.omp_outlined._debug__.19),
                    # inlined at the same line: both are the construct's
                    got[name] = (loc.file, loc.line)
                    for f, _fl, _ln in ((loc.func, 0, 0),) + tuple(loc.inlined):
                        got.setdefault(f, (loc.file, loc.line))
        return got

    def locals_at(self, obj, vas):
        """{vaddr: [(name, base, offset, length)]}: the locals in memory
        of the function at each address (a return address less one), from
        its debug information, through one gdb for them all (none without
        gdb or -g)."""
        want = sorted(set(v for v in vas if (obj, v) not in self.locals_))
        if want and self.gdb and os.path.exists(obj):
            text = ""
            try:
                cmd = [self.gdb, "-batch", "-nx", obj]
                for v in want:
                    cmd += ["-ex", "echo @@scope %#x\\n" % v, "-ex", "info scope *%#x" % v]
                r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, timeout=300)
                text = r.stdout
            except (OSError, subprocess.SubprocessError):
                pass
            for part in text.split("@@scope ")[1:]:
                head, _, body = part.partition("\n")
                try:
                    v = int(head.strip(), 16)
                except ValueError:
                    continue
                self.locals_[(obj, v)] = parse_scope(body, v)
        return {v: self.locals_.get((obj, v), []) for v in vas}

    def _symbols(self, obj, kinds):
        """[(vaddr, size or None, name)] of obj's defined symbols of nm's kinds."""
        syms = []
        if self.nm and os.path.exists(obj):
            try:
                r = subprocess.run([self.nm, "-S", "-C", "--defined-only", obj],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                   timeout=300)
                for line in r.stdout.splitlines():
                    parts = line.split(None, 3)
                    if len(parts) == 4 and parts[2] in kinds:
                        syms.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
                    elif len(parts) == 3 and parts[1] in kinds:  # no size
                        syms.append((int(parts[0], 16), None, parts[2]))
            except (OSError, subprocess.SubprocessError, ValueError):
                pass
        return syms

    def _addr2line(self, obj, vas):
        unknown = [Loc("??", "??", 0, obj) for _ in vas]
        if not self.addr2line or not os.path.exists(obj) or not vas:
            return unknown
        try:
            r = subprocess.run([self.addr2line, "-a", "-f", "-i", "-C", "-e", obj] +
                               ["%#x" % v for v in vas], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, timeout=300)
        except (OSError, subprocess.SubprocessError):
            return unknown
        out = {}
        cur, pairs = None, []
        lines = r.stdout.splitlines()
        i = 0
        while i < len(lines):
            ln = lines[i]
            if re.match(r"^0x[0-9a-f]+$", ln):
                if cur is not None:
                    out[cur] = pairs
                cur, pairs = int(ln, 16), []
                i += 1
                continue
            func = ln
            fl = lines[i + 1] if i + 1 < len(lines) else "??:0"
            i += 2
            file, _, line = fl.rpartition(":")
            m = re.match(r"^(\d+)", line)
            pairs.append((func, file or "??", int(m.group(1)) if m else 0))
        if cur is not None:
            out[cur] = pairs
        locs = []
        for v in vas:
            p = out.get(v)
            if not p:
                locs.append(Loc("??", "??", 0, obj))
            else:
                f, fl, ln = p[0]
                locs.append(Loc(f, fl, ln, obj, tuple(p[1:])))
        return locs

    def loc(self, maps, pc):
        obj, va = self.place(maps, pc)
        if not obj:
            return Loc("??", "??", 0, "")
        if (obj, va) not in self.cache:
            self.pending[obj].add(va)
            self.resolve()
        return self.cache[(obj, va)]

    def globals_of(self, exe):
        """[(vaddr, size, name)] of the data and bss symbols of exe, sorted."""
        if exe in self.globals_:
            return self.globals_[exe]
        syms = [g for g in self._symbols(exe, "dDbBvVgGsS") if g[1] is not None]
        syms.sort()
        self.globals_[exe] = syms
        return syms


# ---- analysis ----------------------------------------------------------------

COUNTS = ("read_faults", "write_faults", "fetched", "fetched_bytes", "diffs", "diff_bytes",
          "invalidations", "pulls", "migrations", "wait_ns", "diff_wait_ns")
COUNT_LABELS = {"read_faults": "read faults", "write_faults": "write faults",
                "fetched": "pages fetched", "fetched_bytes": "bytes fetched",
                "diffs": "diffs sent", "diff_bytes": "diff bytes sent",
                "invalidations": "invalidations", "pulls": "pulls (refreshed at acquire)",
                "migrations": "migrations", "wait_ns": "waited in faults, ms",
                "diff_wait_ns": "waited for diffs, ms"}
MISS_KINDS = ("true", "false", "cold")


def per_node(nodes):
    return {c: [0] * nodes for c in COUNTS}


class Stats:
    """Counts per node (COUNTS), misses by kind, and a page's sharing."""

    def __init__(self, nodes):
        self.c = per_node(nodes)
        self.misses = collections.Counter()

    def add(self, name, node, v=1):
        self.c[name][node] += v

    def total(self, name):
        return sum(self.c[name])

    def waited_ns(self):
        return self.total("wait_ns") + self.total("diff_wait_ns")


class Site(Stats):
    """Where data came from: an allocation site (the program's call), a
    global variable, the master's stack, ..."""

    def __init__(self, key, kind, label, nodes):
        super().__init__(nodes)
        self.key, self.kind, self.label = key, kind, label
        self.context = []       # callers of the allocation, as text
        self.blocks = 0
        self.bytes = 0
        self.pages = {}         # page -> Stats
        self.sharing = collections.Counter()  # "true"/"false" -> page-intervals
        self.shared_pages = {"true": set(), "false": set()}
        self.example = {}       # kind -> (page, epoch, {node: runs}, shared runs, base offset)
        self.sharing_within = collections.Counter()  # of those, among this data's own bytes
        self.neighbours = collections.Counter()  # label -> page-intervals shared only with it
        self.grain = None
        self.blocks_per_node = True
        self.borders = set()
        self.writers = set()


class Line(Stats):
    """A source line that faulted."""

    def __init__(self, loc, nodes):
        super().__init__(nodes)
        self.loc = loc
        self.via = collections.Counter()   # library functions it faulted in (memcpy, ...)
        self.sites = collections.Counter()  # allocation sites of its faults


class Alloc:
    __slots__ = ("start", "end", "t", "t_free", "node", "site")

    def __init__(self, start, end, t, node, site):
        self.start, self.end, self.t, self.node, self.site = start, end, t, node, site
        self.t_free = None


class Profile:
    """The merged, explained profile of one run."""

    def __init__(self, nodes, symbols=None):
        self.nodes = nodes
        self.n = len(nodes)
        self.page_size = nodes[0].page_size
        self.protocol = nodes[0].protocol
        self.sym = symbols or Symbols()
        self.widths = dsmaccess.Widths()
        self.maps = nodes[0].maps
        self.sites = {}
        self.lines = {}
        self._pieces = {}
        self._frames = {}  # (node, frames) -> program_frame's answer
        self._site_locs = {}  # (node, site, stack) -> site_loc's answer
        self._omp_sites = {}  # (node, site, samples) -> dsm_alloc's answer
        self._symbolize_all()
        self._allocations()
        self._faults()
        self._diffs()
        self._pages()
        self._sharing()
        self._misses()
        self._locks()
        self._barriers()

    # -- locations --

    def _symbolize_all(self):
        """One addr2line per object for every program counter of the run,
        and one objdump per object for the faults' access widths."""
        self.fault_place = {}  # (node, pc) -> (object, ELF address)
        for nd in self.nodes:
            for r in nd.records():
                if r.kind == FAULT:
                    self.fault_place[(nd.rank, r.a)] = self.sym.want(nd.maps, r.a)
                if r.site:
                    self.sym.want(nd.maps, r.site - 1)
                if r.kind in (FAULT, ALLOC, BARRIER, STACK) and (r.sub & STACKED or r.kind == STACK):
                    for pc in r.extra:
                        self.sym.want(nd.maps, pc - 1)
        self.sym.resolve()
        by_obj = collections.defaultdict(list)
        for obj, va in self.fault_place.values():
            if obj:
                by_obj[obj].append(va)
        for obj, vas in by_obj.items():
            self.widths.resolve(obj, vas)

    def loc(self, node, pc, ret=True):
        return self.sym.loc(self.nodes[node].maps, pc - 1 if ret and pc else pc)

    def expand(self, node, frames):
        """The source locations of a stack's return addresses, each
        followed by the functions it was inlined into (innermost first)."""
        out = []
        for pc in frames:
            l = self.loc(node, pc)
            out.append(l)
            for f, fl, ln in l.inlined:
                # gcc's partial inlining names a function inside itself
                # (lock at its call, then lock at its first line): once
                if f != out[-1].func:
                    out.append(Loc(f, fl, ln, l.obj))
        return out

    def program_frame(self, node, frames):
        """The first frame of a stack (return addresses) in the program's
        own code, and the program's frames after it (its callers)."""
        key = (node, tuple(frames))
        got = self._frames.get(key)
        if got is None:
            got = None, []
            locs = self.expand(node, frames)
            for i, l in enumerate(locs):
                if not l.runtime():
                    got = l, [c for c in locs[i + 1:] if not c.runtime()]
                    break
            self._frames[key] = got
        return got

    def site_loc(self, node, site_pc, stack, samples):
        """_site_loc, once for each node, site and stack: a program that
        allocates row by row makes one site of a hundred thousand calls."""
        # (keyed by the samples' identity; the entry holds them, so that no
        # later dict takes their id; every empty one answers alike)
        key = (node, site_pc, tuple(stack), id(samples) if samples else None)
        got = self._site_locs.get(key)
        if got is None:
            got = self._site_locs[key] = (samples, self._site_loc(node, site_pc, stack, samples))
        return got[1]

    def _site_loc(self, node, site_pc, stack, samples):
        """Where the program called, and its callers: the first program
        frame of this event's sampled stack; else the site's return address
        (and the functions it was inlined into) when it is in the program's
        code, with the callers of a sampled stack through the same place;
        else the most common program frame of the site's sampled stacks."""
        if stack:
            l, callers = self.program_frame(node, stack)
            if l:
                return l, callers
        if site_pc:
            l, callers = self.program_frame(node, [site_pc])
            if l:
                for st in samples.get(site_pc, ()):
                    pl, more = self.program_frame(node, st)
                    if pl and pl.key() == l.key() and len(more) > len(callers):
                        callers = more
                        break
                return l, callers
        best = collections.Counter()
        keep = {}
        for st in samples.get(site_pc, ()):
            pl, callers = self.program_frame(node, st)
            if pl:
                best[pl.key()] += 1
                keep[pl.key()] = (pl, callers)
        if best:
            return keep[best.most_common(1)[0][0]]
        if site_pc:
            return self.loc(node, site_pc), []
        return None, []

    # -- data --

    def site(self, key, kind, label):
        s = self.sites.get(key)
        if s is None:
            s = self.sites[key] = Site(key, kind, label, self.n)
        return s

    def _allocations(self):
        samples = collections.defaultdict(list)
        for nd in self.nodes:
            for r in nd.records(ALLOC):
                if r.sub & STACKED:
                    samples[r.site].append(r.extra)
        self.allocs = []
        for nd in self.nodes:
            live = {}
            for r in sorted(nd.records(), key=lambda r: r.t):
                if r.kind == ALLOC:
                    if (r.sub & 0x7F) == ALLOC_STACK:
                        s = self.site(("stack",), "stack", "the master's stack (main's locals, "
                                      "shared under master-only start)")
                        ctx = []
                    elif self.dsm_alloc(nd.rank, r, samples):
                        s = self.dsm_site(self.dsm_alloc(nd.rank, r, samples))
                        ctx = []
                    else:
                        l, callers = self.site_loc(nd.rank, r.site,
                                                   r.extra if r.sub & STACKED else (), samples)
                        if l:
                            # a site is the call and its two callers: a
                            # program's own xmalloc is called from many
                            key = ("heap",) + l.key() + tuple(c.key() for c in callers[:2])
                            label = "allocated at " + l.text()
                            if callers:
                                label += " from " + callers[0].text()
                            s = self.site(key, "heap", label)
                        else:
                            s = self.site(("heap", "?"), "heap", "allocated at an unknown call")
                        ctx = [c.text() for c in callers[1:4]]
                    if ctx and not s.context:
                        s.context = ctx
                    s.blocks += 1
                    s.bytes += r.b
                    a = Alloc(r.a, r.a + max(r.b, 1), r.t, nd.rank, s)
                    self.allocs.append(a)
                    live[r.a] = a
                elif r.kind == FREE:
                    a = live.pop(r.a, None)
                    if a:
                        a.t_free = r.t
        self._stack_locals()
        self.allocs.sort(key=lambda a: a.start)
        self.alloc_starts = [a.start for a in self.allocs]
        # the shared globals, by the executable's symbols
        n0 = self.nodes[0]
        self.globals = []
        self.global_bias = 0
        if n0.gsize and n0.exe:
            self.globals = self.sym.globals_of(n0.exe)
            for m in n0.maps:
                if m.path == n0.exe:
                    self.global_bias = self.sym._bias(m)
                    break
            self.global_starts = [g[0] for g in self.globals]

    def _stack_locals(self):
        """The shared stacks (the master's, a team's threads') cut into the
        program's local variables, and the frames that hold them, where the
        nodes noted the frames on them (PROF_FRAMES: each frame's return
        address, CFA and stack pointer): a thread of another node
        writes such a variable through a pointer, and the report names it,
        not where the stack came from. A variable is placed by its
        function's debug information (gdb), outermost frames first (main's
        live the whole run); bytes of a frame in no variable are the
        frame's; the rest of a stack stays the stack."""
        stacks = [a for a in self.allocs if a.site.kind == "stack"]
        if not stacks:
            return
        frames = {}
        for nd in self.nodes:
            for r in nd.records(FRAMES):
                for i in range(0, len(r.extra) - 2, 3):
                    frames.setdefault(tuple(r.extra[i:i + 3]), nd.rank)
        placed, by_obj = {}, collections.defaultdict(set)
        for fr, node in frames.items():
            loc = self.loc(node, fr[0])
            if loc.runtime() or not fr[2]:
                continue  # dsm's frames (the fork, the switch of stacks), or no stack pointer
            obj, va = self.sym.place(self.nodes[node].maps, fr[0] - 1)
            if obj:
                by_obj[obj].add(va)
                placed[fr] = (obj, va, loc)
        found = {obj: self.sym.locals_at(obj, sorted(vas)) for obj, vas in by_obj.items()}
        wanted = []  # (start, end, site), the earlier winning a byte
        frames_too = []
        for fr in sorted(placed, key=lambda f: -f[1]):
            obj, va, loc = placed[fr]
            func = loc.name()
            where = short_path(loc.region[0]) if loc.region else short_path(loc.file)
            # a function that keeps a frame pointer pushed it below its return address
            base = {"cfa": fr[1], "sp": fr[2], "fp": fr[1] - 16}
            for name, b, off, length in found[obj].get(va, ()):
                start = base[b] + off
                if not base[b] or start < fr[2] or start + length > fr[1]:
                    continue  # not in this frame: the debug information is not for this place
                site = self.site(("stackvar", func, where, name), "stack",
                                 "local variable %s of %s (%s), on a shared stack"
                                 % (name, func, where))
                site.bytes = max(site.bytes, length)
                site.blocks = 1
                wanted.append((start, start + length, site))
            frames_too.append((fr[2], fr[1], self.site(
                ("stackframe", func, where), "stack",
                "the frame of %s (%s) on a shared stack, in no named variable" % (func, where))))
        claimed = []
        for start, end, site in wanted + frames_too:
            for lo, hi in self._unclaimed(claimed, start, end):
                claimed.append((lo, hi, site))
        if not claimed:
            return
        claimed.sort(key=lambda c: c[0])
        for a in stacks:
            inside = [c for c in claimed if a.start <= c[0] and c[1] <= a.end]
            if not inside:
                continue
            self.allocs.remove(a)
            at = a.start
            for lo, hi, site in inside + [(a.end, a.end, None)]:
                if lo > at:
                    self._piece(a, at, lo, a.site)
                if site:
                    self._piece(a, lo, hi, site)
                at = hi

    @staticmethod
    def _unclaimed(claimed, start, end):
        """The parts of [start, end) in none of claimed's ranges."""
        parts = [(start, end)]
        for lo, hi, _site in claimed:
            parts = [q for s, e in parts for q in ((s, min(e, lo)), (max(s, hi), e)) if q[0] < q[1]]
        return parts

    def _piece(self, stack, lo, hi, site):
        a = Alloc(lo, hi, stack.t, stack.node, site)
        a.t_free = stack.t_free
        self.allocs.append(a)

    def dsm_alloc(self, node, r, samples):
        """The place in dsm's runtime that made an allocation, where it is
        dsm's own data (None where it is the program's): the call that made
        it is dsm's (the site when the runtime called dsm_malloc itself;
        else the first frame of its stack past the allocator's own, or that
        of most of its site's stacks). A region's or a barrier's call in the
        program is then the site, but the data is not the program's."""
        if r.site:
            l = self.loc(node, r.site)
            if l.dsm_own():
                return l
        if r.sub & STACKED:
            return self._dsm_stack(node, r.extra)
        key = (node, r.site, id(samples))
        got = self._omp_sites.get(key)
        if got is None:
            votes = [self._dsm_stack(node, st) for st in samples.get(r.site, ())]
            mine = [v for v in votes if v]
            got = self._omp_sites[key] = (samples, mine[0] if votes and 2 * len(mine) > len(votes)
                                          else None)
        return got[1]

    def _dsm_stack(self, node, stack):
        for l in self.expand(node, stack):
            if not DSM_ALLOCATOR.search(l.file):
                return l if l.dsm_own() else None
        return None

    def dsm_site(self, l):
        """The site of dsm's own data made at l: named by what it is."""
        what = next((name for pat, name in DSM_DATA if pat.search(l.file) or pat.search(l.func)),
                    "runtime data")
        key = ("dsm", what, l.func)
        return self.site(key, "dsm", "dsm's own data, not the program's: %s (made by %s, %s)"
                         % (what, l.func, short_path(l.file) if l.known() else
                            os.path.basename(l.obj or "?")))

    def lookup(self, addr, t=None):
        """The site of the data at an address (at time t, where blocks were
        freed and reused)."""
        n0 = self.nodes[0]
        if n0.gsize and n0.gbase <= addr < n0.gbase + n0.gsize:
            va = addr - self.global_bias
            i = bisect.bisect_right(self.global_starts, va) - 1 if self.globals else -1
            while i >= 0:
                g = self.globals[i]
                if g[0] <= va < g[0] + max(g[1], 1):
                    return self.site(("global", g[2]), "global", "global %s" % g[2]), va - g[0]
                if g[1] or va - g[0] > 64:
                    break
                i -= 1
            return self.site(("global", "?"), "global",
                             "the shared globals (no symbol: static or without a name)"), 0
        if n0.prestart_size and n0.base + n0.gsize <= addr < n0.base + n0.gsize + n0.prestart_size:
            return self.site(("prestart",), "heap",
                             "the pre-start heap (static initializers' allocations)"), 0
        i = bisect.bisect_right(self.alloc_starts, addr) - 1
        best = None
        for j in range(i, max(i - 64, -1), -1):
            a = self.allocs[j]
            if a.start <= addr < a.end:
                alive = t is None or (a.t <= t and (a.t_free is None or t < a.t_free))
                if alive:
                    return a.site, addr - a.start
                if best is None or (t is not None and a.t <= t):
                    best = a
        if best:
            return best.site, addr - best.start
        return self.site(("unknown",), "unknown",
                         "memory of no recorded allocation (allocated before the profile "
                         "started, or by dsm itself)"), 0

    def addr(self, node, page, offset=0):
        return self.nodes[node].page_addr(page) + offset

    # -- faults --

    def _faults(self):
        fault_stacks = collections.defaultdict(list)
        for nd in self.nodes:
            for r in nd.records(FAULT):
                if r.sub & STACKED:
                    fault_stacks[r.a].append(r.extra)
        self.page_fault_sites = collections.defaultdict(collections.Counter)
        # the width: from the fault's instruction (dsmaccess), read for all
        # faults at once in _symbolize_all
        self.faults = []  # (node, page, offset, t, t_end, fetched, write, site, line, epoch, width)
        for nd in self.nodes:
            for r in nd.records(FAULT):
                offset = r.b & 0xFFFFFFFF
                fetched = r.b >> 32
                addr = nd.page_addr(r.page) + offset
                site, _ = self.lookup(addr, r.t)
                self.page_fault_sites[r.page][site.key] += 1
                line = self._fault_line(nd.rank, r, fault_stacks)
                write = bool(r.sub & WRITE)
                for st in (site, line, self._page(site, r.page)):
                    st.add("write_faults" if write else "read_faults", nd.rank)
                    st.add("wait_ns", nd.rank, r.dur)
                line.sites[site.key] += 1
                self.faults.append((nd.rank, r.page, offset, r.t, r.t + r.dur, fetched, write,
                                    site, line, r.epoch, self.widths.width(*self.fault_place[(nd.rank, r.a)])))

    def _page(self, site, page):
        p = site.pages.get(page)
        if p is None:
            p = site.pages[page] = Stats(self.n)
        return p

    def _fault_line(self, node, r, fault_stacks):
        l = self.loc(node, r.a, ret=False)
        via = None
        if l.runtime():
            # a library's code (memcpy, memset) or dsm's: its caller in the program
            stack = r.extra if r.sub & STACKED else None
            pl = None
            if stack:
                pl, _ = self.program_frame(node, stack)
            if not pl:
                best = collections.Counter()
                keep = {}
                for st in fault_stacks.get(r.a, ()):
                    p, _ = self.program_frame(node, st)
                    if p:
                        best[p.key()] += 1
                        keep[p.key()] = p
                if best:
                    pl = keep[best.most_common(1)[0][0]]
            if pl:
                via, l = l.func, pl
        key = l.key() if l.known() or l.func != "??" else ("??", l.obj, r.a)
        line = self.lines.get(key)
        if line is None:
            line = self.lines[key] = Line(l, self.n)
        if via:
            line.via[via] += 1
        return line

    # -- diffs --

    def _diffs(self):
        """Splits each diff's bytes among the sites they belong to; keeps
        them by page and interval for the sharing, and by page and time for
        the misses."""
        ps = self.page_size
        # (page, interval) -> {node: bits}; page -> [(t, node, bits)]
        self.written = collections.defaultdict(lambda: collections.defaultdict(int))
        self.writes_by_page = collections.defaultdict(list)
        self.diff_recs = []
        for nd in self.nodes:
            # a release the program waited for shares its wait among its
            # diffs (those its thread made during it), by their bytes
            share = {}
            for _index, _role, recs in nd.threads:
                pending = []
                for r in recs:
                    if r.kind == DIFF:
                        pending.append(r)
                    elif r.kind == RELEASE:
                        inside = [d for d in pending if r.t <= d.t <= r.t + r.dur]
                        total = sum(d.a for d in inside) or 1
                        if not r.sub:
                            for d in inside:
                                share[id(d)] = r.dur * d.a / total
                        pending = []
            # lrc makes a diff when a node asks for it, maybe epochs later:
            # it belongs to the epoch of its interval's release
            stamps = {r.page: r.epoch for r in nd.records(INTERVAL)}
            for r in nd.records(DIFF):
                bits = bits_of(r) & span_mask(0, ps)
                if not bits:
                    continue
                how = r.sub & 0x7F
                if how == DIFF_LAZY and r.site in stamps:
                    r.epoch = stamps[r.site]
                base = nd.page_addr(r.page)
                parts = self._split_bits(base, bits, r.t)
                total = count_bits(bits)
                for site, sbits in parts.items():
                    frac = count_bits(sbits) / total
                    pstat = self._page(site, r.page)
                    for st in (site, pstat):
                        if how != DIFF_HOME:
                            st.add("diffs", nd.rank)
                            st.add("diff_bytes", nd.rank, int(r.a * frac))
                        st.add("diff_wait_ns", nd.rank, int(share.get(id(r), 0) * frac))
                self.written[(r.page, r.epoch)][nd.rank] |= bits
                self.writes_by_page[r.page].append((r.t, nd.rank, bits))
                self.diff_recs.append((nd.rank, r, bits))
        # the diffs whose bytes were not kept (a long run's intervals
        # outside the sample): counted by page
        self.diffs_counted = 0
        for nd in self.nodes:
            for r in nd.records(DIFFSUM):
                self.diffs_counted += r.a
                if r.page == 0xFFFFFFFF or r.sub == DIFF_HOME:
                    continue
                site = self.page_site(r.page, nd.rank)
                for st in (site, self._page(site, r.page)):
                    st.add("diffs", nd.rank, r.a)
                    st.add("diff_bytes", nd.rank, r.b)
        for lst in self.writes_by_page.values():
            lst.sort(key=lambda x: x[0])

    def _split_bits(self, base, bits, t):
        """_split for bits_of's integers: {site: bits}."""
        first = (bits & -bits).bit_length() - 1
        last = bits.bit_length()
        for lo, hi, site in self._page_pieces(base, t):
            if hi <= first or lo >= last:
                continue
            if lo <= first and last <= hi:  # most often: one piece holds them all
                return {site: bits}
            break
        return {site: bits_of_runs(sruns) for site, sruns in
                self._split(base, runs_of_bits(bits, self.page_size), t).items()}

    def _split(self, base, runs, t):
        """{site: runs} of a page's byte ranges (merged, in order): each
        run's bytes go to the allocation (or global) that holds them."""
        out = collections.defaultdict(list)
        ps = self.page_size
        pieces = self._page_pieces(base, t)  # [(start, end, site)] within the page, sorted
        if runs:  # most often the first piece the runs meet holds them all
            first, last = runs[0][0], runs[-1][1]
            for lo, hi, site in pieces:
                if hi <= first or lo >= last:
                    continue
                if lo <= first and last <= hi:
                    out[site] = list(runs)
                    return out
                break
        rest = list(runs)
        for lo, hi, site in pieces:
            keep = []
            for s, e in rest:
                if e <= lo or s >= hi:
                    keep.append((s, e))
                    continue
                if s < lo:
                    keep.append((s, lo))
                out[site].append((max(s, lo), min(e, hi)))
                if e > hi:
                    keep.append((hi, e))
            rest = keep
            if not rest:
                break
        if rest:
            site, _ = self.lookup(base + rest[0][0], t)
            out[site].extend(rest)
        del ps
        return out

    def _page_pieces(self, base, t):
        """The allocations and globals that overlap the page at `base`, as
        (start, end, site) in page offsets, sorted, at time t."""
        key = (base, t is None)
        if t is None and key in self._pieces:
            return self._pieces[key]
        ps = self.page_size
        end = base + ps
        found = []
        i = bisect.bisect_left(self.alloc_starts, end) - 1
        for j in range(i, max(i - 256, -1), -1):
            a = self.allocs[j]
            if a.end <= base:
                if a.start <= base - (1 << 30):
                    break
                continue
            alive = t is None or (a.t <= t and (a.t_free is None or t < a.t_free))
            if alive and a.start < end:
                found.append((max(a.start, base) - base, min(a.end, end) - base, a.site))
        n0 = self.nodes[0]
        if self.globals and n0.gsize and base < n0.gbase + n0.gsize and end > n0.gbase:
            vlo, vhi = base - self.global_bias, end - self.global_bias
            k = bisect.bisect_left(self.global_starts, vhi) - 1
            while k >= 0:
                g = self.globals[k]
                if g[0] + max(g[1], 1) > vlo:
                    site = self.site(("global", g[2]), "global", "global %s" % g[2])
                    found.append((max(g[0], vlo) - vlo, min(g[0] + max(g[1], 1), vhi) - vlo, site))
                elif g[0] < vlo - (1 << 24):
                    break
                k -= 1
        found.sort(key=lambda x: x[0])
        # overlaps (a block freed and reused): the latest start wins a byte
        pieces = []
        for lo, hi, site in found:
            if pieces and lo < pieces[-1][1]:
                lo = pieces[-1][1]
            if lo < hi:
                pieces.append((lo, hi, site))
        if t is None:
            self._pieces[key] = pieces
        return pieces

    def _alloc_at(self, addr, t):
        i = bisect.bisect_right(self.alloc_starts, addr) - 1
        for j in range(i, max(i - 64, -1), -1):
            a = self.allocs[j]
            if a.start <= addr < a.end and (t is None or (a.t <= t and (a.t_free is None or
                                                                         t < a.t_free))):
                return a
        n0 = self.nodes[0]
        if self.globals and n0.gbase <= addr < n0.gbase + n0.gsize:
            va = addr - self.global_bias
            k = bisect.bisect_right(self.global_starts, va) - 1
            if k >= 0 and self.globals[k][0] <= va < self.globals[k][0] + max(self.globals[k][1], 1):
                g = self.globals[k]
                return Alloc(g[0] + self.global_bias, g[0] + self.global_bias + max(g[1], 1), 0,
                             0, None)
        return None

    # -- pages --

    def page_site(self, page, node=0):
        c = self.page_fault_sites.get(page)
        if c:
            key = c.most_common(1)[0][0]
            return self.sites[key]
        return self.lookup(self.addr(node, page))[0]

    def _pages(self):
        ps = self.page_size
        for nd in self.nodes:
            for r in nd.records():
                if r.kind == FETCH:
                    s = self.page_site(r.page, nd.rank)
                    for st in (s, self._page(s, r.page)):
                        st.add("fetched", nd.rank)
                        st.add("fetched_bytes", nd.rank, ps)
                        if r.sub == FETCH_PULL:
                            st.add("pulls", nd.rank)
                elif r.kind == INVAL:
                    s = self.page_site(r.page, nd.rank)
                    for st in (s, self._page(s, r.page)):
                        st.add("invalidations", nd.rank)
                elif r.kind == MIGRATE:
                    s = self.page_site(r.page, nd.rank)
                    for st in (s, self._page(s, r.page)):
                        st.add("migrations", nd.rank)

    # -- sharing --

    def _sharing(self):
        """Each page written by two or more nodes in one interval between
        barriers: true where their bytes overlap, false where they do not."""
        ps = self.page_size
        self.page_sharing = collections.defaultdict(collections.Counter)
        for (page, epoch), by in sorted(self.written.items()):
            if len(by) < 2:
                continue  # one writer: no sharing
            # (the bytes as bits_of's integers: a page's thousands of runs
            # intersect in one operation, where run lists cost seconds)
            kind, shared_bits, writers = classify_bits(by)
            if not kind:
                continue
            self.page_sharing[page][kind] += 1
            base = self.addr(0, page)
            # which sites' bytes are involved; each site's verdict, example
            # and grain from its own bytes of the page (a page may hold the
            # end of one array and the start of the next)
            allbits = 0
            for b in by.values():
                allbits |= b
            parts = self._split_bits(base, allbits, None_t(self))
            extent = collections.defaultdict(int)
            for lo, hi, site in self._page_pieces(base, None_t(self)):
                extent[site] |= span_mask(lo, hi)
            for site, sbits in parts.items():
                own = extent.get(site) or sbits
                site_bits = {n: b & own for n, b in by.items()}
                site_bits = {n: b for n, b in site_bits.items() if b}
                k, site_shared_bits, _ = classify_bits(site_bits)
                site_by = {n: runs_of_bits(b, ps) for n, b in site_bits.items()}
                site_shared = runs_of_bits(site_shared_bits, ps)
                neighbours = []
                if not k:
                    # one node wrote this data, others only other data on
                    # the page: the page is shared falsely, across data
                    k, site_shared = "false", []
                    neighbours = [o for o in parts if o is not site and
                                  any(n not in site_bits for n, b in by.items()
                                      if b & (extent.get(o) or parts[o]))]
                    for o in neighbours:
                        site.neighbours[o.label] += 1
                else:
                    site.sharing_within[k] += 1
                site.sharing[k] += 1
                site.shared_pages[k].add(page)
                site.writers.update(writers)
                self._page(site, page).misses["interval_" + k] += 1
                if (k not in site.example or (not neighbours and
                                              len(site.example[k][2]) < len(site_by))):
                    first = (sbits & -sbits).bit_length() - 1
                    a = self._alloc_at(base + first, None_t(self))
                    origin = (a.start - base) if a else 0
                    site.example[k] = (page, epoch, site_by, site_shared, origin)
                if k == "false" and not neighbours:
                    g, blocks, borders = interleave(site_by)
                    if g is not None and (site.grain is None or g < site.grain):
                        site.grain = g
                    site.blocks_per_node = site.blocks_per_node and blocks
                    if len(site.borders) < 64:
                        site.borders.update(borders)

    # -- misses --

    def _misses(self):
        """A fault on a page this node did not hold, or held invalidated
        (it fetched the page, or a notice invalidated it since the node's
        last fault on it, or it is the node's first read of the page):
        true when another node wrote the byte it touched since this node
        last faulted on the page, false when others wrote only other bytes
        of it, cold when nobody else did (a first touch)."""
        invals = collections.defaultdict(list)
        for nd in self.nodes:
            for r in nd.records(INVAL):
                invals[(nd.rank, r.page)].append(r.t)
        for v in invals.values():
            v.sort()
        last = {}
        for node, page, offset, t, t_end, fetched, write, site, line, epoch, width in sorted(
                self.faults, key=lambda f: f[3]):
            prev = last.get((node, page))
            last[(node, page)] = t_end
            iv = invals.get((node, page), ())
            invalidated = bisect.bisect_right(iv, t) > bisect.bisect_right(iv, prev or 0)
            if not (fetched or invalidated or (prev is None and not write)):
                continue
            # the writes that made it a miss are this interval's or the last
            # one's: outside the sample of kept bytes, it cannot be told
            sampled = bytes_wanted(page, epoch) and (epoch == 0 or bytes_wanted(page, epoch - 1))
            # writes whose diffs were made since this node's last fault on
            # the page ended, and before this one ended (lrc makes a diff
            # when the fault asks for it)
            writes = self.writes_by_page.get(page, ())
            i = bisect.bisect_right(writes, (prev or 0, float("inf")))
            # the bytes the faulting instruction touched, not only its first:
            # a diff has the bytes that changed, and an int written from 0 to
            # 2048 kept its low byte
            touched = span_mask(offset, min(offset + width, self.page_size))
            kind = "cold"
            for tw, wn, bits in writes[i:]:
                if tw > t_end:
                    break
                if wn == node:
                    continue
                if bits & touched:
                    kind = "true"
                    break
                kind = "false"
            if kind != "true" and not sampled:
                kind = "unsampled"
            if self.protocol == "sc":
                kind = "untold"  # sc keeps no written bytes (no twins, no diffs)
            for st in (site, line, self._page(site, page)):
                st.misses[kind] += 1

    # -- synchronisation --

    def chain_label(self, node, stack):
        """A sampled stack as "function (file:line) from caller (file:line)":
        its first program frame and that frame's caller in the program."""
        l, callers = self.program_frame(node, stack)
        if not l:
            return None
        return l.text() + (" from " + callers[0].text() if callers else "")

    def apportion(self, node, site_pc, stack, samples):
        """[(label, share)] of one event at a call site: its own sampled
        stack's, else shared among the stacks sampled at that site (a
        program's own wrapper of dsm_lock or dsm_barrier is one site for
        every caller), else the site's own line."""
        if stack:
            lab = self.chain_label(node, stack)
            if lab:
                return [(lab, 1.0)]
        key = (node, site_pc, id(samples))  # the entry holds samples: their id stays theirs
        got = self._shares.get(key)
        if got is not None:
            return got[1]
        c = collections.Counter()
        for st in samples.get(site_pc, ()):
            lab = self.chain_label(node, st)
            if lab:
                c[lab] += 1
        if c:
            total = sum(c.values())
            got = [(lab, n / total) for lab, n in c.most_common()]
        else:
            l, _ = self.site_loc(node, site_pc, (), {})
            got = [(l.text() if l else "an unknown call", 1.0)]
        self._shares[key] = (samples, got)
        return got

    def _locks(self):
        self.locks = {}
        self._shares = {}
        by_lock = collections.defaultdict(lambda: collections.defaultdict(list))
        by_site = collections.defaultdict(list)
        for nd in self.nodes:
            for r in nd.records(STACK):
                by_lock[r.page][r.site].append(r.extra)
                by_site[r.site].append(r.extra)
        for nd in self.nodes:
            for r in nd.records(LOCKSTAT):
                L = self._lock(r.page)
                L["acquires"][nd.rank] += r.a
                L["remote"][nd.rank] += r.b
                L["wait_ns"][nd.rank] += r.dur
                # this lock's stacks from the site, else any lock's from it
                samples = by_lock[r.page] if r.site in by_lock[r.page] else by_site
                for label, share in self.apportion(nd.rank, r.site, (), samples):
                    L["sites"][label] += r.a * share
            for r in nd.records(LOCK):
                L = self._lock(r.page)
                L["from"][(int(r.a), nd.rank)] += 1
                L["max_wait_ns"] = max(L["max_wait_ns"], r.dur)
        # what each lock protects: what its holders wrote while they held it
        # (the first write to a page in an interval faults, and the fault
        # names the lock its thread held); and of those pages, the bytes
        # of the diffs its release sent (the bytes of other pages written
        # before the lock was taken go with the same release, and are not
        # the lock's)
        under = collections.defaultdict(set)  # (lock, node) -> pages
        for nd in self.nodes:
            for r in nd.records(FAULT):
                if r.lock and r.sub & WRITE and (r.lock - 1) in self.locks:
                    under[(r.lock - 1, nd.rank)].add(r.page)
                    addr = nd.page_addr(r.page) + (r.b & 0xFFFFFFFF)
                    site, off = self.lookup(addr, r.t)
                    self.locks[r.lock - 1]["data"][site.key] += 1
                    self.locks[r.lock - 1]["offsets"][site.key].add(off)
        for node, r, bits in self.diff_recs:
            if r.lock and r.page in under.get((r.lock - 1, node), ()):
                base = self.nodes[node].page_addr(r.page)
                L = self.locks[r.lock - 1]
                runs = runs_of_bits(bits, self.page_size)
                for site, sruns in self._split(base, runs, r.t).items():
                    L["bytes"][site.key] += runs_bytes(sruns)
                    a = self._alloc_at(base + sruns[0][0], r.t)
                    origin = a.start - base if a else 0
                    for s, e in sruns:
                        L["ranges"][site.key].add((s - origin, e - origin))

    def _lock(self, id_):
        L = self.locks.get(id_)
        if L is None:
            L = self.locks[id_] = {"id": id_, "acquires": [0] * self.n, "remote": [0] * self.n,
                                   "wait_ns": [0] * self.n, "max_wait_ns": 0,
                                   "sites": collections.Counter(),
                                   "from": collections.Counter(),
                                   "data": collections.Counter(),
                                   "bytes": collections.Counter(),
                                   "offsets": collections.defaultdict(set),
                                   "ranges": collections.defaultdict(set)}
        return L

    def _barriers(self):
        self.barriers = {}
        samples = collections.defaultdict(list)
        for nd in self.nodes:
            for r in nd.records(BARRIER):
                if r.sub & STACKED:
                    samples[r.site].append(r.extra)
        for nd in self.nodes:
            for r in nd.records(BARRIER):
                stack = r.extra if r.sub & STACKED else ()
                for label, share in self.apportion(nd.rank, r.site, stack, samples):
                    B = self.barriers.get(label)
                    if B is None:
                        B = self.barriers[label] = {"site": label, "count": [0] * self.n,
                                                    "wait_ns": [0] * self.n,
                                                    "max_ns": [0] * self.n}
                    B["count"][nd.rank] += share
                    B["wait_ns"][nd.rank] += r.dur * share
                    if share >= 0.5 or stack:
                        B["max_ns"][nd.rank] = max(B["max_ns"][nd.rank], r.dur)

    # -- totals --

    def totals(self):
        t = {"run_s": [nd.seconds() for nd in self.nodes],
             "fault_ns": [0] * self.n, "barrier_ns": [0] * self.n,
             "lock_ns": [0] * self.n, "release_ns": [0] * self.n,
             "faults": [0] * self.n}
        for nd in self.nodes:
            for r in nd.records():
                if r.kind == FAULT:
                    t["fault_ns"][nd.rank] += r.dur
                    t["faults"][nd.rank] += 1
                elif r.kind == BARRIER:
                    t["barrier_ns"][nd.rank] += r.dur
                elif r.kind == LOCKSTAT:
                    t["lock_ns"][nd.rank] += r.dur
                elif r.kind == RELEASE and not r.sub:
                    t["release_ns"][nd.rank] += r.dur
        return t


def None_t(_profile):
    """No time: look addresses up as the run ended."""
    return None


# ---- the report ----------------------------------------------------------------

def ms(ns):
    return ns / 1e6


def kib(b):
    if b >= 1 << 20:
        return "%.1f MiB" % (b / (1 << 20))
    if b >= 1 << 10:
        return "%.1f KiB" % (b / (1 << 10))
    return "%d B" % b


def bytes_text(runs, origin=0, limit=4):
    """The bytes of runs in words: 'byte 7', or 'bytes 0-63, 128-191, ...'."""
    if len(runs) == 1 and runs[0][1] - runs[0][0] == 1:
        return "byte %d" % (runs[0][0] - origin)
    return "bytes " + ranges_text(runs, origin, limit)


def ranges_text(runs, origin=0, limit=4):
    """Byte ranges as "0-63, 128-191, ..." relative to origin."""
    parts = [("%d-%d" % (s - origin, e - origin - 1)) if e - s > 1 else "%d" % (s - origin)
             for s, e in runs[:limit]]
    if len(runs) > limit:
        parts.append("... (%d ranges, %s)" % (len(runs), kib(runs_bytes(runs))))
    return ", ".join(parts)


def site_sharing(site):
    """("false"|"true"|"both"|None, one line saying so)."""
    t, f = site.sharing["true"], site.sharing["false"]
    kind = "both" if t and f else "true" if t else "false" if f else None
    return kind


def site_dict(p, site, top_pages=3):
    d = {"site": site.label, "kind": site.kind, "callers": site.context,
         "blocks": site.blocks, "bytes": site.bytes,
         "waited_ms": round(ms(site.waited_ns()), 3),
         "per_node": {c: site.c[c] for c in COUNTS},
         "misses": {k: site.misses[k] for k in MISS_KINDS + ("unsampled", "untold")},
         "sharing": {"kind": site_sharing(site),
                     "true_page_intervals": site.sharing["true"],
                     "false_page_intervals": site.sharing["false"],
                     "true_pages": len(site.shared_pages["true"]),
                     "false_pages": len(site.shared_pages["false"]),
                     "writers": sorted(site.writers),
                     "false_within_page_intervals": site.sharing_within["false"],
                     "neighbours": dict(site.neighbours.most_common(3))}}
    examples = {}
    for k, (page, epoch, by_node, shared, origin) in site.example.items():
        examples[k] = {"page": page, "interval": epoch, "offset_of_block": -origin,
                       "bytes_by_node": {str(n): [[s - origin, e - origin] for s, e in r]
                                         for n, r in sorted(by_node.items())},
                       "shared": [[s - origin, e - origin] for s, e in shared]}
    d["sharing"]["examples"] = examples
    kind = site_sharing(site)
    if kind in ("false", "both"):
        d["sharing"]["grain"] = site.grain
    if site.kind == "dsm":
        kind = None  # no advice: the program did not lay it out
    if kind in ("false", "both"):
        d["sharing"]["blocks"] = site.blocks_per_node
        within = site.sharing_within["false"] > 0
        d["advice_false"] = advice("false", p.page_size, site.grain if within else None,
                                   within and site.blocks_per_node, sorted(site.borders),
                                   neighbours=list(site.neighbours))
    if kind in ("true", "both"):
        d["advice_true"] = advice("true", p.page_size)
    pages = sorted(site.pages.items(), key=lambda kv: -(kv[1].waited_ns() + kv[1].total("fetched")))
    d["hottest_pages"] = []
    for page, st in pages[:top_pages]:
        d["hottest_pages"].append({"page": page, "address": "%#x" % p.addr(0, page),
                                   "waited_ms": round(ms(st.waited_ns()), 3),
                                   "per_node": {c: st.c[c] for c in COUNTS},
                                   "misses": {k: st.misses[k] for k in MISS_KINDS + ("unsampled", "untold")},
                                   "sharing": {k: st.misses["interval_" + k]
                                               for k in ("true", "false")}})
    return d


def line_dict(p, line):
    return {"line": line.loc.text(), "function": line.loc.func,
            "file": line.loc.file, "lineno": line.loc.line,
            "via": dict(line.via), "waited_ms": round(ms(line.waited_ns()), 3),
            "per_node": {c: line.c[c] for c in ("read_faults", "write_faults", "wait_ns")},
            "misses": {k: line.misses[k] for k in MISS_KINDS + ("unsampled", "untold")},
            "sites": [p.sites[k].label for k, _ in line.sites.most_common(3)]}


def lock_dict(p, L):
    id_ = L["id"]
    name = ("lock %d" % id_) if id_ <= SYNC_USER_ID_MAX else ("dsm lock %#x" % id_)
    handovers = sum(L["from"].values())
    data = []
    for key, cnt in L["data"].most_common(5):
        site = p.sites[key]
        ranges = merge_runs(L["ranges"].get(key, ()))
        offs = sorted(L["offsets"].get(key, ()))
        data.append({"site": site.label, "writes": cnt, "bytes": L["bytes"].get(key, 0),
                     "byte_ranges": [[s, e] for s, e in ranges[:8]],
                     "first_written_offsets": offs[:8]})
    return {"lock": name, "id": id_, "acquires": L["acquires"], "remote": L["remote"],
            "handovers": handovers,
            "handover_pairs": {"%d->%d" % k: v for k, v in sorted(L["from"].items())},
            "wait_ms": [round(ms(w), 3) for w in L["wait_ns"]],
            "max_wait_ms": round(ms(L["max_wait_ns"]), 3),
            "sites": [{"site": s, "acquires": round(c)} for s, c in L["sites"].most_common(5)],
            "protects": data}


def barrier_dict(B):
    waits = B["wait_ns"]
    return {"site": B["site"], "count": [round(c) for c in B["count"]],
            "wait_ms": [round(ms(w), 3) for w in waits],
            "mean_ms": [round(ms(w) / c, 4) if c else 0 for w, c in zip(waits, B["count"])],
            "imbalance_ms": round(ms(max(waits) - min(waits)), 3),
            "last_to_arrive": waits.index(min(waits))}


def to_json(p, top=10):
    t = p.totals()
    sites = sorted((s for s in p.sites.values() if s.waited_ns() or s.total("fetched") or
                    s.sharing or s.total("diffs")),
                   key=lambda s: -(s.waited_ns() + 1000 * s.total("fetched")))
    # dsm's own data apart from the program's: nothing there for its author to change
    dsm_sites = [s for s in sites if s.kind == "dsm"]
    sites = [s for s in sites if s.kind != "dsm"]
    lines = sorted(p.lines.values(), key=lambda l: -l.waited_ns())
    locks = sorted(p.locks.values(), key=lambda L: -(sum(L["wait_ns"]) + sum(L["remote"])))
    barriers = sorted(p.barriers.values(), key=lambda B: -sum(B["wait_ns"]))
    return {"nodes": p.n, "protocol": p.protocol, "page_size": p.page_size,
            "totals": {"run_s": [round(x, 3) for x in t["run_s"]],
                       "diffs_with_bytes": len(p.diff_recs),
                       "diffs_counted_only": p.diffs_counted,
                       "faults": t["faults"],
                       "fault_wait_ms": [round(ms(x), 3) for x in t["fault_ns"]],
                       "barrier_wait_ms": [round(ms(x), 3) for x in t["barrier_ns"]],
                       "lock_wait_ms": [round(ms(x), 3) for x in t["lock_ns"]],
                       "release_wait_ms": [round(ms(x), 3) for x in t["release_ns"]]},
            "data": [site_dict(p, s) for s in sites[:top]],
            "dsm_data": [site_dict(p, s) for s in dsm_sites[:top]],
            "code": [line_dict(p, l) for l in lines[:top]],
            "locks": [lock_dict(p, L) for L in locks[:top]],
            "barriers": [barrier_dict(B) for B in barriers[:top]]}


def compact(v):
    """A count in at most 7 characters: exact below a million, else k, M, G
    (powers of 1000), as the statistics' report shortens them."""
    if v < 1000000:
        return "%d" % v
    for unit, div in (("G", 1e9), ("M", 1e6)):
        if v >= div:
            return "%.1f%s" % (v / div, unit)
    return "%d" % v


def _row(label, vals, fmt="%d", width=10):
    if fmt == "%d":
        return "    %-28s" % label + "".join(("%" + str(width) + "s") % compact(v) for v in vals)
    return "    %-28s" % label + "".join(("%" + str(width) + "s") % (fmt % v) for v in vals)


def verdict_line(sh, kind, title, which):
    """'TITLE: nodes 0,1 wrote WHICH bytes of N pages in M page-intervals'."""
    pages, intervals = sh[kind + "_pages"], sh[kind + "_page_intervals"]
    return "%s: nodes %s wrote %s bytes of %d page%s in %d page-interval%s" % (
        title, ",".join(map(str, sh["writers"])), which, pages, "" if pages == 1 else "s",
        intervals, "" if intervals == 1 else "s")


def sharing_lines(p, d):
    """The sharing verdict of a site's dict, in words."""
    out = []
    sh = d["sharing"]
    ex = sh.get("examples", {})
    if sh["false_page_intervals"]:
        e = ex.get("false")
        out.append(verdict_line(sh, "false", "FALSE SHARING", "disjoint"))
        if e:
            for n, r in sorted(e["bytes_by_node"].items()):
                out.append("  e.g. page %d, interval %d: node %s wrote %s of the block"
                           % (e["page"], e["interval"], n,
                              bytes_text([tuple(x) for x in r])))
        if sh.get("grain") and not sh.get("blocks"):
            out.append("  the writers alternate every %d bytes" % sh["grain"])
        nb = sh.get("neighbours") or {}
        if nb:
            out.append("  in %d of them other nodes wrote only neighbouring data of the page: %s"
                       % (sh["false_page_intervals"] - sh.get("false_within_page_intervals", 0),
                          ", ".join("%s (%d)" % kv for kv in nb.items())))
    if sh["true_page_intervals"]:
        e = ex.get("true")
        out.append(verdict_line(sh, "true", "TRUE SHARING", "the same"))
        if e:
            out.append("  e.g. page %d, interval %d: %s of the block written by more than "
                       "one node" % (e["page"], e["interval"],
                                     bytes_text([tuple(x) for x in e["shared"]])))
    m = d["misses"]
    total = sum(m.values())
    if m.get("untold"):
        out.append("misses (faults that brought the page): %d, not told true or false: sc keeps "
                   "no record of the bytes a node wrote" % m["untold"])
    elif total:
        out.append("misses (faults that brought the page): %d true (read or wrote bytes another node had "
                   "written), %d false (others wrote only other bytes of the page), %d cold%s"
                   % (m["true"], m["false"], m["cold"],
                      " (and %d outside the sample of kept bytes)" % m["unsampled"]
                      if m.get("unsampled") else ""))
    return out


def section(out, title, items):
    """A section's heading after a blank line, and "(none)" when it has no items."""
    out.append("")
    out.append("-- %s --" % title)
    if not items:
        out.append("    (none)")


def lock_lines(j):
    """The locks' entries of the report, in words."""
    out = []
    for L in j["locks"]:
        out.append("%s: %s acquires by node, %s from another node (%d hand-overs), waited %s ms "
                   "(longest %.2f ms)"
                   % (L["lock"], "/".join(map(str, L["acquires"])),
                      "/".join(map(str, L["remote"])), L["handovers"],
                      "/".join("%.1f" % w for w in L["wait_ms"]), L["max_wait_ms"]))
        for s in L["sites"]:
            out.append("    taken at %s (%d)" % (s["site"], s["acquires"]))
        for dd in L["protects"]:
            rng = (", " + bytes_text([tuple(x) for x in dd["byte_ranges"]])
                   if dd["byte_ranges"] else "")
            out.append("    protects %s%s" % (dd["site"], rng))
    return out


def barrier_lines(p, j):
    """The barriers' entries of the report, in words."""
    out = []
    for B in j["barriers"]:
        out.append("%s: %s passed, waited %s ms by node (%.2f ms the most at once); "
                   "imbalance %.1f ms, node %d arrives last"
                   % (B["site"], "/".join(map(str, B["count"])),
                      "/".join("%.1f" % w for w in B["wait_ms"]),
                      max(B["wait_ms"]) and max(ms(x) for x in p.barriers[B["site"]]["max_ns"]),
                      B["imbalance_ms"], B["last_to_arrive"]))
    return out


def data_lines(p, data, out):
    """The by-data entries of to_json's list, in words."""
    n = p.n
    for i, d in enumerate(data, 1):
        out.append("")
        size = " [%d block%s, %s]" % (d["blocks"], "" if d["blocks"] == 1 else "s",
                                      kib(d["bytes"])) if d["blocks"] else ""
        out.append("%d. %s%s" % (i, d["site"], size))
        for c in d["callers"]:
            out.append("      called from %s" % c)
        out.append("    waited %.1f ms" % d["waited_ms"])
        out.append("    %-28s" % "" + "".join("%10s" % ("node %d" % k) for k in range(n)))
        for c in COUNTS:
            vals = d["per_node"][c]
            if not any(vals):
                continue
            if c.endswith("_ns"):
                out.append(_row(COUNT_LABELS[c], [v / 1e6 for v in vals], "%.1f"))
            else:
                out.append(_row(COUNT_LABELS[c], vals))
        for l in sharing_lines(p, d):
            out.append("    " + l)
        if d.get("advice_false"):
            out.append("    what to change (false sharing): " + d["advice_false"])
        if d.get("advice_true"):
            out.append("    what to change (true sharing): " + d["advice_true"])
        for hp in d["hottest_pages"]:
            pn = hp["per_node"]
            out.append("    page %d (%s): %d read / %d write faults, %d fetched, %d diffs, "
                       "%d invalidations, waited %.1f ms%s"
                       % (hp["page"], hp["address"], sum(pn["read_faults"]),
                          sum(pn["write_faults"]), sum(pn["fetched"]), sum(pn["diffs"]),
                          sum(pn["invalidations"]), hp["waited_ms"],
                          "; shared %s" % ", ".join("%s in %d intervals" % (k, v)
                                                     for k, v in hp["sharing"].items() if v)
                          if any(hp["sharing"].values()) else ""))


def to_text(p, top=10):
    j = to_json(p, top)
    n = p.n
    out = []
    out.append("== dsm sharing profile: %d node%s, %s, %d-byte pages ==" %
               (n, "" if n == 1 else "s", p.protocol, p.page_size))
    tt = j["totals"]
    out.append("")
    out.append("    %-28s" % "" + "".join("%10s" % ("node %d" % i) for i in range(n)))
    out.append(_row("run, s", tt["run_s"], "%.3f"))
    out.append(_row("faults", tt["faults"]))
    out.append(_row("waited in faults, ms", tt["fault_wait_ms"], "%.1f"))
    out.append(_row("in barriers, ms", tt["barrier_wait_ms"], "%.1f"))
    out.append(_row("for remote locks, ms", tt["lock_wait_ms"], "%.1f"))
    out.append(_row("in releases (diffs), ms", tt["release_wait_ms"], "%.1f"))
    out.append("    (releases run inside barriers and unlocks: that time is in both rows)")
    if tt["diffs_counted_only"]:
        out.append("    diffs' bytes kept for %d diffs (every page's first %d intervals, then a "
                   "sample of its intervals),\n    %d more counted only: the sharing counts "
                   "below are of the sample" % (tt["diffs_with_bytes"], BYTES_ALL,
                                                tt["diffs_counted_only"]))

    out.append("")
    out.append("-- by data: where the shared data came from, by time waited --")
    if not p.diff_recs:
        out.append("    (no diffs in this run%s: true and false sharing are told from the diffs"
                   % (" (sc moves whole pages, one writer at a time)" if p.protocol == "sc"
                      else "") +
                   " of the multiple-writer protocols, hlrc, lrc and erc)")
    if not j["data"]:
        out.append("    (no shared data faulted, was fetched or written)")
    data_lines(p, j["data"], out)
    if j["dsm_data"]:
        out.append("")
        out.append("-- dsm's own data: its runtime's, which the program's sharing moved "
                   "(nothing for the program to change) --")
        data_lines(p, j["dsm_data"], out)

    out.append("")
    out.append("-- by code: the source lines that faulted, by time waited --")
    if not j["code"]:
        out.append("    (no faults)")
    for i, l in enumerate(j["code"], 1):
        pn = l["per_node"]
        via = (" (in %s)" % ", ".join(sorted(l["via"]))) if l["via"] else ""
        out.append("%d. %s%s" % (i, l["line"], via))
        lm = l["misses"]
        misses = ("misses %d (sc: not told true or false)" % lm["untold"] if lm.get("untold")
                  else "misses %d true, %d false, %d cold" % (lm["true"], lm["false"], lm["cold"]))
        out.append("    %s read / %s write faults by node, waited %.1f ms; %s"
                   % ("/".join(map(str, pn["read_faults"])), "/".join(map(str, pn["write_faults"])),
                      l["waited_ms"], misses))
        for s in l["sites"]:
            out.append("    on data %s" % s)

    section(out, "locks, by time waited and hand-overs", j["locks"])
    out.extend(lock_lines(j))
    section(out, "barriers, by time waited", j["barriers"])
    out.extend(barrier_lines(p, j))
    return "\n".join(out) + "\n"


# ---- a picture: the sharing of each site's example page ---------------------------

NODE_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                "#bcbd22"]


def _esc(s):
    return (str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def page_svg(page_size, by_node, shared, width=720):
    """One page as a strip per node, its bytes coloured where that node
    wrote them, and the bytes two nodes wrote in red below."""
    lane = 14
    nodes = sorted(by_node)
    h = lane * (len(nodes) + 1) + 20
    scale = width / page_size
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">' % (width + 70, h)]
    for i, n in enumerate(nodes):
        y = i * lane
        out.append('<text x="0" y="%d" font-size="10">node %s</text>' % (y + 10, _esc(n)))
        out.append('<rect x="60" y="%d" width="%d" height="%d" fill="#eee"/>' % (y, width, lane - 2))
        for s, e in by_node[n]:
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>'
                       % (60 + s * scale, y, max((e - s) * scale, 0.5), lane - 2,
                          NODE_COLOURS[int(n) % len(NODE_COLOURS)]))
    y = len(nodes) * lane
    out.append('<text x="0" y="%d" font-size="10">both</text>' % (y + 10))
    for s, e in shared:
        out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#d62728"/>'
                   % (60 + s * scale, y, max((e - s) * scale, 0.5), lane - 2))
    out.append('<text x="60" y="%d" font-size="9">byte 0</text>' % (h - 2))
    out.append('<text x="%d" y="%d" font-size="9" text-anchor="end">%d</text>'
               % (60 + width, h - 2, page_size))
    out.append("</svg>")
    return "".join(out)


def bars_svg(items, width=720):
    """Horizontal bars, numbered as the entries below them and each under
    its label: [(label, value, [per-node values])]."""
    if not items:
        return ""
    top = max(v for _, v, _ in items) or 1
    row = 34
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">'
           % (width + 90, row * len(items) + 4)]
    for i, (label, v, parts) in enumerate(items):
        y = i * row
        text = "%d. %s" % (i + 1, label)
        # 11 px sans-serif: about 6 px a character
        short = text if len(text) * 6 <= width + 80 else text[:(width + 80) // 6 - 1] + "\u2026"
        out.append('<text x="0" y="%d" font-size="11">%s<title>%s</title></text>'
                   % (y + 11, _esc(short), _esc(text)))
        x = 0.0
        for n, pv in enumerate(parts):
            w = width * pv / top
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="14" fill="%s"><title>node %d: '
                       '%.1f ms</title></rect>' % (x, y + 15, w, NODE_COLOURS[n % 8], n, pv))
            x += w
        out.append('<text x="%.1f" y="%d" font-size="10">%.1f ms</text>' % (x + 4, y + 26, v))
    out.append("</svg>")
    return "".join(out)


def to_html(p, top=10):
    j = to_json(p, top)
    h = ["<!doctype html><html><head><meta charset='utf-8'><title>dsm sharing profile</title>",
         "<style>body{font-family:sans-serif;max-width:1000px;margin:auto}"
         "pre{background:#f6f6f6;padding:6px;white-space:pre-wrap;overflow-wrap:anywhere}"
         "svg{display:block}td,th{padding:2px 8px;text-align:right}"
         "td:first-child{text-align:left}</style></head><body>",
         "<h1>dsm sharing profile</h1><p>%d nodes, %s, %d-byte pages. Node colours: %s.</p>"
         % (p.n, _esc(p.protocol), p.page_size,
            ", ".join('<span style="color:%s">node %d</span>' % (NODE_COLOURS[i % 8], i)
                      for i in range(p.n)))]
    h.append("<h2>By data: time waited per allocation site</h2>")
    h.append(bars_svg([(d["site"], d["waited_ms"],
                        [(a + b) / 1e6 for a, b in zip(d["per_node"]["wait_ns"],
                                                       d["per_node"]["diff_wait_ns"])])
                       for d in j["data"]]))
    for i, d in enumerate(j["data"], 1):
        h.append("<h3>%d. %s</h3>" % (i, _esc(d["site"])))
        h.append("<table><tr><th></th>%s</tr>" % "".join("<th>node %d</th>" % k for k in range(p.n)))
        for c in COUNTS:
            vals = d["per_node"][c]
            if any(vals):
                cells = "".join("<td>%s</td>" % ("%.1f" % (v / 1e6) if c.endswith("_ns") else v)
                                for v in vals)
                h.append("<tr><td>%s</td>%s</tr>" % (_esc(COUNT_LABELS[c]), cells))
        h.append("</table>")
        for l in sharing_lines(p, d):
            h.append("<p>%s</p>" % _esc(l))
        for k in ("advice_false", "advice_true"):
            if d.get(k):
                h.append("<p><b>What to change:</b> %s</p>" % _esc(d[k]))
        for k, e in sorted(d["sharing"].get("examples", {}).items()):
            by = {n: [(s + e["offset_of_block"], t + e["offset_of_block"]) for s, t in r]
                  for n, r in e["bytes_by_node"].items()}
            sh = [(s + e["offset_of_block"], t + e["offset_of_block"]) for s, t in e["shared"]]
            h.append("<p>%s sharing, page %d in interval %d (the page's bytes):</p>"
                     % (k, e["page"], e["interval"]))
            h.append(page_svg(p.page_size, by, sh))
    h.append("<h2>By code: time waited per source line</h2>")
    h.append(bars_svg([(l["line"], l["waited_ms"], [w / 1e6 for w in l["per_node"]["wait_ns"]])
                       for l in j["code"]]))
    h.append("<ol>%s</ol>" % "".join("<li>%s: %s misses true/false/cold %d/%d/%d</li>"
                                       % (_esc(l["line"]), _esc(", ".join(l["sites"])),
                                          l["misses"]["true"], l["misses"]["false"],
                                          l["misses"]["cold"]) for l in j["code"]))
    h.append("<h2>Locks and barriers</h2>")
    for title, lines in (("Locks, by time waited and hand-overs", lock_lines(j)),
                         ("Barriers, by time waited", barrier_lines(p, j))):
        h.append("<h3>%s</h3><pre>%s</pre>" % (title, _esc("\n".join(lines) or "(none)")))
    h.append("</body></html>")
    return "\n".join(h)
