/* The topic contract from C: a publisher declares a type or a schema, a subscriber reads the
 * declaration and, when it states an expectation, fails with SHMCAST_ECONTRACT and a message
 * naming both sides on any difference. Bad declarations and expectations are SHMCAST_EINVAL.
 * Then, against a Rust publisher of `Tick { seq: u64, price: f64 }` declared with `pod::<Tick>()`,
 * the C declaration of the same struct matches: a Rust type is named without its module path.
 * An imported topic (`imported = 1`) is seen so by its subscribers and counts what its source
 * lost; one is left for the Rust side to inspect.
 *
 * usage: contract TOPIC_PREFIX RUST_TOPIC IMPORTED_TOPIC */
#include "common.h"
#include "expect.h"

typedef struct {
    uint64_t seq;
    double price;
} Tick;

/* C99 has no _Alignof: a Tick's offset after one char is its alignment. */
typedef struct {
    char c;
    Tick t;
} TickAlign;
#define TICK_ALIGN ((uint32_t)offsetof(TickAlign, t))

static char topic_buf[256];

static const char *topic(const char *prefix, const char *name) {
    snprintf(topic_buf, sizeof topic_buf, "%s-%s", prefix, name);
    return topic_buf;
}

/* Subscriber options expecting the pod `name` of `size` bytes aligned to `align`. */
static shmcast_subscriber_options expect_pod(const char *name, uint64_t size, uint32_t align) {
    shmcast_subscriber_options o;
    shmcast_subscriber_options_init(&o);
    o.expect_type_name = name;
    o.expect_type_size = size;
    o.expect_type_align = align;
    return o;
}

/* Connecting to `t` with `o` fails with `code`. */
static void refused(const char *t, const shmcast_subscriber_options *o, int code) {
    shmcast_subscriber *sub = NULL;
    EXPECT(shmcast_subscriber_connect(t, o, &sub), code);
    EXPECT_TRUE(sub == NULL);
}

static void declared_pod(const char *prefix) {
    shmcast_publisher_options popts;
    shmcast_subscriber_options sopts;
    shmcast_publisher *pub = NULL;
    shmcast_subscriber *typed = NULL, *plain = NULL;
    shmcast_contract c;
    shmcast_sample sample;
    const char *t = topic(prefix, "pod");
    Tick tick = {7, 1.5};

    shmcast_publisher_options_init(&popts);
    EXPECT_TRUE(popts.type_name == NULL && popts.schema_name == NULL && popts.type_size == 0);
    popts.type_name = "Tick";
    popts.type_size = sizeof(Tick);
    popts.type_align = TICK_ALIGN;
    CHECK_OK(shmcast_publisher_create(t, &popts, &pub));

    /* A match, and a subscriber that states nothing: both read the declaration. */
    sopts = expect_pod("Tick", sizeof(Tick), TICK_ALIGN);
    CHECK_OK(shmcast_subscriber_connect(t, &sopts, &typed));
    CHECK_OK(shmcast_subscriber_connect(t, NULL, &plain));
    CHECK_OK(shmcast_subscriber_contract(plain, &c));
    EXPECT_TRUE(c.kind == SHMCAST_CONTRACT_POD);
    EXPECT_TRUE(strcmp(c.name, "Tick") == 0);
    EXPECT_TRUE(c.type_size == 16 && c.type_align == 8 && c.schema_version == 0);
    EXPECT_TRUE(c.max_message == 262144);
    CHECK_OK(shmcast_publisher_send(pub, &tick, sizeof tick, -1));
    CHECK_OK(shmcast_subscriber_recv(typed, -1, &sample));
    /* Readable while a sample is held. */
    CHECK_OK(shmcast_subscriber_contract(typed, &c));
    EXPECT_TRUE(c.kind == SHMCAST_CONTRACT_POD && strcmp(c.name, "Tick") == 0);
    EXPECT_TRUE(sample.len == sizeof(Tick) && ((const Tick *)sample.data)->seq == 7);
    CHECK_OK(shmcast_sample_release(&sample));

    /* Every message is one Tick: another length is refused, whichever way it is published,
     * and a refused loan stays outstanding until abandoned. Nothing reaches the subscriber. */
    {
        void *buf = NULL;
        EXPECT(shmcast_publisher_send(pub, "abc", 3, -1), SHMCAST_EINVAL);
        EXPECT_MESSAGE("the topic declares every message one Tick (16 bytes): a message of 3 "
                       "bytes is not one");
        CHECK_OK(shmcast_publisher_loan(pub, 64, -1, &buf));
        EXPECT(shmcast_publisher_publish(pub), SHMCAST_EINVAL);
        EXPECT_MESSAGE("a message of 64 bytes is not one");
        EXPECT(shmcast_publisher_publish_len(pub, 8), SHMCAST_EINVAL);
        EXPECT_MESSAGE("a message of 8 bytes is not one");
        memcpy(buf, &tick, sizeof tick);
        CHECK_OK(shmcast_publisher_publish_len(pub, sizeof tick));
        CHECK_OK(shmcast_subscriber_recv(typed, -1, &sample));
        EXPECT_TRUE(sample.len == sizeof(Tick) && sample.seq == 1);
        CHECK_OK(shmcast_sample_release(&sample));
        CHECK_OK(shmcast_publisher_loan(pub, 3, -1, &buf));
        EXPECT(shmcast_publisher_publish(pub), SHMCAST_EINVAL);
        CHECK_OK(shmcast_publisher_abandon(pub));
        EXPECT(shmcast_subscriber_recv(typed, 0, &sample), SHMCAST_EAGAIN);
    }

    /* Each field that differs. */
    sopts = expect_pod("Quote", 16, 8);
    refused(t, &sopts, SHMCAST_ECONTRACT);
    EXPECT_MESSAGE("the topic carries pod \"Tick\" (16 bytes, align 8), messages up to 262144 "
                   "bytes; this subscriber expects pod \"Quote\" (16 bytes, align 8)");
    sopts = expect_pod("Tick", 24, 8);
    refused(t, &sopts, SHMCAST_ECONTRACT);
    EXPECT_MESSAGE("expects pod \"Tick\" (24 bytes, align 8)");
    sopts = expect_pod("Tick", 16, 4);
    refused(t, &sopts, SHMCAST_ECONTRACT);
    EXPECT_MESSAGE("expects pod \"Tick\" (16 bytes, align 4)");
    shmcast_subscriber_options_init(&sopts);
    sopts.expect_schema_name = "Tick";
    sopts.expect_schema_version = 1;
    refused(t, &sopts, SHMCAST_ECONTRACT);
    EXPECT_MESSAGE("expects schema \"Tick\" version 1");
    shmcast_subscriber_options_init(&sopts);
    sopts.expect_max_message = 1u << 20;
    refused(t, &sopts, SHMCAST_ECONTRACT);
    EXPECT_MESSAGE("expects a maximum message of at least 1048576 bytes");

    /* Expectations no publisher can meet, refused before connecting. */
    sopts = expect_pod("Tick", 16, 3);
    refused(t, &sopts, SHMCAST_EINVAL);
    EXPECT_MESSAGE("alignment 3");
    sopts = expect_pod("", 16, 8);
    refused(t, &sopts, SHMCAST_EINVAL);
    EXPECT_MESSAGE("is empty");
    sopts = expect_pod("Tick", 16, 8);
    sopts.expect_schema_name = "Tick";
    refused(t, &sopts, SHMCAST_EINVAL);
    EXPECT_MESSAGE("expect_type_name or expect_schema_name, not both");
    shmcast_subscriber_options_init(&sopts);
    sopts.expect_type_size = 16;
    refused(t, &sopts, SHMCAST_EINVAL);
    EXPECT_MESSAGE("expect_type_size is set but expect_type_name is NULL");
    sopts = expect_pod("\xff", 16, 8);
    refused(t, &sopts, SHMCAST_EINVAL);
    EXPECT_MESSAGE("not valid UTF-8");
    EXPECT(shmcast_subscriber_contract(NULL, &c), SHMCAST_EINVAL);
    EXPECT(shmcast_subscriber_contract(plain, NULL), SHMCAST_EINVAL);

    shmcast_subscriber_destroy(typed);
    shmcast_subscriber_destroy(plain);
    shmcast_publisher_destroy(pub);
}

static void declared_schema_and_nothing(const char *prefix) {
    shmcast_publisher_options popts;
    shmcast_subscriber_options sopts;
    shmcast_publisher *pub = NULL;
    shmcast_subscriber *sub = NULL;
    shmcast_contract c;
    const char *t = topic(prefix, "schema");

    shmcast_publisher_options_init(&popts);
    popts.schema_name = "proto:app.Tick";
    popts.schema_version = 2;
    CHECK_OK(shmcast_publisher_create(t, &popts, &pub));
    shmcast_subscriber_options_init(&sopts);
    sopts.expect_schema_name = "proto:app.Tick";
    sopts.expect_schema_version = 2;
    CHECK_OK(shmcast_subscriber_connect(t, &sopts, &sub));
    CHECK_OK(shmcast_subscriber_contract(sub, &c));
    EXPECT_TRUE(c.kind == SHMCAST_CONTRACT_SCHEMA && c.schema_version == 2);
    EXPECT_TRUE(strcmp(c.name, "proto:app.Tick") == 0 && c.type_size == 0);
    shmcast_subscriber_destroy(sub);
    sopts.expect_schema_version = 3;
    refused(t, &sopts, SHMCAST_ECONTRACT);
    EXPECT_MESSAGE("the topic carries schema \"proto:app.Tick\" version 2");
    shmcast_publisher_destroy(pub);

    /* Nothing declared: bytes. */
    CHECK_OK(shmcast_publisher_create(t, NULL, &pub));
    CHECK_OK(shmcast_subscriber_connect(t, NULL, &sub));
    CHECK_OK(shmcast_subscriber_contract(sub, &c));
    EXPECT_TRUE(c.kind == SHMCAST_CONTRACT_BYTES && strcmp(c.name, "") == 0);
    shmcast_subscriber_destroy(sub);
    sopts = expect_pod("Tick", 16, 8);
    refused(t, &sopts, SHMCAST_ECONTRACT);
    EXPECT_MESSAGE("the topic carries bytes with no declared type or schema");
    shmcast_publisher_destroy(pub);
}

static void bad_declarations(const char *prefix) {
    shmcast_publisher_options popts;
    shmcast_publisher *pub = NULL;
    const char *t = topic(prefix, "bad");
    char long_name[130];

    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    shmcast_publisher_options_init(&popts);
    popts.type_name = "";
    popts.type_size = 8;
    popts.type_align = 8;
    EXPECT(shmcast_publisher_create(t, &popts, &pub), SHMCAST_EINVAL);
    EXPECT_MESSAGE("declaring the topic contract: contract name \"\" (0 bytes) is empty");
    EXPECT_TRUE(pub == NULL);
    popts.type_name = long_name;
    EXPECT(shmcast_publisher_create(t, &popts, &pub), SHMCAST_EINVAL);
    EXPECT_MESSAGE("(129 bytes) is too long");
    popts.type_name = "Tick";
    popts.type_align = 0;
    EXPECT(shmcast_publisher_create(t, &popts, &pub), SHMCAST_EINVAL);
    EXPECT_MESSAGE("pod alignment 0 is not a power of two up to 16");
    popts.type_align = 8;
    popts.type_size = 1u << 20;
    EXPECT(shmcast_publisher_create(t, &popts, &pub), SHMCAST_EINVAL);
    EXPECT_MESSAGE("pod of 1048576 bytes is larger than the maximum message of 262144 bytes");
    popts.type_size = 8;
    popts.schema_version = 1;
    EXPECT(shmcast_publisher_create(t, &popts, &pub), SHMCAST_EINVAL);
    EXPECT_MESSAGE("schema_version is set but schema_name is NULL");
    EXPECT_TRUE(pub == NULL);
    EXPECT_TRUE(strcmp(shmcast_strerror(SHMCAST_ECONTRACT), "topic contract mismatch") == 0);
}

/* The Rust publisher declared `pod::<Tick>()` and sends one Tick once we are connected. */
static void rust_publisher(const char *t) {
    shmcast_subscriber_options sopts = expect_pod("app::Tick", sizeof(Tick), TICK_ALIGN);
    shmcast_subscriber *sub = NULL;
    shmcast_sample sample;
    shmcast_contract c;

    sopts.connect_timeout_ms = -1;
    refused(t, &sopts, SHMCAST_ECONTRACT);
    EXPECT_MESSAGE("the topic carries pod \"Tick\" (16 bytes, align 8)");
    sopts.expect_type_name = "Tick";
    CHECK_OK(shmcast_subscriber_connect(t, &sopts, &sub));
    CHECK_OK(shmcast_subscriber_contract(sub, &c));
    EXPECT_TRUE(c.kind == SHMCAST_CONTRACT_POD && strcmp(c.name, "Tick") == 0);
    printf("connected\n");
    fflush(stdout);
    CHECK_OK(shmcast_subscriber_recv(sub, -1, &sample));
    EXPECT_TRUE(sample.len == sizeof(Tick));
    printf("tick seq=%" PRIu64 " price_x10=%d\n", ((const Tick *)sample.data)->seq,
           (int)(((const Tick *)sample.data)->price * 10));
    CHECK_OK(shmcast_sample_release(&sample));
    shmcast_subscriber_destroy(sub);
}

/* A topic republished from elsewhere: its subscribers learn it, and losses upstream count. */
static void imported_topic(const char *prefix) {
    shmcast_publisher_options popts;
    shmcast_publisher *pub = NULL;
    shmcast_subscriber *sub = NULL;
    void *buf = NULL;
    const char *t = topic(prefix, "imported");

    shmcast_publisher_options_init(&popts);
    EXPECT_TRUE(popts.imported == 0);
    popts.imported = 2;
    EXPECT(shmcast_publisher_create(t, &popts, &pub), SHMCAST_EINVAL);
    EXPECT_MESSAGE("imported must be 0 or 1, not 2");
    popts.imported = 1;
    CHECK_OK(shmcast_publisher_create(t, &popts, &pub));
    CHECK_OK(shmcast_subscriber_connect(t, NULL, &sub));
    EXPECT(shmcast_subscriber_imported(sub), 1);
    CHECK_OK(shmcast_publisher_note_upstream_lost(pub, 3));
    CHECK_OK(shmcast_publisher_loan(pub, 8, 0, &buf));
    EXPECT(shmcast_publisher_note_upstream_lost(pub, 1), SHMCAST_EBUSY);
    CHECK_OK(shmcast_publisher_abandon(pub));
    EXPECT(shmcast_publisher_note_upstream_lost(NULL, 1), SHMCAST_EINVAL);
    EXPECT(shmcast_subscriber_imported(NULL), SHMCAST_EINVAL);
    shmcast_subscriber_destroy(sub);
    shmcast_publisher_destroy(pub);

    /* A topic of this host's own. */
    CHECK_OK(shmcast_publisher_create(t, NULL, &pub));
    CHECK_OK(shmcast_subscriber_connect(t, NULL, &sub));
    EXPECT(shmcast_subscriber_imported(sub), 0);
    shmcast_subscriber_destroy(sub);
    shmcast_publisher_destroy(pub);
}

/* An imported topic that lost 7 messages upstream, kept until one subscriber has come (the
 * Rust side inspects it, then subscribes). */
static void imported_for_inspection(const char *t) {
    shmcast_publisher_options popts;
    shmcast_publisher *pub = NULL;

    shmcast_publisher_options_init(&popts);
    popts.imported = 1;
    CHECK_OK(shmcast_publisher_create(t, &popts, &pub));
    CHECK_OK(shmcast_publisher_note_upstream_lost(pub, 7));
    printf("imported\n");
    fflush(stdout);
    CHECK_OK(shmcast_publisher_wait_for_subscribers(pub, 1, 30000));
    shmcast_publisher_destroy(pub);
}

int main(int argc, char **argv) {
    int fds_at_start = open_fds();
    if (argc != 4) {
        FAIL("usage: contract TOPIC_PREFIX RUST_TOPIC IMPORTED_TOPIC");
    }
    declared_pod(argv[1]);
    declared_schema_and_nothing(argv[1]);
    bad_declarations(argv[1]);
    rust_publisher(argv[2]);
    imported_topic(argv[1]);
    imported_for_inspection(argv[3]);
    EXPECT_NO_FD_LEAK(fds_at_start);
    printf("contract: %d checks passed\n", checks);
    return 0;
}
