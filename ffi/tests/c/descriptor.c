/* The descriptor contract from C: the subscriber's descriptor is readable whenever a receive
 * would not return SHMCAST_EAGAIN, from the moment shmcast_subscriber_connect returns, with no
 * prior call. Each mode waits for readiness BEFORE its first receive and checks every message
 * of a gating stream in order, then SHMCAST_EDISCONNECTED:
 *
 *   --poll-one   poll(), one receive per wakeup (a level-triggered loop that never drains)
 *   --epoll-et   epoll edge-triggered, receive until SHMCAST_EAGAIN after each wakeup
 *   --oldest     as --poll-one, starting with the oldest message still in the ring: the
 *                descriptor must be readable at once (poll with a zero timeout)
 *
 * usage: descriptor TOPIC COUNT MODE */
#include "common.h"

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Longest wait for readiness while a message is due: only a lost wakeup reaches it. */
#define HANG_MS 30000

static uint64_t next_seq = 0;
static uint64_t checksum = FNV_OFFSET;

/* One receive without waiting: 1 for a message (checked), 0 for SHMCAST_EAGAIN, -1 at the end. */
static int receive_one(shmcast_subscriber *sub) {
    shmcast_sample s;
    int rc = shmcast_subscriber_recv(sub, 0, &s);
    if (rc == SHMCAST_OK) {
        const uint8_t *data = (const uint8_t *)s.data;
        if (s.seq != next_seq || s.len != gen_len(s.seq) || gen_check(s.seq, data, s.len) != s.len) {
            FAIL("bad message %" PRIu64 " (expected %" PRIu64 ")", s.seq, next_seq);
        }
        checksum = checksum_add(checksum, s.seq, data, s.len);
        next_seq++;
        CHECK_OK(shmcast_sample_release(&s));
        return 1;
    }
    if (rc == SHMCAST_EAGAIN) {
        return 0;
    }
    if (rc == SHMCAST_EDISCONNECTED) {
        return -1;
    }
    FAIL("receive: %d (%s): %s", rc, shmcast_strerror(rc), shmcast_last_error_message());
    return -1;
}

static void wait_poll(int fd, int timeout_ms) {
    struct pollfd p;
    int n;
    p.fd = fd;
    p.events = POLLIN;
    p.revents = 0;
    n = poll(&p, 1, timeout_ms);
    if (n < 0) {
        FAIL("poll failed");
    }
    if (n == 0) {
        FAIL("descriptor not readable after %d ms while message %" PRIu64 " was due", timeout_ms,
             next_seq);
    }
}

int main(int argc, char **argv) {
    shmcast_subscriber_options opts;
    shmcast_subscriber *sub;
    uint64_t count, wakeups = 0;
    const char *mode;
    int fd, ended = 0;
    int fds_at_start = open_fds();

    if (argc != 4) {
        FAIL("usage: descriptor TOPIC COUNT MODE");
    }
    count = strtoull(argv[2], NULL, 10);
    mode = argv[3];
    CHECK_OK(shmcast_subscriber_options_init(&opts));
    opts.connect_timeout_ms = 120000;
    if (strcmp(mode, "--oldest") == 0) {
        opts.start = SHMCAST_START_OLDEST;
    }
    CHECK_OK(shmcast_subscriber_connect(argv[1], &opts, &sub));
    fd = shmcast_subscriber_fd(sub);
    if (fd < 0) {
        FAIL("no descriptor");
    }
    printf("connected\n");
    fflush(stdout);

    if (strcmp(mode, "--oldest") == 0) {
        /* History waits in the ring: readable now, before any receive. */
        wait_poll(fd, 0);
    }
    if (strcmp(mode, "--poll-one") == 0 || strcmp(mode, "--oldest") == 0) {
        while (!ended) {
            wait_poll(fd, HANG_MS);
            wakeups++;
            ended = receive_one(sub) < 0;
        }
    } else if (strcmp(mode, "--epoll-et") == 0) {
        struct epoll_event ev;
        int ep = epoll_create1(EPOLL_CLOEXEC);
        if (ep < 0) {
            FAIL("epoll_create1 failed");
        }
        memset(&ev, 0, sizeof ev);
        ev.events = EPOLLIN | EPOLLET;
        ev.data.fd = fd;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            FAIL("epoll_ctl failed");
        }
        while (!ended) {
            int n = epoll_wait(ep, &ev, 1, HANG_MS);
            int got;
            if (n < 0) {
                FAIL("epoll_wait failed");
            }
            if (n == 0) {
                FAIL("no edge for %d ms while message %" PRIu64 " was due", HANG_MS, next_seq);
            }
            wakeups++;
            while ((got = receive_one(sub)) > 0) {
            }
            ended = got < 0;
        }
        close(ep);
    } else {
        FAIL("unknown mode %s", mode);
    }

    printf("received count %" PRIu64 " checksum %" PRIu64 "\n", next_seq, checksum);
    printf("wakeups count %" PRIu64 "\n", wakeups);
    fflush(stdout);
    shmcast_subscriber_destroy(sub);
    if (next_seq != count) {
        FAIL("received %" PRIu64 " of %" PRIu64, next_seq, count);
    }
    EXPECT_NO_FD_LEAK(fds_at_start);
    return 0;
}
