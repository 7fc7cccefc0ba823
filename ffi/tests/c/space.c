/* A C publisher in a poll() loop: it never blocks in a send. A send with timeout 0 that finds a
 * gating subscriber's ring full (SHMCAST_EAGAIN) arms the space descriptor with
 * shmcast_publisher_watch_space, and the loop waits for it beside a timer of its own (the other
 * work of a real loop), then sends again. Publishes messages 0..COUNT-1 of the generator in
 * common.h, announces its first wait for space ("full") so that the test can release a held
 * subscriber only then, and prints its checksum and how often it waited.
 *
 * usage: space TOPIC COUNT SUBSCRIBERS CAPACITY */
#include "common.h"
#include "expect.h"

#include <errno.h>
#include <poll.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* Longest the loop waits with nothing readable while a message waits for space. */
#define HANG_MS 60000

int main(int argc, char **argv) {
    shmcast_publisher_options opts;
    shmcast_publisher *pub = NULL;
    static uint8_t buf[1000];
    uint64_t count, subscribers, seq, checksum = FNV_OFFSET, waits = 0, ticks = 0;
    struct itimerspec every_10ms = {{0, 10000000}, {0, 10000000}};
    int timer, announced = 0;
    int fds_at_start = open_fds();
    void *loaned = NULL;

    if (argc < 5) {
        FAIL("usage: space TOPIC COUNT SUBSCRIBERS CAPACITY");
    }
    count = strtoull(argv[2], NULL, 10);
    subscribers = strtoull(argv[3], NULL, 10);
    CHECK_OK(shmcast_publisher_options_init(&opts));
    opts.capacity = strtoull(argv[4], NULL, 10);
    opts.max_message = 1000;
    opts.stall_bound_ms = -1; /* every message must arrive: never demote */
    CHECK_OK(shmcast_publisher_create(argv[1], &opts, &pub));

    /* Bad arguments first. */
    EXPECT(shmcast_publisher_space_fd(NULL), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_watch_space(NULL, 8), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_watch_space(pub, 1001), SHMCAST_ETOOLARGE);
    CHECK_OK(shmcast_publisher_loan(pub, 8, 0, &loaned));
    EXPECT(shmcast_publisher_watch_space(pub, 8), SHMCAST_EBUSY);
    if (shmcast_publisher_space_fd(pub) < 0) {
        FAIL("no space descriptor while a loan is outstanding");
    }
    CHECK_OK(shmcast_publisher_abandon(pub));
    /* Nobody gates yet: everything fits, nothing is armed; withdrawing nothing is no error. */
    CHECK_OK(shmcast_publisher_watch_space(pub, 1000));
    EXPECT(shmcast_publisher_unwatch_space(NULL), SHMCAST_EINVAL);
    CHECK_OK(shmcast_publisher_unwatch_space(pub));

    printf("listening %s\n", shmcast_publisher_path(pub));
    fflush(stdout);
    if (shmcast_publisher_wait_for_subscribers(pub, (size_t)subscribers, 120000) != SHMCAST_OK) {
        FAIL("%s", shmcast_last_error_message());
    }
    timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (timer < 0 || timerfd_settime(timer, 0, &every_10ms, NULL) != 0) {
        FAIL("timerfd: %s", strerror(errno));
    }

    for (seq = 0; seq < count; seq++) {
        size_t len = gen_len(seq);
        gen_fill(seq, buf, len);
        for (;;) {
            struct pollfd fds[2];
            int rc = shmcast_publisher_send(pub, buf, len, 0);
            if (rc == SHMCAST_OK) {
                break;
            }
            if (rc != SHMCAST_EAGAIN) {
                FAIL("send %" PRIu64 ": %d (%s)", seq, rc, shmcast_last_error_message());
            }
            rc = shmcast_publisher_watch_space(pub, len);
            if (rc == SHMCAST_OK) {
                continue; /* freed up meanwhile */
            }
            if (rc != SHMCAST_EAGAIN) {
                FAIL("watch %" PRIu64 ": %d (%s)", seq, rc, shmcast_last_error_message());
            }
            if (!announced) {
                announced = 1;
                printf("full\n");
                fflush(stdout);
            }
            waits++;
            fds[0].fd = shmcast_publisher_space_fd(pub);
            fds[0].events = POLLIN;
            fds[1].fd = timer;
            fds[1].events = POLLIN;
            /* The loop's other work goes on while the message waits. */
            for (;;) {
                uint64_t expiries;
                fds[0].revents = fds[1].revents = 0;
                rc = poll(fds, 2, HANG_MS);
                if (rc < 0 && errno == EINTR) {
                    continue;
                }
                if (rc <= 0) {
                    FAIL("message %" PRIu64 ": space descriptor not readable for %d ms", seq,
                         HANG_MS);
                }
                if ((fds[1].revents & POLLIN) && read(timer, &expiries, sizeof expiries) > 0) {
                    ticks += expiries;
                }
                if (fds[0].revents & POLLIN) {
                    break;
                }
            }
        }
        checksum = checksum_add(checksum, seq, buf, len);
    }

    printf("sent count %" PRIu64 " checksum %" PRIu64 " waits %" PRIu64 " ticks %" PRIu64 "\n",
           count, checksum, waits, ticks);
    fflush(stdout);
    close(timer);
    shmcast_publisher_destroy(pub);
    EXPECT_NO_FD_LEAK(fds_at_start);
    return 0;
}
