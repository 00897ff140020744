#!/usr/bin/env python3
"""Runs a test command and turns a hang into a failure that says where it hung.

    test-watchdog.py QUIET_SECONDS -- swift test ...

The command's output passes through unchanged. When it prints nothing for QUIET_SECONDS (no
test ended in that long, while a full run ends one every few seconds), every thread of the
test process is printed by gdb, and what is left of the run is stopped: the run exits 124.
A CI that stops a silent job at its own limit reports only "Terminated"; this reports the
stacks, each thread's Buckia frames last, where a tail of the log shows them.
"""

import os
import re
import signal
import subprocess
import tempfile
import sys
import threading
import time


def test_processes(root):
    """The pids under `root` running a test bundle (SwiftPM's `*PackageTests.xctest`, or what
    TEST_WATCHDOG_MATCH names)."""
    match = os.environ.get("TEST_WATCHDOG_MATCH", "PackageTests.xctest")
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if match in command and descends(int(entry), root):
            found.append(int(entry))
    return found


def descends(pid, root):
    """Whether `pid` is `root` or one of its descendants."""
    for _ in range(64):
        if pid == root:
            return True
        try:
            with open(f"/proc/{pid}/stat") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return False
        if pid <= 1:
            return False
    return False


def report(pid):
    """Prints every thread's stack (gdb, names demangled by `swift demangle`) in full to a
    file, and here each thread's Buckia frames."""
    try:
        stacks = subprocess.run(
            ["gdb", "-p", str(pid), "-batch", "-ex", "set pagination off", "-ex", "thread apply all bt"],
            capture_output=True, text=True, timeout=300).stdout
        stacks = subprocess.run(["swift", "demangle", "--simplified"], input=stacks, capture_output=True, text=True, timeout=120).stdout or stacks
    except (OSError, subprocess.TimeoutExpired) as error:
        print(f"test-watchdog: gdb could not read the stacks of {pid}: {error}", flush=True)
        return
    path = os.path.join(tempfile.mkdtemp(prefix="buckia-test-watchdog-"), f"stacks-{pid}.txt")
    with open(path, "w") as handle:
        handle.write(stacks)
    print(f"test-watchdog: all stacks of {pid} are in {path}; each thread's Buckia frames:", flush=True)
    for thread in re.split(r"\n(?=Thread \d+ )", stacks):
        lines = thread.strip().splitlines()
        if not lines or not lines[0].startswith("Thread "):
            continue
        ours = [line.strip() for line in lines[1:] if "Buckia" in line or "Tests" in line]
        if ours:
            print(f"- {lines[0][:120]}", flush=True)
            for line in ours[:12]:
                print("    " + re.sub(r"^#\d+\s+(0x[0-9a-f]+ in )?", "", line)[:300], flush=True)


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    quiet = float(sys.argv[1])
    child = subprocess.Popen(sys.argv[3:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    last = [time.monotonic()]
    hung = threading.Event()
    # Swift Testing prints `◇ Test "NAME" started.` and later `✔`/`✘ Test "NAME" … after`:
    # what started and has not ended is what the run waits on.
    running = {}
    lock = threading.Lock()

    def watch():
        while child.poll() is None:
            time.sleep(5)
            if time.monotonic() - last[0] < quiet:
                continue
            print(f"\ntest-watchdog: nothing printed for {int(quiet)} s; the run looks hung.", flush=True)
            hung.set()
            for pid in test_processes(child.pid):
                report(pid)
            with lock:
                waiting = sorted(name for name, count in running.items() if count > 0)
            print(f"test-watchdog: {len(waiting)} tests started and not ended:", flush=True)
            for name in waiting:
                print(f"- {name}", flush=True)
            os.killpg(child.pid, signal.SIGKILL)
            return

    threading.Thread(target=watch, daemon=True).start()
    for line in iter(child.stdout.readline, b""):
        last[0] = time.monotonic()
        text = line.decode(errors="replace")
        test = re.match(r'^\S+ Test "(.*?)" (started\.|.*(passed|failed) after)', text)
        if test:
            with lock:
                running[test.group(1)] = running.get(test.group(1), 0) + (1 if test.group(2) == "started." else -1)
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    status = child.wait()
    if hung.is_set():
        print("test-watchdog: the run was stopped as hung (exit 124).", flush=True)
        return 124
    return status


if __name__ == "__main__":
    sys.exit(main())
