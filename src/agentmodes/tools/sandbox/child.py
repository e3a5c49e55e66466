"""The sandbox's child side: run as a script (`python -I -S child.py CONFIG_JSON`), never imported.

It starts as the caller's user (root here) because only root can create the namespaces and
switch to an unprivileged uid; it then isolates itself and runs the program in-process
(no second interpreter start, which keeps a run at ~50 ms). Stdlib only: it runs with -I -S.

Order matters:
1. (namespaces) unshare mount + network + pid namespaces. The network namespace has only a
   downed loopback, so every connection fails. In the mount namespace /tmp becomes the run's
   own directory; /var/tmp and /run (world-writable dirs, unix sockets) become empty
   read-only tmpfs; /dev/shm a small private tmpfs (multiprocessing needs it); the
   interpreter's prefix is re-exposed read-only if it sits under a directory the
   unprivileged uid cannot traverse (pyenv under /root here).
2. (namespaces) fork: the child is pid 1 of the new pid namespace, so when it dies the kernel
   kills every process it left behind (a fork bomb included). The parent just waits and
   mirrors the child's exit status, so `killpg` from the runner kills both.
3. rlimits (address space, cpu, nproc, file size, open files, no core dumps).
4. drop to the run's own uid/gid (unique per run, so RLIMIT_NPROC counts only this run;
   RLIMIT_NPROC is not enforced for uid 0), no_new_privs, parent-death signal.
5. (no namespaces) an audit hook refuses socket connect/bind/sendto: a best-effort fallback
   that ctypes or a subprocess can bypass; namespaces are the real barrier.
"""

import ctypes
import json
import os
import resource
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
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


def _enter_namespaces(cfg):
    _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID), "unshare")
    _check(_mount(None, "/", None, MS_REC | MS_PRIVATE), "make mounts private")
    for path in cfg["expose"]:
        _expose_readonly(path)
    # The run's directory becomes /tmp: tempfile and relative paths work, nothing else shows.
    _check(_mount(cfg["workdir"], "/tmp", None, MS_BIND), "bind workdir on /tmp")
    # /run holds unix sockets (databases, dbus) that a network namespace does not cover.
    for path in ("/var/tmp", "/run", "/dev/mqueue"):
        if os.path.isdir(path):
            _check(_mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k"),
                   f"read-only tmpfs on {path}")
    # multiprocessing needs a writable /dev/shm: a small private one, gone with the namespace.
    if os.path.isdir("/dev/shm"):
        _check(_mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      f"size={cfg['shm_mb']}m,mode=1777"), "private /dev/shm")


def _mirror_child(pid):
    """Namespace init's parent: wait for pid 1 and exit the way it did."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status))


def _set_limits(cfg):
    mb = 1024 * 1024
    limits = {
        resource.RLIMIT_AS: cfg["memory_mb"] * mb,
        resource.RLIMIT_CPU: cfg["cpu_s"],
        resource.RLIMIT_NPROC: cfg["max_procs"],
        resource.RLIMIT_FSIZE: cfg["max_file_mb"] * mb,
        resource.RLIMIT_NOFILE: cfg["max_open_files"],
        resource.RLIMIT_CORE: 0,
    }
    for which, value in limits.items():
        resource.setrlimit(which, (value, value))


def _drop_privileges(uid):
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


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
    cfg = json.loads(sys.argv[1])
    workdir = cfg["workdir"]
    if cfg["namespaces"]:
        _enter_namespaces(cfg)
        workdir = "/tmp"
        pid = os.fork()
        if pid:
            _mirror_child(pid)
        if _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC) != 0:
            pass  # a container may refuse a fresh /proc; the host's then shows, read-only to us
    _set_limits(cfg)
    if cfg["uid"] is not None:
        _drop_privileges(cfg["uid"])
    if cfg["namespaces"]:
        # Set after the uid change (which clears it): if the waiting parent is killed
        # (timeout), pid 1 dies too, and with it the whole namespace, even after a setsid().
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    else:
        sys.addaudithook(_deny_network)
    os.umask(0o077)
    os.chdir(workdir)
    _run_program(os.path.join(workdir, cfg["program"]))


main()
