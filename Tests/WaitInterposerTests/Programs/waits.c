// The wait interposer's test program: each mode makes a known set of wait calls (WaitInterposerTests reads
// them back from the trace) and prints the pids the test needs. Exits non-zero when a wait misbehaves.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <dirent.h>
#include <limits.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *self;

static void fail(const char *what) {
    fprintf(stderr, "waits: %s (errno %d)\n", what, errno);
    exit(3);
}

/// `count` epoll_wait(ep, …, 4, timeout_ms) on a new idle epoll descriptor; prints "ep <tid> <descriptor>".
static int epoll_waits(int count, int timeout_ms) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) fail("epoll_create1");
    printf("ep %d %d\n", (int)gettid(), ep);
    struct epoll_event events[4];
    for (int i = 0; i < count; i++)
        if (epoll_wait(ep, events, 4, timeout_ms) != 0) fail("epoll_wait did not time out");
    return ep;
}

static void sleep_ms(long ms) {
    struct timespec pause = { ms / 1000, (ms % 1000) * 1000000 };
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {}
}

/// Whether a descriptor of this process is open on `path` (the interposer's writer holds one while it writes).
static int open_here(const char *path) {
    DIR *fds = opendir("/proc/self/fd");
    if (!fds) return 0;
    int found = 0;
    char link[300], target[4096];
    for (struct dirent *entry; !found && (entry = readdir(fds));) {
        snprintf(link, sizeof link, "/proc/self/fd/%s", entry->d_name);
        ssize_t length = readlink(link, target, sizeof target - 1);
        if (length > 0) {
            target[length] = 0;
            found = strcmp(target, path) == 0;
        }
    }
    closedir(fds);
    return found;
}

/// Waits (up to 30 s) until the interposer's writer has written a packet into this thread's stream file and
/// closed it: it passes every 15 ms, but a loaded machine can leave it behind any fixed sleep. (stat and
/// readlink, not wait calls.)
static void wait_for_written_packet(void) {
    const char *directory = getenv("WAITS_TRACE_DIR");
    if (!directory) fail("WAITS_TRACE_DIR is not set");
    char path[4096], absolute[4096];
    snprintf(path, sizeof path, "%s/stream-%d-%d", directory, (int)getpid(), (int)gettid());
    struct stat info;
    for (int i = 0; i < 3000; i++) {
        if (stat(path, &info) == 0 && info.st_size > 0 && realpath(path, absolute) && !open_here(absolute)) return;
        sleep_ms(10);
    }
    fail("the interposer's writer wrote no packet within 30 s");
}

static void every_call(void) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event events[8];
    int pipes[2];
    if (ep < 0 || pipe(pipes) != 0) fail("setup");
    struct pollfd fds[3] = { { pipes[0], POLLIN, 0 }, { pipes[0], POLLIN, 0 }, { pipes[0], POLLIN, 0 } };
    if (poll(fds, 3, 2) != 0) fail("poll");
    struct timespec ts = { 0, 3000000 };
    if (ppoll(fds, 2, &ts, NULL) != 0) fail("ppoll");
    fd_set set;
    FD_ZERO(&set);
    FD_SET(pipes[0], &set);
    struct timeval tv = { 0, 4000 };
    if (select(pipes[0] + 1, &set, NULL, NULL, &tv) != 0) fail("select");
    FD_SET(pipes[0], &set);
    ts.tv_nsec = 5000000;
    if (pselect(pipes[0] + 1, &set, NULL, NULL, &ts, NULL) != 0) fail("pselect");
    if (epoll_pwait(ep, events, 8, 6, NULL) != 0) fail("epoll_pwait");
    ts.tv_nsec = 7000000;
    if (epoll_pwait2(ep, events, 5, &ts, NULL) != 0) fail("epoll_pwait2");
    // Ready at once: 1 descriptor.
    if (write(pipes[1], "x", 1) != 1) fail("write");
    if (poll(fds, 1, -1) != 1) fail("poll ready");
    printf("fds %d %d\n", ep, pipes[0]);
}

static void check_errno(void) {
    struct epoll_event events[1];
    errno = 0;
    if (epoll_wait(-1, events, 1, 0) != -1 || errno != EBADF) fail("epoll_wait(-1) did not leave EBADF");
    int ep = epoll_create1(EPOLL_CLOEXEC);
    printf("ep %d %d\n", (int)gettid(), ep);
    errno = 4242;
    if (epoll_wait(ep, events, 1, 0) != 0 || errno != 4242) fail("a successful epoll_wait changed errno");
    errno = 4343;
    if (poll(NULL, 0, 0) != 0 || errno != 4343) fail("a successful poll changed errno");
}

static void on_alarm(int signal) { (void)signal; }

static void interrupted(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_alarm;   // no SA_RESTART: the wait fails with EINTR
    sigaction(SIGALRM, &action, NULL);
    // Every 20 ms, not once: a loaded machine may let the first alarm come before the poll has begun.
    struct itimerval timer = { { 0, 20000 }, { 0, 20000 } };
    setitimer(ITIMER_REAL, &timer, NULL);
    int was_interrupted = poll(NULL, 0, 2000) == -1 && errno == EINTR;
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    if (!was_interrupted) fail("poll was not interrupted");
}

static void close_everything(void) {
    epoll_waits(3, 1);
    sleep_ms(150);    // past the 100 ms switch interval: the next wait closes the packet for the writer
    epoll_waits(1, 1);
    wait_for_written_packet();   // so that the writer is not writing it while every descriptor is closed
    for (int fd = 3; fd < 1024; fd++) close(fd);
    int null = open("/dev/null", O_RDWR);
    for (int fd = 3; fd <= 20; fd++) dup2(null, fd);
    epoll_waits(4, 1);
    sleep_ms(150);
    epoll_waits(2, 1);
}

static void *thread_main(void *argument) {
    epoll_waits(3, (int)(long)argument);
    return NULL;
}

static void threads(void) {
    pthread_t thread[3];
    for (long i = 0; i < 3; i++)
        if (pthread_create(&thread[i], NULL, thread_main, (void *)(i + 1)) != 0) fail("pthread_create");
    for (int i = 0; i < 3; i++) pthread_join(thread[i], NULL);
}

static pid_t wait_child(pid_t child) {
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("child failed");
    return child;
}

static void fork_only(void) {
    epoll_waits(2, 1);
    pid_t child = fork();
    if (child < 0) fail("fork");
    if (child == 0) {
        epoll_waits(3, 2);
        exit(0);
    }
    wait_child(child);
    epoll_waits(2, 1);
    printf("child %d\n", (int)child);
}

static void fork_exec(int clear) {
    epoll_waits(2, 1);
    pid_t child = fork();
    if (child < 0) fail("fork");
    if (child == 0) {
        if (clear) clearenv();
        execl(self, self, "epoll", "3", "2", (char *)NULL);
        _exit(4);
    }
    wait_child(child);
    epoll_waits(1, 1);
    printf("child %d\n", (int)child);
}

int main(int argc, char **argv) {
    self = argv[0];
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("pid %d\n", (int)getpid());
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "epoll") == 0) {
        epoll_waits(argc > 2 ? atoi(argv[2]) : 5, argc > 3 ? atoi(argv[3]) : 10);
    } else if (strcmp(mode, "calls") == 0) {
        every_call();
    } else if (strcmp(mode, "errno") == 0) {
        check_errno();
    } else if (strcmp(mode, "eintr") == 0) {
        interrupted();
    } else if (strcmp(mode, "close") == 0) {
        close_everything();
    } else if (strcmp(mode, "threads") == 0) {
        threads();
    } else if (strcmp(mode, "fork") == 0) {
        fork_only();
    } else if (strcmp(mode, "forkexec") == 0) {
        fork_exec(0);
    } else if (strcmp(mode, "clearenv") == 0) {
        fork_exec(1);
    } else if (strcmp(mode, "execself") == 0) {
        epoll_waits(2, 1);
        execl(self, self, "epoll", "3", "2", (char *)NULL);
        fail("execl");
    } else if (strcmp(mode, "badexec") == 0) {
        epoll_waits(2, 1);
        if (execl("/nonexistent/program", "x", (char *)NULL) != -1 || errno != ENOENT) fail("exec did not fail");
        epoll_waits(1, 1);
    } else if (strcmp(mode, "kill") == 0) {
        epoll_waits(5, 1);
        sleep_ms(120);
        epoll_waits(1, 1);   // closes the packet with the first five (switch interval)
        wait_for_written_packet();
        kill(getpid(), SIGKILL);
    } else {
        fprintf(stderr, "usage: waits epoll [count] [timeout_ms] | calls | errno | eintr | close | threads | fork | "
                        "forkexec | clearenv | execself | badexec | kill\n");
        return 2;
    }
    return 0;
}
