/*
 * doorbell_wake: how long from a publication to a woken listener, for each way an event loop
 * could be woken, against the futex a blocking receive sleeps on.
 *
 * One publisher process stores a CLOCK_MONOTONIC timestamp in shared memory every INTERVAL_US
 * (default 100) and
 * wakes one listener process; the listener records the time from the timestamp to its wake-up.
 * The ways to wake, one per run:
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
 *   9 uring-direct   FUTEX_WAKE on the shared word, as for a blocking receive; the listener keeps
 *                    an io_uring FUTEX_WAIT (Linux 6.7 and later) on the word in flight, the
 *                    ring's descriptor (readable when a completion is posted) in its epoll set
 *  10 uring-nested   the same ring's descriptor inside a set inside the listener's set
 *  11 mq-direct      mq_send of one byte on a POSIX message queue through the publisher's own
 *                    open (O_NONBLOCK on its own open file, which no reader can clear); the
 *                    listener's open of the queue directly in its epoll set
 *  12 mq-nested      the queue inside a set inside the listener's set
 *  13 futex-relay    FUTEX_WAKE on the shared word, as for a blocking receive; a thread of the
 *                    listener's process waits on the word in FUTEX_WAIT and, woken, writes an
 *                    eventfd of the listener's own in the listener's epoll set (as a waker
 *                    unparks an async runtime): no descriptor shared with the publisher
 *  14 eventfd-bell   an 8-byte write to an eventfd only the publisher holds, registered
 *                    edge-triggered in an epoll set the publisher hands over (the bell set),
 *                    the bell set in the listener's set; the listener never reads the eventfd
 *                    (it could not), it only takes the bell set's event
 *  15 eventfd-bell3  the same bell set inside the subscriber's own set (edge-triggered) inside
 *                    the listener's set
 *  16 inotify-direct a 1-byte pread from a sealed memfd (the bell) through the publisher's own
 *                    open of it (reopened through /proc/self/fd: reads through the memfd's own
 *                    descriptor make no event); the listener's inotify watch (IN_ACCESS) on the
 *                    bell, its inotify descriptor directly in the listener's set; the listener
 *                    reads the event
 *  17 inotify-nested the same inotify descriptor inside a set inside the listener's set
 *
 * The io_uring ways take IORING_SETUP flags from the environment (UFLAGS=0x100 for
 * COOP_TASKRUN, 0x3000 for SINGLE_ISSUER | DEFER_TASKRUN; default none).
 *
 * Each woken listener takes what woke it (recv, read) as a subscriber does. It prints the p50
 * and p90 of the wake latency. An experiment behind docs/performance.md ("An async
 * subscriber's wake is the doorbell's"), not part of the comparison binary:
 *
 *   cc -O2 -pthread -o doorbell_wake benches/experiments/doorbell_wake.c
 *   for r in 1 2 3 4 5; do for m in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17; do ./doorbell_wake $m; done; done
 *   ./doorbell_wake MODE [INTERVAL_US]
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <errno.h>
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
#include <linux/io_uring.h>
#include <string.h>
#include <mqueue.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/inotify.h>

/* Not in every distribution's headers yet (Linux 6.7 added them). */
#define OP_FUTEX_WAIT 51
#define FUTEX2_U32 0x02

#define MESSAGES 10000
#define WARMUP 200

enum { FUTEX, SOCKET_NESTED, SOCKET_DIRECT, EVENTFD_DIRECT, EVENTFD_NESTED, SOCKET_RECV, SOCKET_POLL,
       TIMER_NESTED, TIMER_DIRECT, URING_DIRECT, URING_NESTED, MQ_DIRECT, MQ_NESTED, FUTEX_RELAY,
       EVENTFD_BELL, EVENTFD_BELL3, INOTIFY_DIRECT, INOTIFY_NESTED, MODES };
static const char *const NAMES[MODES] = {"futex", "socket-nested", "socket-direct",
                                         "eventfd-direct", "eventfd-nested", "socket-recv",
                                         "socket-poll", "timer-nested", "timer-direct",
                                         "uring-direct", "uring-nested", "mq-direct",
                                         "mq-nested", "futex-relay", "eventfd-bell",
                                         "eventfd-bell3", "inotify-direct", "inotify-nested"};

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

/* A minimal io_uring that keeps one FUTEX_WAIT in flight. */
struct uring {
    int fd;
    unsigned flags;
    unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
};

static void uring_init(struct uring *u, unsigned flags) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = flags;
    u->flags = flags;
    u->fd = syscall(__NR_io_uring_setup, 4, &p);
    if (u->fd < 0) {
        perror("io_uring_setup");
        exit(1);
    }
    size_t rings = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (cq > rings)
        rings = cq;
    char *r = mmap(NULL, rings, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd,
                   IORING_OFF_SQ_RING);
    u->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_SQES);
    if (r == MAP_FAILED || u->sqes == MAP_FAILED || !(p.features & IORING_FEAT_SINGLE_MMAP)) {
        perror("mapping the io_uring");
        exit(1);
    }
    u->sq_tail = (unsigned *)(r + p.sq_off.tail);
    u->sq_mask = (unsigned *)(r + p.sq_off.ring_mask);
    u->sq_array = (unsigned *)(r + p.sq_off.array);
    u->cq_head = (unsigned *)(r + p.cq_off.head);
    u->cq_tail = (unsigned *)(r + p.cq_off.tail);
    u->cq_mask = (unsigned *)(r + p.cq_off.ring_mask);
    u->cqes = (struct io_uring_cqe *)(r + p.cq_off.cqes);
}

/* Submits a FUTEX_WAIT on `word` while it holds `val` (shared, not private: the publisher is
 * another process). */
static void uring_futex_wait(struct uring *u, _Atomic uint32_t *word, uint32_t val) {
    unsigned tail = *u->sq_tail, idx = tail & *u->sq_mask;
    struct io_uring_sqe *e = &u->sqes[idx];
    memset(e, 0, sizeof *e);
    e->opcode = OP_FUTEX_WAIT;
    e->fd = FUTEX2_U32;
    e->addr = (uint64_t)(uintptr_t)word;
    e->off = val;           /* addr2: the expected value */
    e->addr3 = 0xffffffffu; /* the bitset: any wake */
    u->sq_array[idx] = idx;
    __atomic_store_n(u->sq_tail, tail + 1, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, u->fd, 1, 0, 0, NULL, 0) != 1) {
        perror("io_uring_enter");
        exit(1);
    }
}

/* Takes the posted completions (running deferred task work first if the ring defers it);
 * returns how many there were. */
static int uring_reap(struct uring *u) {
    if (u->flags & IORING_SETUP_DEFER_TASKRUN)
        syscall(__NR_io_uring_enter, u->fd, 0, 0, IORING_ENTER_GETEVENTS, NULL, 0);
    unsigned head = *u->cq_head, tail = __atomic_load_n(u->cq_tail, __ATOMIC_ACQUIRE);
    for (unsigned h = head; h != tail; h++) {
        int res = u->cqes[h & *u->cq_mask].res;
        if (res < 0 && res != -EAGAIN) { /* EAGAIN: the word had moved on already */
            fprintf(stderr, "io_uring FUTEX_WAIT: %s\n", strerror(-res));
            exit(1);
        }
    }
    __atomic_store_n(u->cq_head, tail, __ATOMIC_RELEASE);
    return (int)(tail - head);
}

static void add(int set, int fd, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.fd = fd};
    if (epoll_ctl(set, EPOLL_CTL_ADD, fd, &ev) != 0) {
        perror("epoll_ctl");
        exit(1);
    }
}

/* futex-relay: the listener's own thread, asleep on the shared word as a blocking receive is,
 * passes each wake on to the listener's epoll set through an eventfd only this process holds. */
struct relay {
    struct shared *s;
    int efd;
};

static void *relay_wakes(void *arg) {
    struct relay *r = arg;
    for (uint32_t i = 0; i < MESSAGES; i++) {
        uint32_t w;
        while ((w = atomic_load(&r->s->word)) == i)
            syscall(SYS_futex, &r->s->word, FUTEX_WAIT, w, NULL, NULL, 0);
        uint64_t one = 1;
        if (write(r->efd, &one, sizeof one) < 0) {
        }
    }
    return NULL;
}

/* The listener: waits MESSAGES times, each bounded, and records each wake's latency. */
static void listen_all(int mode, struct shared *s, int sock, int efd, int tfd, int mq, int bellfd) {
    int set = epoll_create1(0), inner = epoll_create1(0);
    int timer = mode == TIMER_NESTED || mode == TIMER_DIRECT;
    int nested = mode == SOCKET_NESTED || mode == EVENTFD_NESTED || mode == TIMER_NESTED ||
                 mode == URING_NESTED || mode == MQ_NESTED || mode == INOTIFY_NESTED;
    int ino = -1;
    if (mode == INOTIFY_DIRECT || mode == INOTIFY_NESTED) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", bellfd);
        ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (ino < 0 || inotify_add_watch(ino, path, IN_ACCESS) < 0) {
            perror("inotify");
            exit(1);
        }
    }
    int uring = mode == URING_DIRECT || mode == URING_NESTED, pending = 0;
    struct uring u;
    struct relay relay = {.s = s, .efd = -1};
    pthread_t relay_thread;
    if (mode == FUTEX_RELAY) {
        relay.efd = eventfd(0, EFD_NONBLOCK);
        efd = relay.efd;
        if (pthread_create(&relay_thread, NULL, relay_wakes, &relay) != 0) {
            perror("pthread_create");
            exit(1);
        }
    }
    if (uring)
        uring_init(&u, getenv("UFLAGS") ? (unsigned)strtoul(getenv("UFLAGS"), NULL, 0) : 0);
    int source = uring ? u.fd
                 : mode == EVENTFD_DIRECT || mode == EVENTFD_NESTED || mode == FUTEX_RELAY ? efd
                 : timer ? tfd
                 : mode == MQ_DIRECT || mode == MQ_NESTED ? mq
                 : ino >= 0 ? ino
                         : sock;
    int bell = mode == EVENTFD_BELL || mode == EVENTFD_BELL3, own = -1;
    if (bell) {
        add(inner, efd, EPOLLIN | EPOLLET);
        if (mode == EVENTFD_BELL3) {
            own = epoll_create1(0);
            add(own, inner, EPOLLIN | EPOLLET);
            add(set, own, EPOLLIN | EPOLLET);
        } else {
            add(set, inner, EPOLLIN | EPOLLET);
        }
    } else if (nested) {
        add(inner, source, timer ? EPOLLIN | EPOLLET : EPOLLIN);
        add(set, inner, EPOLLIN | EPOLLET);
    } else if (mode == SOCKET_DIRECT || mode == EVENTFD_DIRECT || mode == TIMER_DIRECT ||
               mode == URING_DIRECT || mode == MQ_DIRECT || mode == FUTEX_RELAY ||
               mode == INOTIFY_DIRECT) {
        add(set, source, EPOLLIN | EPOLLET);
    }
    for (uint32_t i = 0; i < MESSAGES; i++) {
        if (mode == FUTEX) {
            uint32_t w;
            while ((w = atomic_load(&s->word)) == i)
                syscall(SYS_futex, &s->word, FUTEX_WAIT, w, NULL, NULL, 0);
        } else if (uring) {
            /* As an event loop would: one wait in flight, the ring's descriptor in the set. */
            struct epoll_event ev;
            while (atomic_load(&s->word) == i) {
                if (!pending) {
                    uring_futex_wait(&u, &s->word, i);
                    pending = 1;
                }
                if (uring_reap(&u) > 0) { /* completed at once (EAGAIN) or already woken */
                    pending = 0;
                    continue;
                }
                if (epoll_wait(set, &ev, 1, 5) == 0)
                    continue;
                if (uring_reap(&u) > 0)
                    pending = 0;
                if (nested)
                    epoll_wait(inner, &ev, 1, 0);
            }
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
        } else if (bell) {
            /* Take the events down the sets; the eventfd itself is never read. */
            struct epoll_event ev;
            if (epoll_wait(set, &ev, 1, 5) == 0)
                continue;
            if (own >= 0)
                epoll_wait(own, &ev, 1, 0);
            epoll_wait(inner, &ev, 1, 0);
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
            } else if (source == ino) {
                char events[4096];
                while (read(ino, events, sizeof events) > 0) {
                }
            } else if (source == mq)
                while (mq_receive(mq, buf, sizeof buf, NULL) > 0) {
                }
            if (nested)
                epoll_wait(inner, &ev, 1, 0);
        }
        s->latency[i] = now_ns() - atomic_load(&s->stamp);
    }
    if (mode == FUTEX_RELAY)
        pthread_join(relay_thread, NULL);
}

int main(int argc, char **argv) {
    int mode = argc > 1 ? atoi(argv[1]) : -1;
    long interval_us = argc > 2 ? atol(argv[2]) : 100;
    if (mode < 0 || mode >= MODES || interval_us < 1) {
        fprintf(stderr, "usage: doorbell_wake MODE [INTERVAL_US] (modes: 0 futex, 1 socket-nested, "
                        "2 socket-direct, 3 eventfd-direct, 4 eventfd-nested, 5 socket-recv, "
                        "6 socket-poll, 7 timer-nested, 8 timer-direct, 9 uring-direct, "
                        "10 uring-nested, 11 mq-direct, 12 mq-nested, 13 futex-relay, "
                        "14 eventfd-bell, 15 eventfd-bell3, 16 inotify-direct, "
                        "17 inotify-nested)\n");
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
    /* Two opens of one queue: the listener's, and the publisher's own, non-blocking. */
    int mq_listen = -1, mq_publish = -1;
    if (mode == MQ_DIRECT || mode == MQ_NESTED) {
        char name[64];
        snprintf(name, sizeof name, "/doorbell-wake-%d", (int)getpid());
        struct mq_attr attr = {.mq_maxmsg = 1, .mq_msgsize = 16};
        mq_listen = mq_open(name, O_RDONLY | O_NONBLOCK | O_CREAT | O_EXCL, 0600, &attr);
        mq_publish = mq_open(name, O_WRONLY | O_NONBLOCK);
        mq_unlink(name);
        if (mq_listen < 0 || mq_publish < 0) {
            perror("mq_open");
            return 1;
        }
    }
    /* The bell: a sealed one-page memfd, and the publisher's own read-only open of it. */
    int bell = -1, bell_reader = -1;
    if (mode == INOTIFY_DIRECT || mode == INOTIFY_NESTED) {
        char path[64];
        bell = memfd_create("bell", MFD_ALLOW_SEALING | MFD_CLOEXEC);
        if (bell < 0 || ftruncate(bell, 4096) != 0 ||
            fcntl(bell, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
            perror("bell memfd");
            return 1;
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", bell);
        bell_reader = open(path, O_RDONLY | O_CLOEXEC);
        if (bell_reader < 0) {
            perror("reopening the bell");
            return 1;
        }
    }
    pid_t child = fork();
    if (child == 0) {
        listen_all(mode, s, pair[1], efd, tfd, mq_listen, bell);
        _exit(0);
    }
    usleep(20000);
    uint64_t start = now_ns();
    for (uint32_t i = 0; i < MESSAGES; i++) {
        uint64_t at = start + (i + 1) * (uint64_t)interval_us * 1000ull;
        struct timespec t = {.tv_sec = at / 1000000000ull, .tv_nsec = at % 1000000000ull};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        atomic_store(&s->stamp, now_ns());
        if (mode == FUTEX || mode == URING_DIRECT || mode == URING_NESTED || mode == FUTEX_RELAY) {
            atomic_store(&s->word, i + 1);
            syscall(SYS_futex, &s->word, FUTEX_WAKE, 1, NULL, NULL, 0);
        } else if (mode == TIMER_NESTED || mode == TIMER_DIRECT) {
            timerfd_settime(tfd, 0, &soon, NULL);
        } else if (mode == MQ_DIRECT || mode == MQ_NESTED) {
            mq_send(mq_publish, "x", 1, 0); /* EAGAIN when one is pending: enough */
        } else if (mode == INOTIFY_DIRECT || mode == INOTIFY_NESTED) {
            char c;
            if (pread(bell_reader, &c, 1, 0) != 1) {
                perror("ringing the bell");
                return 1;
            }
        } else if (mode != EVENTFD_DIRECT && mode != EVENTFD_NESTED && mode != EVENTFD_BELL &&
                   mode != EVENTFD_BELL3) {
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
