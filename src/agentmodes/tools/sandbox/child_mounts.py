"""The filesystem a namespaced sandbox run sees: a new, empty root with only what Python needs.

Imported by child.py inside the new mount namespace (stdlib only: it runs with -I -S).
The root is a small read-only tmpfs holding:

- the interpreter's installation (sys.base_prefix) and the system library folders the
  loader searches (/usr/lib, /lib64, ... and /etc/ld.so.cache), bound read-only at their
  own paths; symlinks such as /lib -> usr/lib are recreated;
- /tmp, a tmpfs of `tmp_mb` holding a copy of the program and its files (the run's folder:
  writable, size-limited, gone with the run);
- /dev with null, zero, full, random and urandom bound from the host, a private /dev/shm;
- /proc, mounted fresh by the pid namespace's init (child.py).

Nothing else of the host exists in it: no home folders, no knowledge bases or chat
databases, no other runs' folders, no sockets under /run. pivot_root then detaches the
host's tree entirely (a chroot would leave it reachable).
"""

import ctypes
import os

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC = 32, 4096, 16384
MNT_DETACH = 2
# statvfs f_flag bit -> the MS_* flag a read-only bind remount must keep (locked in a userns)
KEEP_FLAGS = {2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC, 1024: 1024, 2048: 2048, 4096: 1 << 21}
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
LIBRARY_DIRS = ("/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32")
LOADER_FILES = ("/etc/ld.so.cache",)
DEVICES = ("null", "zero", "full", "random", "urandom")

_libc = ctypes.CDLL(None, use_errno=True)


class MountError(Exception):
    pass


def _mount(source, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    if _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)):
        raise MountError(f"mount {target}: {os.strerror(ctypes.get_errno())}")


def _bind_readonly(source, target):
    """Bind `source` at `target`, read-only, keeping flags a user namespace may not clear."""
    _mount(source, target, None, MS_BIND | MS_REC)
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID
    current = os.statvfs(target).f_flag
    for bit, keep in KEEP_FLAGS.items():
        if current & bit:
            flags |= keep
    _mount(None, target, None, flags)


def _place(root, path, is_dir):
    """Create `path` (absolute, host view) inside `root`, with its parents."""
    target = root + path
    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
    if is_dir:
        os.makedirs(target, mode=0o755, exist_ok=True)
    elif not os.path.exists(target):
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))
    return target


def _expose(root, paths):
    """Recreate each path's symlinks and bind the real folders and files read-only."""
    bound = []
    for path in paths:
        if os.path.islink(path):
            link = root + path
            os.makedirs(os.path.dirname(link), mode=0o755, exist_ok=True)
            if not os.path.lexists(link):
                os.symlink(os.readlink(path), link)
            continue
        real = os.path.realpath(path)
        if not os.path.exists(real) or any(real == b or real.startswith(b + "/") for b in bound):
            continue
        _bind_readonly(real, _place(root, real, os.path.isdir(real)))
        bound.append(real)


def _copy_tree(source, target, uid):
    """The run's files (program, helpers) into the sandbox's own /tmp."""
    for current, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if d != ".root"]
        relative = os.path.relpath(current, source)
        here = target if relative == "." else os.path.join(target, relative)
        os.makedirs(here, mode=0o700, exist_ok=True)
        for name in files:
            if name == ".stdin":
                continue
            with open(os.path.join(current, name), "rb") as src, \
                    open(os.path.join(here, name), "wb") as dst:
                dst.write(src.read())
        if uid is not None:
            for entry in [here, *(os.path.join(here, n) for n in files if n != ".stdin")]:
                os.chown(entry, uid, uid)


def build_root(cfg, uid):
    """Make the new root under the run's folder and switch to it (the caller is in a fresh
    mount namespace whose mounts are private)."""
    root = os.path.join(cfg["workdir"], ".root")
    os.makedirs(root, mode=0o755, exist_ok=True)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    _expose(root, [*cfg["expose"], *LIBRARY_DIRS, *LOADER_FILES])

    tmp = _place(root, "/tmp", True)
    owner = f",uid={uid},gid={uid}" if uid is not None else ""
    _mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={cfg['tmp_mb']}m,mode=0700{owner}")
    _copy_tree(cfg["workdir"], tmp, uid)

    dev = _place(root, "/dev", True)
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755")
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            _place(root, f"/dev/{name}", False)
            _mount(f"/dev/{name}", f"{dev}/{name}", None, MS_BIND)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{dev}/{name}")
    shm = _place(root, "/dev/shm", True)
    _mount("tmpfs", shm, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
           f"size={cfg['shm_mb']}m,mode=1777")
    _place(root, "/proc", True)

    _pivot(root)
    _mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "size=1m,mode=0755")


def _pivot(root):
    """pivot_root into `root` and drop the old root: the host tree is gone, not just hidden."""
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise MountError(f"pivot_root: unknown machine {os.uname().machine}")
    os.chdir(root)
    old = "old-root"
    os.mkdir(old, 0o700)
    if _libc.syscall(ctypes.c_long(number), b".", old.encode()):
        raise MountError(f"pivot_root: {os.strerror(ctypes.get_errno())}")
    os.chdir("/")
    if _libc.umount2(f"/{old}".encode(), MNT_DETACH):
        raise MountError(f"detach the old root: {os.strerror(ctypes.get_errno())}")
    os.rmdir(f"/{old}")
