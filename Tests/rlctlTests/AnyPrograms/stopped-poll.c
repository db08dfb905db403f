// Twenty 1 ms polls (a loop), then one of 3 s with nothing to wait on, after writing its pid to the file its
// argument names: the test stops and continues it (SIGSTOP, SIGCONT) during that poll, which the kernel then goes
// on with through restart_syscall, out of the program's sight (poll returns once, after 3 s in all).
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    for (int i = 0; i < 20; i++) poll(NULL, 0, 1);
    FILE *file = fopen(argv[1], "w");
    if (!file) return 1;
    fprintf(file, "%d\n", (int)getpid());
    fclose(file);
    return poll(NULL, 0, 3000) == 0 ? 0 : 1;
}
