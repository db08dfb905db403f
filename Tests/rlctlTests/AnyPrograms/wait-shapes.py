# The shapes of waiting that the wait interposer's LTTng batches must carry whole (AnyProgramTests): threads that
# wait and exit, a main thread with several batches' worth, a forked child, a thread still blocked when the
# process execs, and the exec'd image. Every wait is epoll_wait through select.epoll.poll; the counts are printed
# by nobody: the test compares the LTTng recording with the embedded one, wait by wait.
#   python3 wait-shapes.py first PID_FILE | second
import os, select, sys, threading, time

def waits(count, timeout):
    ep = select.epoll()
    for _ in range(count):
        ep.poll(timeout)
    ep.close()

if sys.argv[1] == "second":
    waits(45, 0)
    sys.exit(0)

with open(sys.argv[2], "w") as pid_file: pid_file.write(str(os.getpid()))
workers = [threading.Thread(target=waits, args=(40 + 7 * i, 0)) for i in range(4)]
for worker in workers: worker.start()
for worker in workers: worker.join()
waits(100, 0)
waits(3, 0.002)
child = os.fork()
if child == 0:
    waits(33, 0)
    os._exit(0)
os.waitpid(child, 0)
# Blocked in its wait (no timeout) when the process execs: the recording ends while it waits.
blocked = select.epoll()
threading.Thread(target=lambda: blocked.poll(-1), daemon=True).start()
waits(5, 0.001)
time.sleep(0.05)   # not a wrapped call: the blocked thread is in its wait by now
os.execv(sys.executable, [sys.executable, sys.argv[0], "second"])
