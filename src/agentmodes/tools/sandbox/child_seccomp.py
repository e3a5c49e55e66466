"""A seccomp filter for the sandboxed program: no new user namespaces, no way around it.

Imported by child.py (stdlib only). An unprivileged process may create a user namespace
and holds every capability inside it; that reopens mounting, a fresh network stack and
the kernel code behind them to the program. The filter answers EPERM to `unshare` and
`clone` with CLONE_NEWUSER, and ENOSYS to `clone3` (its flags live in memory a filter
cannot read; glibc then falls back to `clone`, which is checked). Calls from another ABI
(x32 on x86_64, which has its own numbers) are refused outright. Everything else passes.

Installed last, after no_new_privs, so it binds the program and all it starts; a filter
cannot be removed, only made stricter.
"""

import ctypes
import os

# per machine: AUDIT_ARCH value, unshare, clone, clone3
ARCHES = {"x86_64": (0xC000003E, 272, 56, 435), "aarch64": (0xC00000B7, 97, 220, 435)}
X32_SYSCALL_BIT = 0x40000000
CLONE_NEWUSER = 0x10000000
EPERM, ENOSYS = 1, 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_ERRNO, SECCOMP_RET_ALLOW = 0x80000000, 0x00050000, \
    0x7FFF0000
# classic BPF
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
NR, ARCH, ARG0 = 0, 4, 16           # offsets in struct seccomp_data (ARG0: its low 32 bits)


class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Insn))]


def program(machine=None):
    """The filter as (code, jt, jf, k) tuples, or None on a machine we have no table for."""
    arch = ARCHES.get(machine or os.uname().machine)
    if arch is None:
        return None
    audit_arch, unshare, clone, clone3 = arch
    deny = SECCOMP_RET_ERRNO | EPERM
    return [
        (LD_W_ABS, 0, 0, ARCH),
        (JEQ_K, 1, 0, audit_arch),                 # our ABI: go on
        (RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),   # another ABI: never
        (LD_W_ABS, 0, 0, NR),
        (JGE_K, 0, 1, X32_SYSCALL_BIT),
        (RET_K, 0, 0, deny),                       # x32 numbers
        (JEQ_K, 0, 1, clone3),
        (RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS),
        (JEQ_K, 1, 0, unshare),
        (JEQ_K, 0, 3, clone),
        (LD_W_ABS, 0, 0, ARG0),                    # flags of unshare / clone
        (JSET_K, 0, 1, CLONE_NEWUSER),
        (RET_K, 0, 0, deny),
        (RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]


def install():
    """Install the filter on this process (needs no_new_privs). False if not supported."""
    insns = program()
    if insns is None:
        return False
    table = (_Insn * len(insns))(*[_Insn(*i) for i in insns])
    prog = _Prog(len(insns), table)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0):
        raise OSError(ctypes.get_errno(), "seccomp filter refused")
    return True
