// Workloads for the kernel recorder's tests and Benchmarks/kernel-view-bench.sh, compiled with cc by them:
//   kernel_workload timerfd PERIOD_US COUNT   a timerfd loop (blocking read); prints "lateness p50 N ns max N ns"
//   kernel_workload sleep PERIOD_US COUNT     clock_nanosleep loop (relative)
//   kernel_workload pingpong ROUNDS [RATE]    two threads passing a byte over two pipes (2 switches per round),
//                                             at most RATE rounds a second when given (the pinger spins between)
//   kernel_workload spin SECONDS              a busy loop
//   kernel_workload paced MILLISECONDS        sends over a loopback TCP connection with a pacing rate, so that the
//                                             kernel paces it with soft hrtimers (they expire in the HRTIMER softirq)
// Each prints "ready TID…" (its threads' ids) on stdout once its threads run, so that a test can follow them.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int compare(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int timerfd_loop(long period_us, long count) {
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    if (fd < 0) return perror("timerfd_create"), 1;
    uint64_t *late = calloc((size_t)count, sizeof *late);
    uint64_t start = now_ns() + 1000000, period = (uint64_t)period_us * 1000;
    struct itimerspec spec = {
        .it_interval = { .tv_sec = period / 1000000000, .tv_nsec = period % 1000000000 },
        .it_value = { .tv_sec = start / 1000000000, .tv_nsec = start % 1000000000 },
    };
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL);
    printf("ready %ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    uint64_t expected = start;
    for (long i = 0; i < count; i++) {
        uint64_t expirations;
        if (read(fd, &expirations, sizeof expirations) != sizeof expirations) return perror("read"), 1;
        expected += period * (expirations - 1);
        late[i] = now_ns() - expected;
        expected += period;
    }
    qsort(late, (size_t)count, sizeof *late, compare);
    printf("lateness p50 %llu ns max %llu ns\n", (unsigned long long)late[count / 2], (unsigned long long)late[count - 1]);
    return 0;
}

static int sleep_loop(long period_us, long count) {
    printf("ready %ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    struct timespec period = { .tv_sec = period_us / 1000000, .tv_nsec = (period_us % 1000000) * 1000 };
    for (long i = 0; i < count; i++) clock_nanosleep(CLOCK_MONOTONIC, 0, &period, NULL);
    return 0;
}

static int pipes[2][2];
static long rounds;

static void *pong(void *unused) {
    (void)unused;
    char byte;
    for (long i = 0; i < rounds; i++) {
        if (read(pipes[0][0], &byte, 1) != 1 || write(pipes[1][1], &byte, 1) != 1) break;
    }
    return NULL;
}

static int pingpong(long count, long rate) {
    rounds = count;
    if (pipe(pipes[0]) || pipe(pipes[1])) return perror("pipe"), 1;
    pthread_t thread;
    pthread_create(&thread, NULL, pong, NULL);
    printf("ready %ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    uint64_t start = now_ns();
    char byte = 'x';
    for (long i = 0; i < count; i++) {
        // Paced by spinning, not sleeping: a sleep would add timer wake-ups to what is measured.
        if (rate > 0) while (now_ns() < start + (uint64_t)i * 1000000000ull / (uint64_t)rate) {}
        if (write(pipes[0][1], &byte, 1) != 1 || read(pipes[1][0], &byte, 1) != 1) break;
    }
    pthread_join(thread, NULL);
    double seconds = (double)(now_ns() - start) / 1e9;
    printf("rounds %ld in %.3f s: %.0f context switches/s\n", count, seconds, 2.0 * (double)count / seconds);
    return 0;
}

static int spin(double seconds) {
    printf("ready %ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
    volatile uint64_t x = 0;
    while (now_ns() < end) for (int i = 0; i < 1000; i++) x++;
    return 0;
}

static void *drain(void *descriptor) {
    char buffer[65536];
    while (read(*(int *)descriptor, buffer, sizeof buffer) > 0) {}
    return NULL;
}

static int paced(long milliseconds) {
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0 || bind(listener, (struct sockaddr *)&address, length) || listen(listener, 1)
        || getsockname(listener, (struct sockaddr *)&address, &length)) return perror("listen"), 1;
    int sender = socket(AF_INET, SOCK_STREAM, 0);
    if (sender < 0 || connect(sender, (struct sockaddr *)&address, length)) return perror("connect"), 1;
    int receiver = accept(listener, NULL, NULL);
    if (receiver < 0) return perror("accept"), 1;
    // A pacing rate turns on TCP's own pacing whatever the congestion control and the queueing discipline.
    unsigned int rate = 20u * 1000u * 1000u;
    if (setsockopt(sender, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof rate)) return perror("SO_MAX_PACING_RATE"), 1;
    pthread_t thread;
    pthread_create(&thread, NULL, drain, &receiver);
    printf("ready %ld\n", (long)syscall(SYS_gettid));
    fflush(stdout);
    static char chunk[16384];
    uint64_t end = now_ns() + (uint64_t)milliseconds * 1000000ull;
    while (now_ns() < end) if (write(sender, chunk, sizeof chunk) < 0) return perror("write"), 1;
    close(sender);
    pthread_join(thread, NULL);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "timerfd")) return timerfd_loop(atol(argv[2]), atol(argv[3]));
    if (argc >= 4 && !strcmp(argv[1], "sleep")) return sleep_loop(atol(argv[2]), atol(argv[3]));
    if (argc >= 3 && !strcmp(argv[1], "pingpong")) return pingpong(atol(argv[2]), argc >= 4 ? atol(argv[3]) : 0);
    if (argc >= 3 && !strcmp(argv[1], "spin")) return spin(atof(argv[2]));
    if (argc >= 3 && !strcmp(argv[1], "paced")) return paced(atol(argv[2]));
    fprintf(stderr, "usage: kernel_workload timerfd|sleep PERIOD_US COUNT | pingpong ROUNDS [RATE] | spin SECONDS | paced MILLISECONDS\n");
    return 2;
}
