// Waits through libc (poll, 10 times 2 ms), then execs the program its arguments name: under `rlctl record --any`
// the interposer records the first part and claims the thread's waits, and the exec gives them back to the kernel
// when the new program is one LD_PRELOAD cannot reach.
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    for (int i = 0; i < 10; i++) poll(NULL, 0, 2);
    if (argc < 2) return 0;
    execv(argv[1], argv + 1);
    perror("execv");
    return 1;
}
