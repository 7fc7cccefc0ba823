/* A shmcast publisher in C inside a poll() event loop: publishes every line of its standard
 * input as one message, and never blocks in a send. While a gating subscriber's ring is full it
 * stops reading its input and waits for the publisher's space descriptor instead, so the
 * backpressure reaches whoever writes into the pipe:
 *
 *     seq 1 100000 | ./lines demo
 *
 * A line that waits longer than GIVE_UP_MS (a subscriber stopped, with no stall bound to
 * demote it) is dropped and counted, and the wait withdrawn.
 *
 * usage: lines TOPIC [GIVE_UP_MS] */
#define _POSIX_C_SOURCE 200809L

#include <shmcast.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int fail(const char *what, int rc) {
    fprintf(stderr, "%s: %s (%s)\n", what, shmcast_strerror(rc), shmcast_last_error_message());
    return 1;
}

int main(int argc, char **argv) {
    shmcast_publisher_options opts;
    shmcast_publisher *pub = NULL;
    static char in[1 << 16];           /* input read but not yet published */
    size_t have = 0;                   /* bytes in `in` */
    long give_up_ms = argc > 2 ? atol(argv[2]) : 10000, waiting_since = -1;
    unsigned long long published = 0, dropped = 0;
    int eof = 0, skip = 0, rc; /* skip: the rest of a line longer than `in` is discarded */

    if (argc < 2) {
        fprintf(stderr, "usage: %s TOPIC [GIVE_UP_MS]\n", argv[0]);
        return 2;
    }
    shmcast_publisher_options_init(&opts);
    opts.capacity = 1 << 12;   /* 4 KiB: a subscriber that falls behind pushes back soon */
    opts.max_message = 1024;   /* the longest line */
    opts.stall_bound_ms = -1;  /* never demote: this loop decides when to give up */
    rc = shmcast_publisher_create(argv[1], &opts, &pub);
    if (rc != SHMCAST_OK) {
        return fail("create", rc);
    }
    printf("publishing on %s\n", shmcast_publisher_path(pub));
    fflush(stdout);
    rc = shmcast_publisher_wait_for_subscribers(pub, 1, 10000);
    if (rc != SHMCAST_OK && rc != SHMCAST_ETIMEDOUT) {
        return fail("wait_for_subscribers", rc);
    }

    for (;;) {
        struct pollfd fd;
        int timeout = -1;

        /* Publish every complete line (a full buffer counts as one, and so does what is left
         * at the end of input). */
        for (;;) {
            char *nl = memchr(in, '\n', have);
            size_t len, used;
            if (skip && have > 0) {
                used = nl != NULL ? (size_t)(nl - in) + 1 : have;
                skip = nl == NULL;
                memmove(in, in + used, have - used);
                have -= used;
                continue;
            }
            if (have == 0 || (nl == NULL && !eof && have < sizeof in)) {
                break;
            }
            len = nl != NULL ? (size_t)(nl - in) : have;
            used = nl != NULL ? len + 1 : have;
            if (len > 1024) {
                len = 1024; /* longer lines are cut */
            }
            rc = shmcast_publisher_send(pub, in, len, 0);
            if (rc == SHMCAST_EAGAIN) {
                /* Full: arm the space descriptor, unless space freed up meanwhile. */
                rc = shmcast_publisher_watch_space(pub, len);
                if (rc == SHMCAST_OK) {
                    continue;
                }
                if (rc != SHMCAST_EAGAIN) {
                    return fail("watch_space", rc);
                }
                if (waiting_since < 0) {
                    waiting_since = now_ms();
                }
                if (now_ms() - waiting_since < give_up_ms) {
                    break; /* back to the loop: wait for space */
                }
                /* Waited long enough: drop the line and withdraw the wait. */
                shmcast_publisher_unwatch_space(pub);
                dropped++;
            } else if (rc != SHMCAST_OK) {
                return fail("send", rc);
            } else {
                published++;
            }
            waiting_since = -1;
            skip = nl == NULL && !eof; /* a full buffer, its line not ended yet */
            memmove(in, in + used, have - used);
            have -= used;
        }
        if (eof && have == 0) {
            break;
        }

        if (waiting_since >= 0) {
            /* A line waits for space: watch the space descriptor, not the input. */
            fd.fd = shmcast_publisher_space_fd(pub);
            timeout = (int)(give_up_ms - (now_ms() - waiting_since));
            timeout = timeout < 0 ? 0 : timeout;
        } else {
            fd.fd = STDIN_FILENO;
        }
        fd.events = POLLIN;
        if (poll(&fd, 1, timeout) < 0 && errno != EINTR) {
            perror("poll");
            break;
        }
        if (waiting_since < 0 && (fd.revents & (POLLIN | POLLHUP))) {
            ssize_t n = read(STDIN_FILENO, in + have, sizeof in - have);
            if (n < 0 && errno != EINTR) {
                perror("read");
                break;
            }
            if (n == 0) {
                eof = 1;
            }
            have += n > 0 ? (size_t)n : 0;
        }
        /* Space readable, or the give-up time reached: the send loop above tries again. */
    }

    printf("published %llu lines, dropped %llu\n", published, dropped);
    shmcast_publisher_destroy(pub);
    return 0;
}
