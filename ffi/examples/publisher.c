/* A shmcast publisher in C: waits for a first subscriber, then publishes COUNT small text
 * messages, INTERVAL_MS apart, written in place into the ring (zero-copy).
 *
 * usage: publisher TOPIC [COUNT] [INTERVAL_MS] */
#define _POSIX_C_SOURCE 200809L

#include <shmcast.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_ms(long ms) {
    struct timespec t;
    t.tv_sec = ms / 1000;
    t.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&t, NULL);
}

static int fail(const char *what, int rc) {
    fprintf(stderr, "%s: %s (%s)\n", what, shmcast_strerror(rc), shmcast_last_error_message());
    return 1;
}

int main(int argc, char **argv) {
    shmcast_publisher_options opts;
    shmcast_publisher *pub = NULL;
    shmcast_publisher_stats stats;
    long count = argc > 2 ? atol(argv[2]) : 10;
    long interval_ms = argc > 3 ? atol(argv[3]) : 100;
    long i;
    int rc;

    if (argc < 2) {
        fprintf(stderr, "usage: %s TOPIC [COUNT] [INTERVAL_MS]\n", argv[0]);
        return 2;
    }
    shmcast_publisher_options_init(&opts);
    opts.capacity = 1 << 16; /* 64 KiB ring */
    rc = shmcast_publisher_create(argv[1], &opts, &pub);
    if (rc != SHMCAST_OK) {
        return fail("create", rc);
    }
    printf("publishing on %s\n", shmcast_publisher_path(pub));
    fflush(stdout);

    /* Messages published before anyone subscribes are only seen by late joiners that start
     * from the oldest message: wait up to 10 s for a first subscriber. */
    rc = shmcast_publisher_wait_for_subscribers(pub, 1, 10000);
    if (rc != SHMCAST_OK && rc != SHMCAST_ETIMEDOUT) {
        return fail("wait_for_subscribers", rc);
    }

    for (i = 0; i < count; i++) {
        void *buf = NULL;
        char text[64];
        int len = snprintf(text, sizeof text, "tick %ld", i);
        /* Block (-1) while gating subscribers have not released enough space. */
        rc = shmcast_publisher_loan(pub, (size_t)len, -1, &buf);
        if (rc != SHMCAST_OK) {
            shmcast_publisher_destroy(pub);
            return fail("loan", rc);
        }
        memcpy(buf, text, (size_t)len); /* fill the buffer in place, inside the ring */
        shmcast_publisher_publish(pub);
        sleep_ms(interval_ms);
    }

    shmcast_publisher_get_stats(pub, &stats);
    printf("published %llu messages to %llu subscribers (%llu wakeups)\n",
           (unsigned long long)stats.messages, (unsigned long long)stats.subscribers,
           (unsigned long long)stats.wake_syscalls);
    /* Subscribers receive everything published, then SHMCAST_EDISCONNECTED. */
    shmcast_publisher_destroy(pub);
    return 0;
}
