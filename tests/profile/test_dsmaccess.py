#!/usr/bin/env python3
"""The access widths dsm-profile reads from a faulting instruction
(tools/dsmaccess.py): AT&T syntax as objdump prints it."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import dsmaccess as da  # noqa: E402

CASES = [
    ("mov", "(%rax),%edx", 4), ("mov", "%rdx,0x8(%rbx,%rcx,8)", 8), ("mov", "%al,(%rdi)", 1),
    ("mov", "%dx,(%rdi)", 2), ("movl", "$0x0,(%rax)", 4), ("movq", "$0x1,0x10(%rsp)", 8),
    ("movb", "$0x1,(%rax)", 1), ("addl", "$0x1,(%rax)", 4), ("movzbl", "(%rax),%eax", 1),
    ("movzwl", "0x2(%rax),%ecx", 2), ("movslq", "(%rax,%rdx,4),%rax", 4),
    ("movss", "(%rax),%xmm0", 4), ("movsd", "%xmm1,(%rax)", 8), ("addsd", "(%rdx),%xmm0", 8),
    ("movups", "(%rax),%xmm0", 16), ("vmovdqu", "%ymm0,(%rdi)", 32),
    ("vmovdqu64", "(%rsi),%zmm1", 64), ("movq", "(%rax),%xmm0", 8), ("movd", "%xmm0,(%rax)", 4),
    ("mov", "%r8d,(%rax)", 4), ("mov", "(%rax),%r9", 8), ("mov", "%r10b,(%rax)", 1),
    ("rep stos", "%al,%es:(%rdi)", da.TO_PAGE_END), ("movsb", "%ds:(%rsi),%es:(%rdi)", da.TO_PAGE_END),
    ("incl", "(%rax)", 4), ("incq", "0x8(%rax)", 8),
]
bad = 0
for mnem, ops, want in CASES:
    got = da.width_of(mnem, ops)
    if got != want:
        print("%s %s: width %d, expected %d" % (mnem, ops, got, want))
        bad += 1
text = """
  401126:	mov    (%rax),%edx
  40112a:	lock addl $0x1,(%rdi)
  40112f:	rep stos %rax,%es:(%rdi)
  401132:	movzbl 0x3(%rax),%eax  # comment
"""
got = da._parse(text, {0x401126, 0x40112a, 0x40112f, 0x401132})
want = {0x401126: 4, 0x40112a: 4, 0x40112f: da.TO_PAGE_END, 0x401132: 1}
if got != want:
    print("parsed %r, expected %r" % (got, want))
    bad += 1
print("ok" if not bad else "%d wrong" % bad)
sys.exit(1 if bad else 0)
