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
fails. The mount namespace gets a new, empty root (child_mounts.py): the Python
installation and system libraries read-only, the run's own size-limited /tmp holding the
program, a minimal /dev, a fresh /proc; no other file of the host. Three processes then:
this one (outside, mirrors the program's exit status, so `killpg` from the runner hits it),
pid 1 of the new pid namespace (only reaps; when it dies the kernel kills everything left
in the namespace: a fork bomb, a setsid() escape, a daemon), and the program (pid 2).
Parent-death signals chain the three together.

Every level: the run joins its cgroups first (runner.py made them, when it could: one
memory and process budget for the whole run), and the program runs under no_new_privs and
a seccomp filter that refuses new user namespaces (child_seccomp.py).
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
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MS_REC, MS_PRIVATE = 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SETUP_FAILED = 125          # exit code the runner reads as "the sandbox itself failed"

_libc = ctypes.CDLL(None, use_errno=True)
# The helpers next to this file (stdlib only, like this one); -I leaves them off sys.path.
HERE = os.path.dirname(os.path.abspath(__file__))


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


def _map_caller(uid, gid):
    """In a new user namespace: keep the caller's own uid/gid, nothing else."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


def _enter_namespaces(cfg, child_mounts):
    as_user = cfg["level"] == "userns"
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | (CLONE_NEWUSER if as_user else 0)
    _check(_libc.unshare(flags), "unshare")
    if as_user:
        _map_caller(uid, gid)
    _check(_mount(None, "/", None, MS_REC | MS_PRIVATE), "make mounts private")
    try:
        child_mounts.build_root(cfg, None if as_user else cfg["uid"])
    except (child_mounts.MountError, OSError) as err:
        _fail(f"new root: {err}")


def _join_cgroups(paths):
    """Put this process (and so everything it starts) into the run's cgroups."""
    for path in paths:
        try:
            with open(os.path.join(path, "cgroup.procs"), "w") as handle:
                handle.write(str(os.getpid()))
        except OSError as err:
            _fail(f"join cgroup {path}: {err.strerror}")


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
    # Imported now: once the new root is in place, this folder is out of sight.
    sys.path.insert(0, HERE)
    import child_mounts
    import child_seccomp
    sys.path.remove(HERE)
    _join_cgroups(cfg["cgroups"])
    level = cfg["level"]
    workdir = cfg["workdir"]
    nproc = cfg["max_procs"]
    if level == "userns":
        nproc += _processes_of(os.getuid())
    if level in ("namespaces", "userns"):
        _enter_namespaces(cfg, child_mounts)
        workdir = "/tmp"
        status_read, status_write = os.pipe()
        pid = os.fork()
        if pid:
            os.close(status_write)
            _mirror(pid, status_read)
        os.close(status_read)
        # If the mirror is killed (timeout), init dies, and with it the whole namespace.
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # A container may refuse a fresh /proc; /proc then stays empty (the host's is gone).
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
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if level == "basic":
        sys.addaudithook(_deny_network)
    else:
        # Set after the uid change (which clears it): the program dies with its init.
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:
        child_seccomp.install()
    except OSError as err:
        _fail(f"seccomp: {err.strerror}")
    os.umask(0o077)
    os.chdir(workdir)
    _run_program(os.path.join(workdir, cfg["program"]))


main()
