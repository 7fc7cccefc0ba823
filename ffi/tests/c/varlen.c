/* Messages whose length is known only once written: a C publisher loans the most a message may
 * need, writes it (snprintf, the generator), and publishes what it wrote with
 * shmcast_publisher_publish_len. Its subscriber receives exactly that length and those bytes, and
 * the next message follows. A length above the loan's is SHMCAST_EINVAL and leaves the loan
 * outstanding; without a loan, publish_len is SHMCAST_EINVAL.
 *
 * usage: varlen TOPIC */
#include "common.h"
#include "expect.h"

#define LOAN 1000

/* Receives one message and checks its length and bytes. */
static void expect_message(shmcast_subscriber *sub, const void *bytes, size_t len) {
    shmcast_sample sample;
    CHECK_OK(shmcast_subscriber_recv(sub, -1, &sample));
    EXPECT_TRUE(sample.len == len);
    EXPECT_TRUE(len == 0 || memcmp(sample.data, bytes, len) == 0);
    CHECK_OK(shmcast_sample_release(&sample));
}

/* Formatted text written in place, published with its length. */
static void formatted(shmcast_publisher *pub, shmcast_subscriber *sub) {
    void *buf = NULL;
    int n;
    CHECK_OK(shmcast_publisher_loan(pub, 256, -1, &buf));
    n = snprintf((char *)buf, 256, "job %d done in %d ms", 17, 240);
    EXPECT_TRUE(n == 21);
    CHECK_OK(shmcast_publisher_publish_len(pub, (size_t)n));
    expect_message(sub, "job 17 done in 240 ms", 21);

    /* Nothing written: an empty message. */
    CHECK_OK(shmcast_publisher_loan(pub, 256, -1, &buf));
    CHECK_OK(shmcast_publisher_publish_len(pub, 0));
    expect_message(sub, NULL, 0);
}

/* A length above the loan's publishes nothing and keeps the loan. */
static void refused_lengths(shmcast_publisher *pub, shmcast_subscriber *sub) {
    void *buf = NULL, *other = NULL;
    EXPECT(shmcast_publisher_publish_len(pub, 0), SHMCAST_EINVAL);
    EXPECT_MESSAGE("no loan is outstanding");
    EXPECT(shmcast_publisher_publish_len(NULL, 0), SHMCAST_EINVAL);

    CHECK_OK(shmcast_publisher_loan(pub, 16, -1, &buf));
    memcpy(buf, "0123456789abcdef", 16);
    EXPECT(shmcast_publisher_publish_len(pub, 17), SHMCAST_EINVAL);
    EXPECT_MESSAGE("cannot publish 17 bytes of a 16-byte loan");
    EXPECT(shmcast_publisher_loan(pub, 16, 0, &other), SHMCAST_EBUSY);
    EXPECT_TRUE(other == NULL);
    CHECK_OK(shmcast_publisher_publish_len(pub, 16));
    expect_message(sub, "0123456789abcdef", 16);
}

/* Generator messages of 0 to 999 bytes, each in a 1000-byte loan, then a fixed-length send:
 * every one arrives with its own length, the send right after the last. */
static void generated(shmcast_publisher *pub, shmcast_subscriber *sub) {
    static uint8_t expected[LOAN];
    uint64_t seq;
    for (seq = 0; seq < 500; seq++) {
        void *buf = NULL;
        size_t len = gen_len(seq);
        CHECK_OK(shmcast_publisher_loan(pub, LOAN, -1, &buf));
        memset(buf, 0xee, LOAN);
        gen_fill(seq, (uint8_t *)buf, len);
        CHECK_OK(shmcast_publisher_publish_len(pub, len));
        gen_fill(seq, expected, len);
        expect_message(sub, expected, len);
    }
    CHECK_OK(shmcast_publisher_send(pub, "end", 3, -1));
    expect_message(sub, "end", 3);
}

/* A lossy subscriber's empty message still points somewhere valid and 16-byte aligned, as the
 * header promises for every sample, from both receives. */
static void empty_lossy(const char *name, shmcast_publisher *pub) {
    shmcast_subscriber_options sopts;
    shmcast_subscriber *lossy = NULL;
    shmcast_sample sample;
    int i;
    shmcast_subscriber_options_init(&sopts);
    sopts.mode = SHMCAST_MODE_LOSSY;
    CHECK_OK(shmcast_subscriber_connect(name, &sopts, &lossy));
    for (i = 0; i < 2; i++) {
        CHECK_OK(shmcast_publisher_send(pub, NULL, 0, -1));
        if (i == 0) {
            CHECK_OK(shmcast_subscriber_recv(lossy, -1, &sample));
        } else {
            CHECK_OK(shmcast_subscriber_recv_latest(lossy, -1, &sample, NULL));
        }
        EXPECT_TRUE(sample.len == 0 && sample.data != NULL);
        EXPECT_TRUE(((uintptr_t)sample.data & 15) == 0);
        CHECK_OK(shmcast_sample_release(&sample));
    }
    shmcast_subscriber_destroy(lossy);
}

int main(int argc, char **argv) {
    int fds_at_start = open_fds();
    shmcast_publisher_options popts;
    shmcast_publisher *pub = NULL;
    shmcast_subscriber *sub = NULL;
    if (argc != 2) {
        FAIL("usage: varlen TOPIC");
    }
    shmcast_publisher_options_init(&popts);
    popts.capacity = 1 << 14;
    popts.max_message = LOAN;
    CHECK_OK(shmcast_publisher_create(argv[1], &popts, &pub));
    CHECK_OK(shmcast_subscriber_connect(argv[1], NULL, &sub));
    formatted(pub, sub);
    refused_lengths(pub, sub);
    generated(pub, sub);
    shmcast_subscriber_destroy(sub);
    empty_lossy(argv[1], pub);
    shmcast_publisher_destroy(pub);
    EXPECT_NO_FD_LEAK(fds_at_start);
    printf("varlen: %d checks passed\n", checks);
    return 0;
}
