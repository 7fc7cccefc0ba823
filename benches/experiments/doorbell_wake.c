/*
 * doorbell_wake: how long from a publication to a woken listener, for each way an event loop
 * could be woken, against the futex a blocking receive sleeps on.
 *
 * One publisher process stores a CLOCK_MONOTONIC timestamp in shared memory every INTERVAL_US
 * (default 100) and
 * wakes one listener process; the listener records the time from the timestamp to its wake-up.
 * Five ways to wake, one per run:
 *
 *   0 futex          FUTEX_WAKE on a shared word; the listener in FUTEX_WAIT (a blocking `recv`)
 *   1 socket-nested  one byte sent with MSG_DONTWAIT on a SOCK_SEQPACKET pair; the listener in
 *                    epoll_wait on a set (edge-triggered, as tokio and mio register) that holds
 *                    the subscriber's own set, which holds the socket: an async subscriber today
 *   2 socket-direct  the same send; the socket directly in the listener's epoll set
 *   3 eventfd-direct an 8-byte write to an eventfd in the listener's epoll set
 *   4 eventfd-nested the eventfd inside a set inside the listener's set
 *   5 socket-recv    the same send; the listener blocked in recv on the socket (no event loop)
 *   6 socket-poll    the same send; the listener in poll() on the socket itself
 *   7 timer-nested   timerfd_settime of a timerfd to expire 1 ns from now, the timer
 *                    (edge-triggered, never read) inside a set inside the listener's set
 *   8 timer-direct   the same timer directly in the listener's set
 *
 * Each woken listener takes what woke it (recv, read) as a subscriber does. It prints the p50
 * and p90 of the wake latency. An experiment behind docs/performance.md ("An async
 * subscriber's wake is the doorbell's"), not part of the comparison binary:
 *
 *   cc -O2 -o doorbell_wake benches/experiments/doorbell_wake.c
 *   for r in 1 2 3 4 5; do for m in 0 1 2 3 4 5 6 7 8; do ./doorbell_wake $m; done; done
 *   ./doorbell_wake MODE [INTERVAL_US]
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MESSAGES 10000
#define WARMUP 200

enum { FUTEX, SOCKET_NESTED, SOCKET_DIRECT, EVENTFD_DIRECT, EVENTFD_NESTED, SOCKET_RECV, SOCKET_POLL,
       TIMER_NESTED, TIMER_DIRECT, MODES };
static const char *const NAMES[MODES] = {"futex", "socket-nested", "socket-direct",
                                         "eventfd-direct", "eventfd-nested", "socket-recv",
                                         "socket-poll", "timer-nested", "timer-direct"};

struct shared {
    _Atomic uint32_t word;
    _Atomic uint64_t stamp;
    uint64_t latency[MESSAGES];
};

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void add(int set, int fd, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.fd = fd};
    if (epoll_ctl(set, EPOLL_CTL_ADD, fd, &ev) != 0) {
        perror("epoll_ctl");
        exit(1);
    }
}

/* The listener: waits MESSAGES times, each bounded, and records each wake's latency. */
static void listen_all(int mode, struct shared *s, int sock, int efd, int tfd) {
    int set = epoll_create1(0), inner = epoll_create1(0);
    int timer = mode == TIMER_NESTED || mode == TIMER_DIRECT;
    int nested = mode == SOCKET_NESTED || mode == EVENTFD_NESTED || mode == TIMER_NESTED;
    int source = mode == EVENTFD_DIRECT || mode == EVENTFD_NESTED ? efd : timer ? tfd : sock;
    if (nested) {
        add(inner, source, timer ? EPOLLIN | EPOLLET : EPOLLIN);
        add(set, inner, EPOLLIN | EPOLLET);
    } else if (mode == SOCKET_DIRECT || mode == EVENTFD_DIRECT || mode == TIMER_DIRECT) {
        add(set, source, EPOLLIN | EPOLLET);
    }
    for (uint32_t i = 0; i < MESSAGES; i++) {
        if (mode == FUTEX) {
            uint32_t w;
            while ((w = atomic_load(&s->word)) == i)
                syscall(SYS_futex, &s->word, FUTEX_WAIT, w, NULL, NULL, 0);
        } else if (mode == SOCKET_RECV) {
            struct timeval t = {.tv_sec = 0, .tv_usec = 5000};
            char buf[16];
            setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
            if (recv(sock, buf, sizeof buf, 0) <= 0)
                continue;
        } else if (mode == SOCKET_POLL) {
            struct pollfd p = {.fd = sock, .events = POLLIN};
            char buf[16];
            if (poll(&p, 1, 5) == 0)
                continue;
            while (recv(sock, buf, sizeof buf, MSG_DONTWAIT) > 0) {
            }
        } else {
            struct epoll_event ev;
            if (epoll_wait(set, &ev, 1, 5) == 0)
                continue; /* a lost wake: the publisher is ahead; never hang */
            char buf[16];
            uint64_t v;
            if (source == sock)
                while (recv(sock, buf, sizeof buf, MSG_DONTWAIT) > 0) {
                }
            else if (source == efd && read(efd, &v, sizeof v) < 0) {
            }
            if (nested)
                epoll_wait(inner, &ev, 1, 0);
        }
        s->latency[i] = now_ns() - atomic_load(&s->stamp);
    }
}

int main(int argc, char **argv) {
    int mode = argc > 1 ? atoi(argv[1]) : -1;
    long interval_us = argc > 2 ? atol(argv[2]) : 100;
    if (mode < 0 || mode >= MODES || interval_us < 1) {
        fprintf(stderr, "usage: doorbell_wake MODE [INTERVAL_US] (modes: 0 futex, 1 socket-nested, "
                        "2 socket-direct, 3 eventfd-direct, 4 eventfd-nested, 5 socket-recv, "
                        "6 socket-poll, 7 timer-nested, 8 timer-direct)\n");
        return 2;
    }
    struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                            -1, 0);
    int pair[2];
    if (s == MAP_FAILED || socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair) != 0) {
        perror("setup");
        return 1;
    }
    int efd = eventfd(0, EFD_NONBLOCK);
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    const struct itimerspec soon = {.it_value = {.tv_sec = 0, .tv_nsec = 1}};
    pid_t child = fork();
    if (child == 0) {
        listen_all(mode, s, pair[1], efd, tfd);
        _exit(0);
    }
    usleep(20000);
    uint64_t start = now_ns();
    for (uint32_t i = 0; i < MESSAGES; i++) {
        uint64_t at = start + (i + 1) * (uint64_t)interval_us * 1000ull;
        struct timespec t = {.tv_sec = at / 1000000000ull, .tv_nsec = at % 1000000000ull};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        atomic_store(&s->stamp, now_ns());
        if (mode == FUTEX) {
            atomic_store(&s->word, i + 1);
            syscall(SYS_futex, &s->word, FUTEX_WAKE, 1, NULL, NULL, 0);
        } else if (mode == TIMER_NESTED || mode == TIMER_DIRECT) {
            timerfd_settime(tfd, 0, &soon, NULL);
        } else if (mode != EVENTFD_DIRECT && mode != EVENTFD_NESTED) {
            send(pair[0], "x", 1, MSG_DONTWAIT);
        } else {
            uint64_t one = 1;
            if (write(efd, &one, sizeof one) < 0) {
            }
        }
    }
    waitpid(child, NULL, 0);
    uint64_t *l = s->latency + WARMUP;
    size_t n = MESSAGES - WARMUP;
    qsort(l, n, sizeof *l, by_value);
    printf("%-15s every %ld us: p50 %6.1f us  p90 %6.1f us\n", NAMES[mode], interval_us, l[n / 2] / 1e3,
           l[n * 9 / 10] / 1e3);
    return 0;
}
