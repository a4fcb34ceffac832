"""A worker's own filesystem view without bubblewrap (``unshare`` mode: util-linux's ``unshare`` gave it PID,
network, IPC, UTS and mount namespaces, and it is root in them): private tmpfs mounts where a job may write, and
the interpreter reachable by the children's unprivileged uid even when it lives under a directory only root may
enter (pyenv under a 0700 ``/root``).

What this does not give, unlike bubblewrap: the rest of the host's filesystem stays visible to the children, who
can read what any user may read; they can write only where any user may (``/tmp``, ``/var/tmp`` and ``/dev/shm``
are private here; another world-writable directory of the host would not be).
"""

import ctypes
import os

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source, target, fstype, flags, data=None):
    def enc(s):
        return None if s is None else s.encode()

    if _libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _searchable_by_others(path):
    try:
        return bool(os.stat(path).st_mode & 0o001)
    except OSError:
        return False


def _hidden_tops(paths):
    """``{ancestor: [paths under it]}``: for each path, its topmost ancestor that others may not enter."""
    tops = {}
    for p in paths:
        parts = os.path.abspath(p).split("/")[1:]
        for i in range(1, len(parts)):
            anc = "/" + "/".join(parts[:i])
            if not _searchable_by_others(anc):
                tops.setdefault(anc, []).append(os.path.abspath(p))
                break
    return tops


def setup(cfg):
    """Make the mounts ``cfg["mounts"]`` asks for; an OSError says which failed (the worker then cannot start)."""
    m = cfg["mounts"]
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing here propagates to the host
    for top, inner in _hidden_tops([p for p in m["visible"] if os.path.exists(p)]).items():
        # a tmpfs over the ancestor that hides everything else of it, and the needed paths bound back read-only
        fds = [os.open(p, os.O_PATH) for p in inner]
        _mount("tmpfs", top, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
        for p, fd in zip(inner, fds):
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(p, mode=0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(p), mode=0o755, exist_ok=True)
                open(p, "a").close()
            _mount(f"/proc/self/fd/{fd}", p, None, MS_BIND | MS_REC)
            _mount(None, p, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
            os.close(fd)
    for p in m.get("readonly") or ():  # the scorer's cache: visible, never writable, whatever the child's uid
        if os.path.isdir(p):
            _mount(p, p, None, MS_BIND | MS_REC)
            _mount(None, p, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=0755,size={m['tmp_bytes']}")
    if os.path.isdir("/var/tmp"):
        _mount("tmpfs", "/var/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
    if os.path.isdir("/dev/shm"):
        shm = m.get("shm_bytes") or 0
        _mount(
            "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={shm}" if shm else "mode=0755,size=64k"
        )
