/*
 * doorbell_jam: can a subscriber that holds only its own end of a doorbell make the
 * publisher's non-blocking doorbell block?
 *
 * The publisher keeps the writing end, non-blocking, and rings every millisecond; the hostile
 * subscriber holds only the reading end and splices from it into a socket that nobody drains
 * (so the splice blocks once the socket's buffer is full). Two doorbells, one per run:
 *
 *   pipe     a pipe: the publisher writes 1 byte to the write end (O_NONBLOCK)
 *   socket   a SOCK_SEQPACKET pair, as the connection: send with MSG_DONTWAIT
 *
 * (splice from a SOCK_SEQPACKET socket is refused, so there the subscriber cannot even start.)
 * The publisher reports each ring that took longer than 100 ms, or the first error other than
 * EAGAIN; a watchdog ends a run whose publisher is stuck, and the verdict names it. An
 * experiment behind docs/performance.md ("An event loop's wake is the doorbell's"), not part of
 * the comparison binary:
 *
 *   cc -O2 -o doorbell_jam benches/experiments/doorbell_jam.c
 *   ./doorbell_jam pipe; ./doorbell_jam socket
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RINGS 2000

static double ms_since(const struct timespec *a) {
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (b.tv_sec - a->tv_sec) * 1e3 + (b.tv_nsec - a->tv_nsec) / 1e6;
}

int main(int argc, char **argv) {
    int use_pipe = argc > 1 && strcmp(argv[1], "pipe") == 0;
    if (argc < 2 || (!use_pipe && strcmp(argv[1], "socket") != 0)) {
        fprintf(stderr, "usage: doorbell_jam pipe|socket\n");
        return 2;
    }
    int bell[2], sink[2];
    if (use_pipe ? pipe2(bell, 0) : socketpair(AF_UNIX, SOCK_SEQPACKET, 0, bell)) {
        perror("doorbell");
        return 1;
    }
    if (use_pipe)
        fcntl(bell[1], F_SETFL, O_NONBLOCK);
    int small = 4096;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sink) ||
        setsockopt(sink[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small)) {
        perror("sink");
        return 1;
    }
    int reader = use_pipe ? bell[0] : bell[1], writer = use_pipe ? bell[1] : bell[0];
    pid_t hostile = fork();
    if (hostile == 0) {
        close(writer);
        for (;;) /* blocks, holding what the splice holds, once the sink is full */
            if (splice(reader, NULL, sink[0], NULL, 1 << 20, 0) < 0 && errno != EAGAIN)
                _exit(errno); /* this doorbell cannot be spliced from */
    }
    close(reader);
    pid_t publisher = fork();
    if (publisher == 0) {
        for (int i = 0; i < RINGS; i++) {
            struct timespec a;
            clock_gettime(CLOCK_MONOTONIC, &a);
            ssize_t n = use_pipe ? write(writer, "x", 1) : send(writer, "x", 1, MSG_DONTWAIT);
            double ms = ms_since(&a);
            if (n < 0 && errno != EAGAIN) {
                printf("ring %d: %s\n", i, strerror(errno));
                _exit(1);
            }
            if (ms > 100)
                printf("ring %d took %.0f ms\n", i, ms);
            usleep(1000);
        }
        _exit(0);
    }
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int status = 0;
    while (waitpid(publisher, &status, WNOHANG) == 0 && ms_since(&start) < 10000)
        usleep(10000);
    int stuck = waitpid(publisher, &status, WNOHANG) == 0;
    char state[256] = "?";
    if (stuck) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/wchan", publisher);
        FILE *f = fopen(path, "r");
        if (f && fgets(state, sizeof state, f) == NULL)
            strcpy(state, "?");
        if (f)
            fclose(f);
    }
    int refused = 0;
    if (waitpid(hostile, &status, WNOHANG) == hostile && WIFEXITED(status))
        refused = WEXITSTATUS(status);
    kill(hostile, SIGKILL); /* ends the splice, which lets a stuck publisher go on */
    if (stuck)
        kill(publisher, SIGKILL);
    waitpid(hostile, NULL, 0);
    waitpid(publisher, &status, 0);
    if (stuck)
        printf("%s: JAMMED: the publisher's non-blocking ring was still waiting after 10 s (in %s)\n",
               argv[1], state);
    else
        printf("%s: not jammed: %d rings, none blocked%s%s%s\n", argv[1], RINGS,
               refused ? " (the subscriber's splice was refused: " : "",
               refused ? strerror(refused) : "", refused ? ")" : "");
    return 0;
}
