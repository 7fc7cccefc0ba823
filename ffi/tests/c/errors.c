/* Error paths, in one process: null arguments, bad options, missing and busy topics, the
 * one-loan and one-sample rules, buffers too small, a full ring, hostile clients on the
 * topic socket, and the end of the stream. The default SIGPIPE disposition is kept: a SIGPIPE
 * raised by the library would kill this program.
 *
 * usage: errors TOPIC_PREFIX */
#include "common.h"
#include "expect.h"

#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static char topic_buf[256];

static const char *topic(const char *prefix, const char *name) {
    snprintf(topic_buf, sizeof topic_buf, "%s-%s", prefix, name);
    return topic_buf;
}

static void codes_and_messages(void) {
    int code;
    const char *unknown = shmcast_strerror(12345);
    EXPECT_TRUE(strcmp(unknown, "unknown shmcast error code") == 0);
    EXPECT_TRUE(strcmp(shmcast_strerror(SHMCAST_OK), "success") == 0);
    for (code = SHMCAST_EPANIC; code < SHMCAST_OK; code++) {
        const char *text = shmcast_strerror(code);
        EXPECT_TRUE(text != NULL && text[0] != '\0' && strcmp(text, unknown) != 0);
    }
    EXPECT_TRUE(shmcast_last_error_message() != NULL);
    EXPECT_TRUE(shmcast_version() != NULL && shmcast_version()[0] != '\0');
    EXPECT_TRUE(shmcast_last_lagged_count() == 0);
}

static void bad_arguments(const char *prefix) {
    shmcast_publisher_options popts;
    shmcast_subscriber_options sopts;
    shmcast_publisher *pub = (shmcast_publisher *)&popts; /* must be overwritten with NULL */
    shmcast_subscriber *sub = (shmcast_subscriber *)&sopts;
    shmcast_sample sample;
    shmcast_publisher_stats pstats;
    shmcast_subscriber_stats sstats;
    size_t len, count;
    uint32_t uid = 0;
    void *data;

    EXPECT(shmcast_publisher_options_init(NULL), SHMCAST_EINVAL);
    EXPECT(shmcast_subscriber_options_init(NULL), SHMCAST_EINVAL);
    EXPECT_TRUE(strstr(shmcast_last_error_message(), "opts") != NULL);

    EXPECT(shmcast_publisher_create(NULL, NULL, &pub), SHMCAST_EINVAL);
    EXPECT_TRUE(pub == NULL);
    EXPECT(shmcast_publisher_create(topic(prefix, "x"), NULL, NULL), SHMCAST_EINVAL);
    memset(&popts, 0, sizeof popts);
    EXPECT(shmcast_publisher_create(topic(prefix, "x"), &popts, &pub), SHMCAST_EINVAL);
    EXPECT_TRUE(strstr(shmcast_last_error_message(), "initialised") != NULL);
    shmcast_publisher_options_init(&popts);
    popts.reserved[0] = 1;
    EXPECT(shmcast_publisher_create(topic(prefix, "x"), &popts, &pub), SHMCAST_EINVAL);
    shmcast_publisher_options_init(&popts);
    popts.capacity = 1000;
    EXPECT(shmcast_publisher_create(topic(prefix, "x"), &popts, &pub), SHMCAST_ECONFIG);
    shmcast_publisher_options_init(&popts);
    popts.max_message = popts.capacity;
    EXPECT(shmcast_publisher_create(topic(prefix, "x"), &popts, &pub), SHMCAST_ECONFIG);
    shmcast_publisher_options_init(&popts);
    popts.admission = 7;
    EXPECT(shmcast_publisher_create(topic(prefix, "x"), &popts, &pub), SHMCAST_EINVAL);
    shmcast_publisher_options_init(&popts);
    popts.admission = SHMCAST_ADMIT_UIDS;
    popts.admit_uid_count = 1;
    EXPECT(shmcast_publisher_create(topic(prefix, "x"), &popts, &pub), SHMCAST_EINVAL);
    /* A list of uids with another admission would be ignored: refused instead. */
    popts.admission = SHMCAST_ADMIT_SAME_UID;
    popts.admit_uids = &uid;
    EXPECT(shmcast_publisher_create(topic(prefix, "x"), &popts, &pub), SHMCAST_EINVAL);
    EXPECT_TRUE(strstr(shmcast_last_error_message(), "SHMCAST_ADMIT_UIDS") != NULL);
    popts.admission = SHMCAST_ADMIT_UIDS;
    popts.admit_uids = NULL;
    popts.admit_uids = &uid;
    popts.stall_bound_ms = -5;
    EXPECT(shmcast_publisher_create(topic(prefix, "x"), &popts, &pub), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_create("bad name!", NULL, &pub), SHMCAST_ETOPIC);
    EXPECT(shmcast_publisher_create(".hidden", NULL, &pub), SHMCAST_ETOPIC);
    EXPECT(shmcast_publisher_create("\xff\xfe", NULL, &pub), SHMCAST_ETOPIC);
    EXPECT_TRUE(pub == NULL);

    EXPECT(shmcast_subscriber_connect(NULL, NULL, &sub), SHMCAST_EINVAL);
    EXPECT_TRUE(sub == NULL);
    EXPECT(shmcast_subscriber_connect(topic(prefix, "x"), NULL, NULL), SHMCAST_EINVAL);
    memset(&sopts, 0, sizeof sopts);
    EXPECT(shmcast_subscriber_connect(topic(prefix, "x"), &sopts, &sub), SHMCAST_EINVAL);
    shmcast_subscriber_options_init(&sopts);
    sopts.mode = 5;
    EXPECT(shmcast_subscriber_connect(topic(prefix, "x"), &sopts, &sub), SHMCAST_EINVAL);
    shmcast_subscriber_options_init(&sopts);
    sopts.publisher_uid = 5;
    EXPECT(shmcast_subscriber_connect(topic(prefix, "x"), &sopts, &sub), SHMCAST_EINVAL);
    EXPECT_TRUE(strstr(shmcast_last_error_message(), "publisher_admission") != NULL);
    shmcast_subscriber_options_init(&sopts);
    sopts.start = -3;
    EXPECT(shmcast_subscriber_connect(topic(prefix, "x"), &sopts, &sub), SHMCAST_EINVAL);
    shmcast_subscriber_options_init(&sopts);
    sopts.connect_timeout_ms = -2;
    EXPECT(shmcast_subscriber_connect(topic(prefix, "x"), &sopts, &sub), SHMCAST_EINVAL);
    shmcast_subscriber_options_init(&sopts);
    sopts.publisher_admission = 9;
    EXPECT(shmcast_subscriber_connect(topic(prefix, "x"), &sopts, &sub), SHMCAST_EINVAL);
    EXPECT(shmcast_subscriber_connect("bad name!", NULL, &sub), SHMCAST_ETOPIC);

    /* Null handles everywhere. */
    EXPECT(shmcast_publisher_loan(NULL, 1, 0, &data), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_publish(NULL), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_abandon(NULL), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_send(NULL, "x", 1, 0), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_get_stats(NULL, &pstats), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_subscribers(NULL, NULL, 0, &count), SHMCAST_EINVAL);
    EXPECT_TRUE(shmcast_publisher_path(NULL) == NULL);
    EXPECT(shmcast_subscriber_recv(NULL, 0, &sample), SHMCAST_EINVAL);
    EXPECT_TRUE(sample.data == NULL && sample.owner == NULL);
    EXPECT(shmcast_subscriber_recv_copy(NULL, 0, NULL, 0, &len, NULL), SHMCAST_EINVAL);
    EXPECT(shmcast_sample_release(NULL), SHMCAST_EINVAL);
    EXPECT(shmcast_subscriber_fd(NULL), SHMCAST_EINVAL);
    EXPECT(shmcast_subscriber_get_stats(NULL, &sstats), SHMCAST_EINVAL);
    shmcast_publisher_destroy(NULL);
    shmcast_subscriber_destroy(NULL);
    /* A cleared sample releases as a no-op. */
    memset(&sample, 0, sizeof sample);
    EXPECT(shmcast_sample_release(&sample), SHMCAST_OK);
}

static void missing_publisher(const char *prefix) {
    shmcast_subscriber_options opts;
    shmcast_subscriber *sub = NULL;
    shmcast_subscriber_options_init(&opts);
    EXPECT(shmcast_subscriber_connect(topic(prefix, "nobody"), &opts, &sub), SHMCAST_ENOPUBLISHER);
    opts.connect_timeout_ms = 300;
    EXPECT(shmcast_subscriber_connect(topic(prefix, "nobody"), &opts, &sub), SHMCAST_ENOPUBLISHER);
    EXPECT_TRUE(sub == NULL);
    EXPECT_TRUE(strstr(shmcast_last_error_message(), "no publisher") != NULL);
}

/* max_subscribers: the next subscriber is refused, with the reason, until one leaves. */
static void subscriber_limit(const char *prefix) {
    shmcast_publisher_options popts;
    shmcast_publisher *pub = NULL;
    shmcast_subscriber *first = NULL, *second = NULL;
    int tries, rc;
    shmcast_publisher_options_init(&popts);
    EXPECT_TRUE(popts.max_subscribers == 0);
    popts.max_subscribers = 1;
    EXPECT(shmcast_publisher_create(topic(prefix, "limit"), &popts, &pub), SHMCAST_OK);
    EXPECT(shmcast_subscriber_connect(topic(prefix, "limit"), NULL, &first), SHMCAST_OK);
    EXPECT(shmcast_subscriber_connect(topic(prefix, "limit"), NULL, &second), SHMCAST_EREFUSED);
    EXPECT_TRUE(second == NULL);
    EXPECT_TRUE(strstr(shmcast_last_error_message(), "maximum of 1 subscribers") != NULL);
    shmcast_subscriber_destroy(first);
    /* The publisher notices the departure on its own thread: retry, bounded. */
    for (tries = 0; tries < 5000; tries++) {
        rc = shmcast_subscriber_connect(topic(prefix, "limit"), NULL, &second);
        if (rc != SHMCAST_EREFUSED) {
            break;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    EXPECT(rc, SHMCAST_OK);
    shmcast_subscriber_destroy(second);
    shmcast_publisher_destroy(pub);
}

/* Clients that connect to the topic socket and misbehave. */
static void hostile_clients(const char *path) {
    int i;
    for (i = 0; i < 20; i++) {
        struct sockaddr_un addr;
        int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        EXPECT_TRUE(fd >= 0);
        memset(&addr, 0, sizeof addr);
        addr.sun_family = AF_UNIX;
        strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
        EXPECT_TRUE(connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0);
        if (i % 2 == 0) {
            /* Garbage, then gone before the refusal can be sent. */
            EXPECT_TRUE(send(fd, "garbage!garbage!", 16, 0) == 16);
        }
        close(fd);
    }
}

static void one_loan_one_sample(const char *prefix) {
    shmcast_publisher_options popts;
    shmcast_publisher *pub = NULL, *second = NULL;
    shmcast_subscriber *sub = NULL;
    shmcast_publisher_stats pstats;
    shmcast_subscriber_stats sstats;
    shmcast_subscriber_info infos[2];
    shmcast_sample sample, stale;
    uint8_t buf[200];
    size_t len = 0, count = 0;
    uint64_t seq = 0, first_seq;
    void *data = NULL;
    const char *path;
    int rc, sent;

    shmcast_publisher_options_init(&popts);
    popts.capacity = 4096;
    popts.max_message = 1024;
    CHECK_OK(shmcast_publisher_create(topic(prefix, "main"), &popts, &pub));
    EXPECT(shmcast_publisher_create(topic(prefix, "main"), &popts, &second), SHMCAST_EINUSE);
    EXPECT_TRUE(second == NULL);
    path = shmcast_publisher_path(pub);
    EXPECT_TRUE(path != NULL && strstr(path, "main") != NULL);
    EXPECT_TRUE(popts.stall_bound_ms == 5000);
    EXPECT(shmcast_publisher_wait_for_subscribers(NULL, 1, 0), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_wait_for_subscribers(pub, 1, -2), SHMCAST_EINVAL);
    /* As for every call with a timeout: 0 never waits (EAGAIN), a positive one runs out. */
    EXPECT(shmcast_publisher_wait_for_subscribers(pub, 1, 0), SHMCAST_EAGAIN);
    EXPECT_TRUE(strstr(shmcast_last_error_message(), "(0 connected)") != NULL);
    EXPECT(shmcast_publisher_wait_for_subscribers(pub, 1, 20), SHMCAST_ETIMEDOUT);
    EXPECT_TRUE(strstr(shmcast_last_error_message(), "(0 connected)") != NULL);
    CHECK_OK(shmcast_publisher_wait_for_subscribers(pub, 0, 0));

    CHECK_OK(shmcast_subscriber_connect(topic(prefix, "main"), NULL, &sub));
    CHECK_OK(shmcast_publisher_wait_for_subscribers(pub, 1, -1));
    EXPECT_TRUE(shmcast_subscriber_fd(sub) >= 0);
    EXPECT(shmcast_subscriber_recv(sub, 0, NULL), SHMCAST_EINVAL);
    EXPECT(shmcast_subscriber_recv(sub, -2, &sample), SHMCAST_EINVAL);
    EXPECT(shmcast_subscriber_recv(sub, 0, &sample), SHMCAST_EAGAIN);
    EXPECT(shmcast_subscriber_recv(sub, 20, &sample), SHMCAST_ETIMEDOUT);
    EXPECT(shmcast_subscriber_recv_copy(sub, 0, buf, sizeof buf, NULL, NULL), SHMCAST_EINVAL);
    EXPECT(shmcast_subscriber_recv_copy(sub, 0, NULL, 5, &len, NULL), SHMCAST_EINVAL);
    EXPECT(shmcast_subscriber_get_stats(sub, NULL), SHMCAST_EINVAL);

    /* Loans: too large, bad arguments, one at a time. */
    EXPECT(shmcast_publisher_loan(pub, 2000, 0, &data), SHMCAST_ETOOLARGE);
    EXPECT_TRUE(data == NULL);
    EXPECT_TRUE(strstr(shmcast_last_error_message(), "exceeds") != NULL);
    EXPECT(shmcast_publisher_loan(pub, 10, 0, NULL), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_loan(pub, 10, -7, &data), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_publish(pub), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_abandon(pub), SHMCAST_EINVAL);
    CHECK_OK(shmcast_publisher_loan(pub, 16, 0, &data));
    EXPECT_TRUE(data != NULL);
    EXPECT(shmcast_publisher_loan(pub, 16, 0, &data), SHMCAST_EBUSY);
    EXPECT(shmcast_publisher_send(pub, "x", 1, 0), SHMCAST_EBUSY);
    EXPECT(shmcast_publisher_get_stats(pub, &pstats), SHMCAST_EBUSY);
    EXPECT(shmcast_publisher_subscribers(pub, NULL, 0, &count), SHMCAST_EBUSY);
    EXPECT_TRUE(shmcast_publisher_path(pub) == path);
    CHECK_OK(shmcast_publisher_abandon(pub));
    EXPECT(shmcast_publisher_abandon(pub), SHMCAST_EINVAL);
    CHECK_OK(shmcast_publisher_loan(pub, 16, 0, &data));
    memcpy(data, "0123456789abcdef", 16);
    CHECK_OK(shmcast_publisher_publish(pub));
    EXPECT(shmcast_publisher_publish(pub), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_send(pub, NULL, 5, 0), SHMCAST_EINVAL);
    CHECK_OK(shmcast_publisher_send(pub, NULL, 0, 0));

    /* One sample at a time. */
    CHECK_OK(shmcast_subscriber_recv(sub, 1000, &sample));
    EXPECT_TRUE(sample.len == 16 && memcmp(sample.data, "0123456789abcdef", 16) == 0);
    EXPECT_TRUE(sample.owner == sub && ((uintptr_t)sample.data) % 16 == 0);
    first_seq = sample.seq;
    /* A second receive into the held sample itself is refused and leaves it to be released. */
    EXPECT(shmcast_subscriber_recv(sub, 0, &sample), SHMCAST_EBUSY);
    EXPECT_TRUE(sample.owner == sub && sample.seq == first_seq && sample.len == 16);
    EXPECT(shmcast_subscriber_recv_latest(sub, 0, &sample, NULL), SHMCAST_EBUSY);
    EXPECT_TRUE(sample.owner == sub && sample.seq == first_seq);
    stale = sample;
    EXPECT(shmcast_subscriber_recv_copy(sub, 0, buf, sizeof buf, &len, &seq), SHMCAST_EBUSY);
    EXPECT(shmcast_subscriber_get_stats(sub, &sstats), SHMCAST_EBUSY);
    EXPECT_TRUE(shmcast_subscriber_fd(sub) >= 0);
    CHECK_OK(shmcast_sample_release(&sample));
    EXPECT_TRUE(sample.owner == NULL && sample.data == NULL);
    EXPECT(shmcast_sample_release(&sample), SHMCAST_OK);
    EXPECT(shmcast_sample_release(&stale), SHMCAST_EINVAL);

    /* The empty message, copied out with no buffer at all. */
    CHECK_OK(shmcast_subscriber_recv_copy(sub, 1000, NULL, 0, &len, &seq));
    EXPECT_TRUE(len == 0 && seq == first_seq + 1);

    /* A buffer too small keeps the message for the next receive of either kind. */
    memset(buf, 'a', 100);
    CHECK_OK(shmcast_publisher_send(pub, buf, 100, 0));
    EXPECT(shmcast_subscriber_recv_copy(sub, 1000, buf, 10, &len, &seq), SHMCAST_EMSGSIZE);
    EXPECT_TRUE(len == 100 && seq == first_seq + 2);
    EXPECT(shmcast_subscriber_recv_copy(sub, 0, NULL, 0, &len, NULL), SHMCAST_EMSGSIZE);
    CHECK_OK(shmcast_subscriber_recv_copy(sub, 0, buf, sizeof buf, &len, &seq));
    EXPECT_TRUE(len == 100 && seq == first_seq + 2 && buf[99] == 'a');
    CHECK_OK(shmcast_publisher_send(pub, buf, 50, 0));
    EXPECT(shmcast_subscriber_recv_copy(sub, 1000, buf, 10, &len, &seq), SHMCAST_EMSGSIZE);
    CHECK_OK(shmcast_subscriber_recv(sub, 0, &sample));
    EXPECT_TRUE(sample.len == 50 && sample.seq == first_seq + 3);
    CHECK_OK(shmcast_sample_release(&sample));

    /* Statistics. */
    CHECK_OK(shmcast_subscriber_get_stats(sub, &sstats));
    EXPECT_TRUE(sstats.received == 4 && sstats.gating && sstats.lagged == 0);
    EXPECT(shmcast_publisher_get_stats(pub, NULL), SHMCAST_EINVAL);
    CHECK_OK(shmcast_publisher_get_stats(pub, &pstats));
    EXPECT_TRUE(pstats.messages == 4 && pstats.subscribers == 1 && pstats.max_message == 1024);
    EXPECT(shmcast_publisher_subscribers(pub, NULL, 1, &count), SHMCAST_EINVAL);
    EXPECT(shmcast_publisher_subscribers(pub, infos, 2, NULL), SHMCAST_EINVAL);
    CHECK_OK(shmcast_publisher_subscribers(pub, NULL, 0, &count));
    EXPECT_TRUE(count == 1);
    CHECK_OK(shmcast_publisher_subscribers(pub, infos, 2, &count));
    EXPECT_TRUE(count == 1 && infos[0].mode == SHMCAST_MODE_GATING && infos[0].lag_messages == 0);

    /* A gating subscriber that does not read fills the ring. */
    sent = 0;
    for (;;) {
        rc = shmcast_publisher_send(pub, buf, 200, 0);
        if (rc == SHMCAST_EAGAIN) {
            break;
        }
        CHECK_OK(rc);
        sent++;
        EXPECT_TRUE(sent < 100);
    }
    EXPECT_TRUE(sent > 5);
    EXPECT(shmcast_publisher_send(pub, buf, 200, 30), SHMCAST_ETIMEDOUT);
    EXPECT(shmcast_publisher_loan(pub, 200, 0, &data), SHMCAST_EAGAIN);
    CHECK_OK(shmcast_publisher_get_stats(pub, &pstats));
    EXPECT_TRUE(pstats.full >= 2);

    /* Misbehaving clients are turned away; the publisher and its subscriber go on. */
    hostile_clients(path);

    /* Drain, then the end of the stream once the publisher is gone: a loan left outstanding
     * is abandoned by destroy and never seen. */
    CHECK_OK(shmcast_subscriber_recv(sub, 1000, &sample));
    CHECK_OK(shmcast_sample_release(&sample));
    CHECK_OK(shmcast_publisher_loan(pub, 8, 1000, &data));
    shmcast_publisher_destroy(pub);
    for (;;) {
        rc = shmcast_subscriber_recv(sub, 5000, &sample);
        if (rc != SHMCAST_OK) {
            break;
        }
        EXPECT_TRUE(sample.len == 200);
        CHECK_OK(shmcast_sample_release(&sample));
        sent--;
    }
    EXPECT(rc, SHMCAST_EDISCONNECTED);
    EXPECT_TRUE(sent == 1); /* all but the one released before destroy */
    EXPECT(shmcast_subscriber_recv(sub, -1, &sample), SHMCAST_EDISCONNECTED);
    EXPECT(shmcast_subscriber_recv_copy(sub, 0, buf, sizeof buf, &len, &seq),
           SHMCAST_EDISCONNECTED);
    shmcast_subscriber_destroy(sub);
}

/* `spin_limit_us`: `_init` writes 0 (the default, where older headers had a reserved word that
 * had to be 0); above SHMCAST_SPIN_LIMIT_MAX_US, except SHMCAST_SPIN_NONE, is refused on either
 * side; the largest limit and SHMCAST_SPIN_NONE are taken (a subscriber goes on to look for the
 * publisher). */
static void spin_limits(const char *prefix) {
    static const struct {
        uint32_t us;
        int publisher, subscriber;
    } cases[] = {
        {SHMCAST_SPIN_LIMIT_MAX_US + 1, SHMCAST_EINVAL, SHMCAST_EINVAL},
        {SHMCAST_SPIN_NONE - 1, SHMCAST_EINVAL, SHMCAST_EINVAL},
        {SHMCAST_SPIN_LIMIT_MAX_US, SHMCAST_OK, SHMCAST_ENOPUBLISHER},
        {SHMCAST_SPIN_NONE, SHMCAST_OK, SHMCAST_ENOPUBLISHER},
    };
    shmcast_publisher_options popts;
    shmcast_subscriber_options sopts;
    size_t i;

    CHECK_OK(shmcast_publisher_options_init(&popts));
    CHECK_OK(shmcast_subscriber_options_init(&sopts));
    EXPECT_TRUE(popts.spin_limit_us == 0 && sopts.spin_limit_us == 0);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        shmcast_publisher *pub = NULL;
        shmcast_subscriber *sub = NULL;
        popts.spin_limit_us = sopts.spin_limit_us = cases[i].us;
        EXPECT(shmcast_publisher_create(topic(prefix, "spin"), &popts, &pub), cases[i].publisher);
        if (cases[i].publisher == SHMCAST_EINVAL) {
            EXPECT_MESSAGE("spin_limit_us");
        }
        shmcast_publisher_destroy(pub);
        EXPECT(shmcast_subscriber_connect(topic(prefix, "spin"), &sopts, &sub),
               cases[i].subscriber);
        if (cases[i].subscriber == SHMCAST_EINVAL) {
            EXPECT_MESSAGE("spin_limit_us");
        }
    }
}

/* A gating subscriber that holds a sample past the publisher's stall bound is demoted, and
 * the publisher may then write over the sample: its release says so (SHMCAST_EDEMOTED), and
 * the next receive reports the demotion. A sample released in time says nothing. */
static void held_past_the_stall_bound(const char *prefix) {
    shmcast_publisher_options popts;
    shmcast_publisher *pub = NULL;
    shmcast_subscriber *sub = NULL;
    shmcast_sample sample;
    uint8_t buf[200];
    int i, rc;

    shmcast_publisher_options_init(&popts);
    popts.capacity = 1024;
    popts.max_message = 200;
    popts.stall_bound_ms = 50;
    CHECK_OK(shmcast_publisher_create(topic(prefix, "held"), &popts, &pub));
    CHECK_OK(shmcast_subscriber_connect(topic(prefix, "held"), NULL, &sub));
    memset(buf, 'a', sizeof buf);
    CHECK_OK(shmcast_publisher_send(pub, buf, sizeof buf, -1));
    CHECK_OK(shmcast_subscriber_recv(sub, -1, &sample));
    CHECK_OK(shmcast_sample_release(&sample));

    CHECK_OK(shmcast_publisher_send(pub, buf, sizeof buf, -1));
    CHECK_OK(shmcast_subscriber_recv(sub, -1, &sample));
    EXPECT_TRUE(((const uint8_t *)sample.data)[0] == 'a');
    /* Fill the ring behind the held sample, wait out the stall bound, and lap the sample. */
    memset(buf, 'b', sizeof buf);
    for (i = 0; i < 12; i++) {
        rc = shmcast_publisher_send(pub, buf, sizeof buf, 2000);
        EXPECT(rc, SHMCAST_OK);
    }
    EXPECT_TRUE(((const uint8_t *)sample.data)[0] == 'b');
    EXPECT(shmcast_sample_release(&sample), SHMCAST_EDEMOTED);
    EXPECT_TRUE(strstr(shmcast_last_error_message(), "wrote over") != NULL);
    EXPECT_TRUE(sample.owner == NULL && sample.data == NULL);
    EXPECT(shmcast_subscriber_recv(sub, 0, &sample), SHMCAST_EDEMOTED);
    shmcast_subscriber_destroy(sub);
    shmcast_publisher_destroy(pub);
}

/* How a stream ended: going on, ended by a destroyed publisher, or left by a publisher process
 * that went away without ending it (a child that leaves with _exit). */
static void stream_ends(const char *prefix) {
    shmcast_publisher *pub = NULL;
    shmcast_subscriber *sub = NULL;
    shmcast_sample sample;
    int go[2], ready[2];
    char byte = 0;
    pid_t child;
    int status = 0;

    EXPECT(shmcast_subscriber_stream_end(NULL), SHMCAST_EINVAL);
    CHECK_OK(shmcast_publisher_create(topic(prefix, "ends"), NULL, &pub));
    CHECK_OK(shmcast_subscriber_connect(topic(prefix, "ends"), NULL, &sub));
    EXPECT(shmcast_subscriber_stream_end(sub), SHMCAST_STREAM_GOING_ON);
    CHECK_OK(shmcast_publisher_send(pub, "x", 1, -1));
    CHECK_OK(shmcast_subscriber_recv(sub, -1, &sample));
    EXPECT(shmcast_subscriber_stream_end(sub), SHMCAST_EBUSY);
    CHECK_OK(shmcast_sample_release(&sample));
    shmcast_publisher_destroy(pub);
    EXPECT(shmcast_subscriber_recv(sub, 1000, &sample), SHMCAST_EDISCONNECTED);
    EXPECT(shmcast_subscriber_stream_end(sub), SHMCAST_STREAM_CLOSED);
    shmcast_subscriber_destroy(sub);

    if (pipe(go) != 0 || pipe(ready) != 0) {
        FAIL("pipe");
    }
    child = fork();
    if (child < 0) {
        FAIL("fork");
    }
    if (child == 0) {
        /* The child: publish, then leave without destroying the publisher. */
        if (shmcast_publisher_create(topic(prefix, "vanish"), NULL, &pub) != SHMCAST_OK ||
            write(ready[1], "r", 1) != 1 || read(go[0], &byte, 1) != 1) {
            _exit(1);
        }
        _exit(0);
    }
    close(go[0]);
    close(ready[1]);
    EXPECT_TRUE(read(ready[0], &byte, 1) == 1);
    CHECK_OK(shmcast_subscriber_connect(topic(prefix, "vanish"), NULL, &sub));
    EXPECT_TRUE(write(go[1], "g", 1) == 1);
    EXPECT_TRUE(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
                WEXITSTATUS(status) == 0);
    EXPECT(shmcast_subscriber_recv(sub, 5000, &sample), SHMCAST_EDISCONNECTED);
    EXPECT(shmcast_subscriber_stream_end(sub), SHMCAST_STREAM_VANISHED);
    shmcast_subscriber_destroy(sub);
    close(go[1]);
    close(ready[0]);
    /* The child's socket file is left behind: a new publisher takes it over and removes it. */
    CHECK_OK(shmcast_publisher_create(topic(prefix, "vanish"), NULL, &pub));
    shmcast_publisher_destroy(pub);
}

/* Destroying handles that still hold a loan or a sample frees everything (valgrind checks). */
static void destroy_while_busy(const char *prefix) {
    shmcast_publisher *pub = NULL;
    shmcast_subscriber *sub = NULL;
    shmcast_sample sample;
    void *data = NULL;

    CHECK_OK(shmcast_publisher_create(topic(prefix, "busy"), NULL, &pub));
    CHECK_OK(shmcast_subscriber_connect(topic(prefix, "busy"), NULL, &sub));
    CHECK_OK(shmcast_publisher_send(pub, "hello", 5, -1));
    CHECK_OK(shmcast_subscriber_recv(sub, -1, &sample));
    EXPECT_TRUE(sample.len == 5 && memcmp(sample.data, "hello", 5) == 0);
    CHECK_OK(shmcast_publisher_loan(pub, 64, -1, &data));
    shmcast_subscriber_destroy(sub);
    shmcast_publisher_destroy(pub);
}

int main(int argc, char **argv) {
    int fds_at_start = open_fds();
    if (argc != 2) {
        FAIL("usage: errors TOPIC_PREFIX");
    }
    codes_and_messages();
    bad_arguments(argv[1]);
    spin_limits(argv[1]);
    missing_publisher(argv[1]);
    subscriber_limit(argv[1]);
    one_loan_one_sample(argv[1]);
    held_past_the_stall_bound(argv[1]);
    stream_ends(argv[1]);
    destroy_while_busy(argv[1]);
    EXPECT_NO_FD_LEAK(fds_at_start);
    printf("errors: %d checks passed\n", checks);
    return 0;
}
