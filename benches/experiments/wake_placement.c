/*
 * wake_placement: where does the kernel run a woken listener, for each way of waking three?
 *
 * One publisher process stores a CLOCK_MONOTONIC timestamp in shared memory every 100 us and
 * wakes three listener processes, each blocked until woken. Every listener records the time from
 * the timestamp to its wake-up. Five ways to wake, one per run:
 *
 *   0 futex-all    one FUTEX_WAKE(INT_MAX) on a shared word (what shmcast does for `recv`)
 *   1 dgram-each   one unix datagram send per listener, 3 syscalls (the bench's unix-dgram)
 *   2 chain-dgram  a send to listener 1, which sends to listener 2, which sends to listener 3
 *   3 chain-futex  FUTEX_WAKE(1) on listener 1's word; listener 1 wakes listener 2's, and so on
 *   4 relay        FUTEX_WAKE(1) on the shared word; every woken listener FUTEX_WAKE(INT_MAX)s it
 *
 * It prints the p50 and p90 per listener, and the p50 of the first, second and third listener
 * to wake for each message. This is an experiment behind docs/performance.md ("What decides the
 * blocking latency"), not part of the comparison binary:
 *
 *   cc -O2 -o wake_placement benches/experiments/wake_placement.c
 *   for r in 1 2 3; do for m in 0 1 3 4; do ./wake_placement $m; done; done
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LISTENERS 3
#define MESSAGES 20000

enum { FUTEX_ALL, DGRAM_EACH, CHAIN_DGRAM, CHAIN_FUTEX, RELAY, MODES };
static const char *const NAMES[MODES] = {"futex-all", "dgram-each", "chain-dgram", "chain-futex",
                                         "relay"};

struct shared {
    _Atomic uint64_t seq;
    _Atomic uint64_t stamp;
    _Atomic uint32_t word;
    _Atomic uint32_t chain[LISTENERS];
    uint64_t latency[LISTENERS][MESSAGES];
};

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void futex_wait(_Atomic uint32_t *word, uint32_t seen) {
    struct timespec bound = {0, 100 * 1000 * 1000};
    syscall(SYS_futex, word, FUTEX_WAIT, seen, &bound, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word, int count) {
    syscall(SYS_futex, word, FUTEX_WAKE, count, NULL, NULL, 0);
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void listen_as(struct shared *s, int mode, int me, int sockets[][2]) {
    uint64_t seen = 0;
    char byte;
    while (seen < MESSAGES) {
        for (;;) {
            uint32_t word = atomic_load(&s->word);
            uint32_t link = atomic_load(&s->chain[me]);
            if (atomic_load(&s->seq) > seen) break;
            if (mode == FUTEX_ALL || mode == RELAY)
                futex_wait(&s->word, word);
            else if (mode == CHAIN_FUTEX)
                futex_wait(&s->chain[me], link);
            else if (recv(sockets[me][1], &byte, 1, 0) < 0)
                die("recv");
        }
        uint64_t woke = now_ns();
        seen = atomic_load(&s->seq);
        if (mode == RELAY) futex_wake(&s->word, 1 << 30);
        if (mode == CHAIN_FUTEX && me + 1 < LISTENERS) {
            atomic_fetch_add(&s->chain[me + 1], 1);
            futex_wake(&s->chain[me + 1], 1);
        }
        if (mode == CHAIN_DGRAM && me + 1 < LISTENERS) send(sockets[me + 1][0], "x", 1, MSG_DONTWAIT);
        s->latency[me][seen - 1] = woke - atomic_load(&s->stamp);
        if (mode == DGRAM_EACH || mode == CHAIN_DGRAM)
            while (recv(sockets[me][1], &byte, 1, MSG_DONTWAIT) > 0) {
            }
    }
}

static void publish(struct shared *s, int mode, int sockets[][2]) {
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (uint64_t k = 1; k <= MESSAGES; k++) {
        next.tv_nsec += 100 * 1000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        atomic_store(&s->stamp, now_ns());
        atomic_store(&s->seq, k);
        switch (mode) {
        case FUTEX_ALL:
            atomic_fetch_add(&s->word, 1);
            futex_wake(&s->word, 1 << 30);
            break;
        case DGRAM_EACH:
            for (int i = 0; i < LISTENERS; i++) send(sockets[i][0], "x", 1, MSG_DONTWAIT);
            break;
        case CHAIN_DGRAM:
            send(sockets[0][0], "x", 1, MSG_DONTWAIT);
            break;
        case CHAIN_FUTEX:
            atomic_fetch_add(&s->chain[0], 1);
            futex_wake(&s->chain[0], 1);
            break;
        case RELAY:
            atomic_fetch_add(&s->word, 1);
            futex_wake(&s->word, 1);
            break;
        }
    }
}

static double p50_us(uint64_t *v, int n) {
    qsort(v, (size_t)n, sizeof *v, by_value);
    return (double)v[n / 2] / 1e3;
}

int main(int argc, char **argv) {
    int mode = argc > 1 ? atoi(argv[1]) : -1;
    if (mode < 0 || mode >= MODES) {
        fprintf(stderr, "usage: %s MODE (0 futex-all, 1 dgram-each, 2 chain-dgram, 3 chain-futex, 4 relay)\n",
                argv[0]);
        return 2;
    }
    struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) die("mmap");
    int sockets[LISTENERS][2];
    for (int i = 0; i < LISTENERS; i++)
        if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sockets[i]) < 0) die("socketpair");
    for (int i = 0; i < LISTENERS; i++) {
        pid_t pid = fork();
        if (pid < 0) die("fork");
        if (pid == 0) {
            listen_as(s, mode, i, sockets);
            _exit(0);
        }
    }
    usleep(100 * 1000);
    publish(s, mode, sockets);
    for (int i = 0; i < LISTENERS; i++) wait(NULL);

    static uint64_t order[LISTENERS][MESSAGES];
    int n = 0;
    for (int k = 0; k < MESSAGES; k++) {
        uint64_t v[LISTENERS];
        int complete = 1;
        for (int i = 0; i < LISTENERS; i++) complete &= (v[i] = s->latency[i][k]) != 0;
        if (!complete) continue;
        qsort(v, LISTENERS, sizeof v[0], by_value);
        for (int i = 0; i < LISTENERS; i++) order[i][n] = v[i];
        n++;
    }
    printf("%-12s", NAMES[mode]);
    for (int i = 0; i < LISTENERS; i++) {
        int m = 0;
        for (int k = 0; k < MESSAGES; k++)
            if (s->latency[i][k]) s->latency[i][m++] = s->latency[i][k];
        printf(" L%d p50 %5.1f", i + 1, p50_us(s->latency[i], m));
    }
    printf(" | by wake order:");
    for (int i = 0; i < LISTENERS; i++) printf(" %5.1f", p50_us(order[i], n));
    printf(" us (%d messages seen by all)\n", n);
    return 0;
}
