"""dsmaccess — how many bytes a faulting instruction touches (dsm-profile).

A fault records the address of its access, not its width. A miss is true
sharing when the access touched a byte another node wrote, and a diff
carries only the bytes that changed: an int that went from 0 to 2048 has
its low byte unchanged, so a read of that int, checked at its first byte
alone, would look like a read of bytes nobody wrote (false sharing). The
width comes from the instruction at the fault's program counter, read
with objdump (binutils, which dsm-profile needs already for addr2line and
nm): one objdump run a cluster of nearby addresses, not one an address.
"""
import re
import shutil
import subprocess

# A string instruction (rep movs, rep stos) runs on from the faulting byte.
TO_PAGE_END = 1 << 30
DEFAULT = 8          # an access whose width the text does not tell: a word
CLUSTER = 1 << 16    # addresses this close share one objdump run

_REG8 = re.compile(r"^%(r[a-d]x|r[sd]i|r[sb]p|r\d+|rip)$")
_REG4 = re.compile(r"^%(e[a-d]x|e[sd]i|e[sb]p|r\d+d)$")
_REG2 = re.compile(r"^%([a-d]x|[sd]i|[sb]p|r\d+w)$")
_REG1 = re.compile(r"^%([a-d][lh]|[sd]il|[sb]pl|r\d+b)$")
_SUFFIX = {"b": 1, "w": 2, "l": 4, "q": 8}


def _split_operands(text):
    """Operands of AT&T syntax, commas inside parentheses kept."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _reg_width(op):
    if op.startswith("%xmm"):
        return 16
    if op.startswith("%ymm"):
        return 32
    if op.startswith("%zmm"):
        return 64
    for pat, w in ((_REG8, 8), (_REG4, 4), (_REG2, 2), (_REG1, 1)):
        if pat.match(op):
            return w
    return None


def width_of(mnemonic, operands):
    """Bytes of memory an instruction (AT&T syntax, as objdump prints it)
    reads or writes; TO_PAGE_END for a string instruction."""
    m = mnemonic.split()
    if not m:
        return DEFAULT
    if m[0] in ("rep", "repz", "repe", "repnz", "repne") or \
            re.match(r"^(movs|stos|cmps|scas|lods)[bwlq]?$", m[0]):
        return TO_PAGE_END
    op = m[-1]
    ops = _split_operands(operands)
    # movzbl, movswq, movslq ...: the source's size is the first letter after
    # the extension
    ext = re.match(r"^mov[sz]([bwl])[wlq]$", op)
    if ext:
        return _SUFFIX[ext.group(1)]
    regs = [o for o in ops if o.startswith("%")]
    vector = [o for o in regs if o.startswith(("%xmm", "%ymm", "%zmm"))]
    if vector:
        # scalar floating point, and the moves of 4 or 8 bytes into a vector
        if re.search(r"ss$", op) or op in ("movd", "vmovd"):
            return 4
        if re.search(r"sd$", op) or op in ("movq", "vmovq", "movlps", "movhps", "movlpd",
                                            "movhpd", "vmovlps", "vmovhps", "movddup"):
            return 8
        return max(_reg_width(v) for v in vector)
    widths = [w for w in (_reg_width(r) for r in regs) if w]
    if widths:
        return max(widths)
    if op[-1:] in _SUFFIX and len(op) > 2:
        return _SUFFIX[op[-1]]
    return DEFAULT


_LINE = re.compile(r"^\s*([0-9a-f]+):\s+(\S.*)$")


def _parse(text, wanted):
    out = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        va = int(m.group(1), 16)
        if va not in wanted:
            continue
        ins = m.group(2).split("#")[0].split("<")[0].strip()
        parts = ins.split(None, 1)
        mnem, rest = parts[0], parts[1] if len(parts) > 1 else ""
        # a prefix printed as its own word (rep, lock, data16): keep it
        while mnem in ("lock", "data16", "notrack", "bnd", "rex", "rex.W") and rest:
            p2 = rest.split(None, 1)
            mnem, rest = p2[0], p2[1] if len(p2) > 1 else ""
        if mnem in ("rep", "repz", "repe", "repnz", "repne"):
            out[va] = TO_PAGE_END
            continue
        out[va] = width_of(mnem, rest)
    return out


class Widths:
    """(object, ELF virtual address) -> access width, by batches."""

    def __init__(self, objdump=None):
        self.objdump = objdump or shutil.which("objdump")
        self.cache = {}

    def resolve(self, obj, vas):
        vas = sorted(v for v in set(vas) if (obj, v) not in self.cache)
        if not vas:
            return
        got = {}
        if self.objdump:
            start = 0
            while start < len(vas):
                end = start
                while end + 1 < len(vas) and vas[end + 1] - vas[start] < CLUSTER:
                    end += 1
                lo, hi = vas[start], vas[end] + 16
                try:
                    r = subprocess.run([self.objdump, "-d", "--no-show-raw-insn", "-w",
                                        "--start-address=%#x" % lo, "--stop-address=%#x" % hi,
                                        obj], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       text=True, timeout=300)
                    got.update(_parse(r.stdout, set(vas[start:end + 1])))
                except (OSError, subprocess.SubprocessError):
                    pass
                start = end + 1
        for v in vas:
            self.cache[(obj, v)] = got.get(v, DEFAULT)

    def width(self, obj, va):
        if not obj:
            return DEFAULT
        if (obj, va) not in self.cache:
            self.resolve(obj, [va])
        return self.cache[(obj, va)]
