"""The sandbox's child side: run as a script (`python -I -S child.py CONFIG`), never imported.

It isolates itself, then runs the program in-process (no second interpreter start, which
keeps an isolated run at ~60 ms here). Stdlib only: it runs with -I -S.
Three levels (cfg["level"]):

- "namespaces" (started as root): mount + network + pid namespaces, then a fresh
  unprivileged uid per run (RLIMIT_NPROC is not enforced for uid 0, and a uid of its own
  makes the count this run's alone).
- "userns" (an ordinary user where unprivileged user namespaces are allowed): the same
  namespaces inside a new user namespace mapping only the caller's uid; all capabilities
  are dropped before the program runs. RLIMIT_NPROC counts the caller's processes, so the
  limit is the caller's current count plus max_procs.
- "basic": rlimits only, plus an audit hook refusing socket connect/bind/send: a
  best-effort fallback that ctypes or a subprocess can bypass.

With namespaces: the network namespace has only a downed loopback, so every connection
fails. In the mount namespace every mount is re-mounted read-only except /tmp, which becomes
the run's own directory; /var/tmp and /run (other users' files, unix sockets that a network
namespace does not cover) are hidden behind empty read-only tmpfs; /dev/shm is a small
private tmpfs (multiprocessing needs it); as root, the interpreter's prefix is re-exposed
read-only if it sits under a directory the unprivileged uid cannot traverse (pyenv under
/root here). Three processes then: this one (outside, mirrors the program's exit status, so
`killpg` from the runner hits it), pid 1 of the new pid namespace (only reaps; when it dies
the kernel kills everything left in the namespace: a fork bomb, a setsid() escape, a
daemon), and the program (pid 2). Parent-death signals chain the three together.
"""

# Start-up time matters (one interpreter per run): marshal and _signal are built in, while
# json and signal pull in re and enum (~20 ms per run here).
import _signal as signal
import ctypes
import marshal
import os
import resource
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
# statvfs f_flag bit -> the MS_* flag a read-only bind remount must keep (locked in a userns)
KEEP_FLAGS = {2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC, 1024: 1024, 2048: 2048, 4096: 1 << 21}
KERNEL_TREES = ("/proc", "/sys", "/dev")
SETUP_FAILED = 125          # exit code the runner reads as "the sandbox itself failed"

_libc = ctypes.CDLL(None, use_errno=True)


def _fail(message):
    sys.stderr.write(f"agentmodes-sandbox: setup failed: {message}\n")
    sys.stderr.flush()
    os._exit(SETUP_FAILED)


def _check(ret, what):
    if ret != 0:
        _fail(f"{what}: {os.strerror(ctypes.get_errno())}")


def _mount(source, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    return _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))


def _blocking_ancestor(path):
    """The topmost directory above `path` that 'others' cannot traverse, or None."""
    parts = os.path.abspath(path).split("/")[1:]
    current = ""
    for part in parts[:-1]:
        current += "/" + part
        if not os.stat(current).st_mode & 0o001:
            return current
    return None


def _expose_readonly(path):
    """Make `path` (the interpreter prefix) reachable by the unprivileged uid: hide its
    non-traversable ancestor behind a fresh tmpfs and bind the original back, read-only."""
    hidden = _blocking_ancestor(path)
    if hidden is None:
        return
    fd = os.open(path, os.O_PATH | os.O_DIRECTORY)   # keeps the original reachable once hidden
    _check(_mount("tmpfs", hidden, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k"),
           f"tmpfs over {hidden}")
    os.makedirs(path, mode=0o755, exist_ok=True)
    _check(_mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC), f"bind {path}")
    _check(_mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV),
           f"read-only {path}")
    os.close(fd)


def _map_caller(uid, gid):
    """In a new user namespace: keep the caller's own uid/gid, nothing else."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


def _mount_points():
    with open("/proc/self/mountinfo") as handle:
        points = [line.split()[4].replace("\\040", " ") for line in handle]
    return list(dict.fromkeys(points))


def _make_read_only(keep_writable):
    """Remount every mount read-only, keeping its other flags (a user namespace may not
    clear nosuid/nodev/noexec it inherited). Kernel trees are left to their own rules."""
    for point in _mount_points():
        if point == keep_writable or any(point == t or point.startswith(t + "/")
                                         for t in KERNEL_TREES):
            continue
        try:
            current = os.statvfs(point).f_flag
        except OSError:
            continue                      # hidden by a later mount
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for bit, keep in KEEP_FLAGS.items():
            if current & bit:
                flags |= keep
        _check(_mount(None, point, None, flags), f"read-only {point}")


def _enter_namespaces(cfg):
    as_user = cfg["level"] == "userns"
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | (CLONE_NEWUSER if as_user else 0)
    _check(_libc.unshare(flags), "unshare")
    if as_user:
        _map_caller(uid, gid)
    _check(_mount(None, "/", None, MS_REC | MS_PRIVATE), "make mounts private")
    if not as_user:
        for path in cfg["expose"]:
            _expose_readonly(path)
    # The run's directory becomes /tmp: tempfile and relative paths work, nothing else shows.
    _check(_mount(cfg["workdir"], "/tmp", None, MS_BIND), "bind workdir on /tmp")
    _make_read_only(keep_writable="/tmp")
    for path in ("/var/tmp", "/run", "/dev/mqueue"):
        if os.path.isdir(path):
            _check(_mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k"),
                   f"read-only tmpfs on {path}")
    if os.path.isdir("/dev/shm"):
        _check(_mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      f"size={cfg['shm_mb']}m,mode=1777"), "private /dev/shm")


def _mirror(pid, status_pipe):
    """Outside the pid namespace: wait for its init and exit the way the program did
    (init passes the program's raw wait status through `status_pipe`)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    _, status = os.waitpid(pid, 0)
    reported = os.read(status_pipe, 32)
    if reported:
        status = int(reported)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):     # these cannot be re-armed
            signal.signal(sig, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status))


def _init(program_pid, status_pipe):
    """Pid 1 of the namespace: reap orphans until the program ends, report its status, exit
    (which kills whatever it left behind). The program is not pid 1 itself because pid 1
    ignores signals it has no handler for, so `os.kill(os.getpid(), SIGTERM)` or abort()
    would not end it."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == program_pid:
            os.write(status_pipe, str(status).encode())
            os._exit(0)


def _processes_of(uid):
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                count += os.stat(f"/proc/{entry}").st_uid == uid
            except OSError:
                pass
    return count


def _set_limits(cfg, nproc):
    mb = 1024 * 1024
    limits = {
        resource.RLIMIT_AS: cfg["memory_mb"] * mb,
        resource.RLIMIT_CPU: cfg["cpu_s"],
        resource.RLIMIT_NPROC: nproc,
        resource.RLIMIT_FSIZE: cfg["max_file_mb"] * mb,
        resource.RLIMIT_NOFILE: cfg["max_open_files"],
        resource.RLIMIT_CORE: 0,
    }
    for which, value in limits.items():
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)      # an ordinary user cannot raise a hard limit
        # CPU: SIGXCPU at the soft limit says why it died; SIGKILL a second later if caught.
        top = value + 1 if which == resource.RLIMIT_CPU and hard == resource.RLIM_INFINITY \
            else value
        resource.setrlimit(which, (value, top))


def _drop_privileges(uid):
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _drop_capabilities():
    """The user namespace gave us every capability inside it; keep none."""
    _check(_libc.capset(ctypes.byref(_CapHeader(0x20080522, 0)), (_CapData * 2)()), "capset")


def _deny_network(event, args):
    if event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
        raise PermissionError(f"network access is disabled in the sandbox ({event})")


def _run_program(path):
    """Run the program as __main__; show its traceback without this file's frames."""
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(path))
    namespace = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    try:
        exec(compile(source, path, "exec"), namespace)
    except SystemExit:
        raise
    except BaseException as err:  # the program's own failure: report it like python would
        import traceback
        sys.stdout.flush()
        traceback.print_exception(type(err), err, err.__traceback__.tb_next)
        sys.stderr.flush()
        os._exit(1)


def main():
    # If the runner dies (Ctrl-C, crash), this process dies, and the chain below with it.
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    cfg = marshal.loads(bytes.fromhex(sys.argv[1]))
    level = cfg["level"]
    workdir = cfg["workdir"]
    nproc = cfg["max_procs"]
    if level == "userns":
        nproc += _processes_of(os.getuid())
    if level in ("namespaces", "userns"):
        _enter_namespaces(cfg)
        workdir = "/tmp"
        status_read, status_write = os.pipe()
        pid = os.fork()
        if pid:
            os.close(status_write)
            _mirror(pid, status_read)
        os.close(status_read)
        # If the mirror is killed (timeout), init dies, and with it the whole namespace.
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # A container may refuse a fresh /proc; the host's then stays, read-only to us.
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        pid = os.fork()
        if pid:
            _init(pid, status_write)
        os.close(status_write)
    _set_limits(cfg, nproc)
    if level == "namespaces":
        _drop_privileges(cfg["uid"])
    elif level == "userns":
        _drop_capabilities()
    if level == "basic":
        sys.addaudithook(_deny_network)
    else:
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        # Set after the uid change (which clears it): the program dies with its init.
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.umask(0o077)
    os.chdir(workdir)
    _run_program(os.path.join(workdir, cfg["program"]))


main()
