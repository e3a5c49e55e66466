"""The extraction worker: `python -m agentmodes.knowledge.extract_worker MEMORY_MB`.

A long-lived child of the ingesting process (extract_pool.py starts and reuses it). It reads
requests from stdin and answers on stdout, one pickled frame each, length-prefixed:

    request  (path: str, data: bytes, cpu_s: int, prepare: PrepareSpec | None)
    reply    ("ok", Extracted | Prepared, False) | ("unreadable", reason, retire)

With a PrepareSpec the worker also chunks and analyses what it extracted (prepare.py) and
answers with a Prepared document; if chunking fails it answers with the Extracted text, so
the parent chunks it and reports the failure exactly as it always did.

`retire` says the worker is about to exit (it ran out of memory while reading the request,
so its pipe is no longer in step): the parent starts a fresh one for the next document.

Its address space is capped at MEMORY_MB for its whole life; before each document its CPU
limit is set to what it has used so far plus `cpu_s`, so one document can take at most
`cpu_s` seconds of CPU before the kernel ends the worker with SIGXCPU. The parent sees the
worker die, skips that one document with the reason, and starts a fresh worker for the next.
Only the parent's own data ever comes in, so pickle is safe here.
"""

from __future__ import annotations

import pickle
import resource
import struct
import sys
from pathlib import Path

HEADER = struct.Struct("!Q")
MB = 1024 * 1024


def read_frame(stream) -> bytes | None:
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    return stream.read(size)


def write_frame(stream, payload: bytes) -> None:
    stream.write(HEADER.pack(len(payload)) + payload)
    stream.flush()


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _limit_cpu(seconds: int) -> None:
    soft = int(_cpu_used()) + 1 + seconds
    resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))


NO_MEMORY = "extraction needed more memory than allowed"


def _answer(path: str, data: bytes, spec) -> tuple:
    from .extract import UnreadableFile, extract
    try:
        extracted = extract(Path(path), data)
    except UnreadableFile as err:
        return ("unreadable", str(err), False)
    except MemoryError:
        return ("unreadable", NO_MEMORY, False)
    except RecursionError:
        return ("unreadable", "structure nested too deeply to extract", False)
    except Exception as err:  # noqa: BLE001 - one odd file must not stop the others
        return ("unreadable",
                f"could not extract text ({type(err).__name__}: {str(err)[:120]})", False)
    if spec is None:
        return ("ok", extracted, False)
    from .prepare import prepare
    try:
        return ("ok", prepare(extracted.title, extracted.blocks, spec), False)
    except MemoryError:
        return ("unreadable", NO_MEMORY, False)
    except Exception:  # noqa: BLE001 - the parent chunks it again and reports the reason
        return ("ok", extracted, False)


def _reply(stdout, reply: tuple) -> None:
    try:
        payload = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        payload = pickle.dumps(("unreadable", NO_MEMORY, False))
    write_frame(stdout, payload)


def main() -> None:
    memory_mb = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb * MB, memory_mb * MB))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            frame = read_frame(stdin)
            if frame is None:
                return
            path, data, cpu_s, spec = pickle.loads(frame)
            del frame
        except MemoryError:                 # the request itself did not fit
            _reply(stdout, ("unreadable", NO_MEMORY, True))
            return
        _limit_cpu(cpu_s)
        reply = _answer(path, data, spec)
        del data
        _reply(stdout, reply)


if __name__ == "__main__":
    main()
