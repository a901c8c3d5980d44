/* The floor of extension activation: posix_spawn of /bin/true and its reaping, timed N times.
 * Prints one duration in milliseconds per line. Build: cc -O2 -o spawn_floor spawn_floor.c */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 100;
    char *child_argv[] = {"/bin/true", NULL};
    for (int i = 0; i < runs; i++) {
        struct timespec start, end;
        clock_gettime(CLOCK_MONOTONIC, &start);
        pid_t pid;
        if (posix_spawn(&pid, "/bin/true", NULL, NULL, child_argv, environ) != 0) return 1;
        int status;
        waitpid(pid, &status, 0);
        clock_gettime(CLOCK_MONOTONIC, &end);
        printf("%.4f\n", (end.tv_sec - start.tv_sec) * 1e3 + (end.tv_nsec - start.tv_nsec) / 1e6);
    }
    return 0;
}
