/* A shmcast subscriber in C, in a classic poll() event loop next to another descriptor
 * (stdin, when it is a terminal: press Enter or Ctrl-D to quit). Prints every message until
 * the publisher goes away.
 *
 * usage: subscriber TOPIC [--lossy] */
#define _POSIX_C_SOURCE 200809L

#include <shmcast.h>

#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    shmcast_subscriber_options opts;
    shmcast_subscriber *sub = NULL;
    int rc, done = 0;
    /* Run from a script or in the background, stdin is no keyboard: do not watch it. */
    nfds_t watched = isatty(STDIN_FILENO) ? 2 : 1;

    if (argc < 2) {
        fprintf(stderr, "usage: %s TOPIC [--lossy]\n", argv[0]);
        return 2;
    }
    shmcast_subscriber_options_init(&opts);
    opts.connect_timeout_ms = 10000; /* wait up to 10 s for the publisher to appear */
    if (argc > 2 && strcmp(argv[2], "--lossy") == 0) {
        opts.mode = SHMCAST_MODE_LOSSY;
    }
    rc = shmcast_subscriber_connect(argv[1], &opts, &sub);
    if (rc != SHMCAST_OK) {
        fprintf(stderr, "connect: %s (%s)\n", shmcast_strerror(rc), shmcast_last_error_message());
        return 1;
    }

    while (!done) {
        struct pollfd fds[2];

        /* Drain: receive without waiting (timeout 0) until SHMCAST_EAGAIN, which also arms
         * the subscriber's descriptor for poll(). */
        for (;;) {
            shmcast_sample s;
            rc = shmcast_subscriber_recv(sub, 0, &s);
            if (rc == SHMCAST_OK) {
                /* s.data points into the shared ring: no copy was made. */
                printf("#%llu: %.*s\n", (unsigned long long)s.seq, (int)s.len,
                       (const char *)s.data);
                shmcast_sample_release(&s);
            } else if (rc == SHMCAST_ELAGGED) {
                printf("missed %llu messages\n", (unsigned long long)shmcast_last_lagged_count());
            } else if (rc == SHMCAST_EDEMOTED) {
                printf("too slow: demoted to lossy\n");
            } else if (rc == SHMCAST_EAGAIN) {
                break;
            } else if (rc == SHMCAST_EDISCONNECTED) {
                printf("publisher gone\n");
                done = 1;
                break;
            } else {
                fprintf(stderr, "receive: %s (%s)\n", shmcast_strerror(rc),
                        shmcast_last_error_message());
                done = 1;
                break;
            }
        }
        fflush(stdout);
        if (done) {
            break;
        }

        fds[0].fd = shmcast_subscriber_fd(sub);
        fds[0].events = POLLIN;
        fds[1].fd = STDIN_FILENO;
        fds[1].events = POLLIN;
        if (poll(fds, watched, -1) < 0) {
            perror("poll");
            break;
        }
        if (watched == 2 && (fds[1].revents & (POLLIN | POLLHUP))) {
            char line[256];
            /* A line typed, or the end of input (Ctrl-D): quit. */
            if (fgets(line, sizeof line, stdin) == NULL) {
                clearerr(stdin);
            }
            printf("stopped\n");
            break;
        }
        /* fds[0] readable: loop around and drain again. */
    }

    shmcast_subscriber_destroy(sub);
    return 0;
}
