"""Running a long libringsim call so that Ctrl-C stops it: the call runs
on a helper thread while the calling thread waits, and KeyboardInterrupt
is raised once the call has ended, never before (what it ran on is freed
after)."""
import signal
import threading


def call(fn, interrupt, name):
    """fn() on a helper thread named name, the calling thread waiting;
    returns what fn returned. interrupt(why), with why bytes, asks fn's
    call to stop; it may be called from a signal handler.

    From the main thread, for the call's length, SIGINT goes to a handler
    that only interrupts the call and notes the signal; Python's own (or
    the caller's) handler then runs on it once the call has ended. A
    handler that raises could do so anywhere, also inside Thread.start(),
    where no try can tell whether the call's thread exists. The wait wakes
    every 0.1 s: a signal that the kernel delivers to another thread (the
    call's, a library's) sets only Python's flag, which a waiting main
    thread reads when it wakes. SIG_IGN, SIG_DFL and a handler set from C
    are left as they are. Any other exception a handler raises during the
    wait also stops the call first.

    The end is an Event, not Thread.join(): before Python 3.12 a
    KeyboardInterrupt inside join() can mark a running thread as stopped
    (bpo-45274)."""
    box = []
    done = threading.Event()

    def target():
        try:
            box.append(fn())
        finally:
            done.set()

    frames = []

    def on_sigint(signum, frame):
        frames.append(frame)
        interrupt(b"SIGINT")

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGINT)
        if callable(previous):
            signal.signal(signal.SIGINT, on_sigint)
        else:
            previous = None
    interrupted = None
    try:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        while not done.is_set():
            try:
                done.wait(0.1)
            except BaseException as e:  # another handler raised: stop first
                interrupted = interrupted or e
                interrupt(b"an exception in the waiting thread")
        thread.join()  # its call has returned: the thread is ending
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if interrupted is not None:
        raise interrupted
    if frames:
        previous(signal.SIGINT, frames[0])  # KeyboardInterrupt, by default
    return box[0]
