/* Once running, recording a message allocates nothing: not when its
 * arguments are captured (any length up to VLOG_MESSAGE_MAX), not in the Rust
 * core, not for the ring or a file output (which renders the text at once),
 * not for structured fields, not for a child's line through a relay, not
 * for a syslog collector or a fluent receiver over TCP (a thread of the
 * program's drains both). The program counts every call into the allocator
 * by interposing glibc's entry points. */
#include "check.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#include "count_alloc.h"

static int listener;
static long network_records;

/* Accepts the two collectors' connections and reads everything. */
static void *drain(void *arg)
{
    struct pollfd fds[3] = {{listener, POLLIN, 0}, {-1, POLLIN, 0}, {-1, POLLIN, 0}};
    static char buf[1 << 16];

    (void)arg;
    for (;;) {
        if (poll(fds, 3, -1) < 0)
            continue;
        if (fds[0].revents & POLLIN) {
            int c = accept(listener, NULL, NULL);
            if (c >= 0)
                fds[fds[1].fd < 0 ? 1 : 2].fd = c;
        }
        for (int i = 1; i < 3; i++)
            if (fds[i].fd >= 0 && fds[i].revents && read(fds[i].fd, buf, sizeof buf) <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
            }
    }
    return NULL;
}

/* A listening socket on 127.0.0.1 drained by a thread; returns its port. */
static int start_drain(void)
{
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    pthread_t t;

    listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(listener >= 0);
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(listener, (struct sockaddr *)&addr, sizeof addr) == 0);
    CHECK(listen(listener, 4) == 0);
    CHECK(getsockname(listener, (struct sockaddr *)&addr, &len) == 0);
    CHECK(pthread_create(&t, NULL, drain, NULL) == 0);
    CHECK(pthread_detach(t) == 0);
    return ntohs(addr.sin_port);
}

VLOG_INIT("test.noalloc");

int main(void)
{
    static char text[900];
    long before;
    vlog_stats stats;

    static const char hclog[] = "{\"@level\":\"debug\",\"@message\":\"hello\",\"extra\":\"hi\","
                                "\"numbers\":[1,2,3],\"n\":7}\n";
    vlog_relay *relay;

    memset(text, 'x', sizeof text - 1);
    CHECK(vlog_set_outputs("1:file:/dev/null 4:stderr") == 0);
    CHECK(vlog_set_filters("1:noalloc 1:child.noalloc") == 0);
    VLOG_DEBUG("warm-up %d", 0);
    relay = vlog_relay_new("child.noalloc", VLOG_PRIO_INFO);
    CHECK(relay != NULL);

    before = count_alloc_calls;
    for (int i = 0; i < 10000; i++) {
        VLOG_DEBUG("Logging two integers: %d %d", i, -i);
        VLOG_INFO("a string: %s", text + i % 800);
        VLOG_WARN("a double: %f", i * 0.5);
        /* Fields, and a child's line relayed with its fields. */
        VLOG_FIELDS(VLOG_PRIO_INFO, (VLOG_FIELD_STR("VM", "guest1"), VLOG_FIELD_INT("N", i)),
                    "with fields %d", i);
        CHECK(vlog_relay_feed(relay, hclog, sizeof hclog - 1) == 0);
    }
    CHECK(count_alloc_calls == before);
    vlog_relay_close(relay);

    /* A syslog collector and a fluent receiver over TCP: once connected,
     * nothing per message either (batches, acknowledgements and the ticker
     * included). */
    {
        char outputs[200];
        int port = start_drain();

        snprintf(outputs, sizeof outputs,
                 "1:syslog:noalloc@tcp://127.0.0.1:%d 1:fluent:noalloc@tcp://127.0.0.1:%d?size=4K",
                 port, port);
        int clean = 0;
        struct timespec pause = {0, 50 * 1000 * 1000};

        CHECK(vlog_set_outputs(outputs) == 0);
        for (int i = 0; i < 100; i++)
            VLOG_INFO("warm-up %d", i);
        CHECK(vlog_flush() == 0);
        /* A round whose collector fell behind (a loaded machine: the drain
         * thread not scheduled) reports the failure once, which allocates;
         * such a round says nothing and is run again. A message that
         * allocated would in every round. */
        for (int round = 0; round < 5 && !clean; round++) {
            long lost;
            CHECK(vlog_get_stats(&stats) == 0);
            lost = (long)stats.output_lines_lost;
            before = count_alloc_calls;
            for (int i = 0; i < 2000; i++) {
                VLOG_INFO("a string: %s", text + i % 800);
                VLOG_FIELDS(VLOG_PRIO_INFO,
                            (VLOG_FIELD_STR("VM", "guest1"), VLOG_FIELD_INT("N", i)),
                            "with fields %d", i);
            }
            CHECK(vlog_flush() == 0);
            CHECK(vlog_get_stats(&stats) == 0);
            clean = (long)stats.output_lines_lost == lost;
            if (clean)
                CHECK(count_alloc_calls == before);
            nanosleep(&pause, NULL);
        }
        CHECK(clean);
        network_records = (long)stats.records;
    }

    /* In the flight recorder (no output prints debug messages), a long message
     * is recorded as its format and arguments: still nothing. */
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    before = count_alloc_calls;
    VLOG_DEBUG("%s%s%s%s", text, text, text, text);
    CHECK(count_alloc_calls == before);

    /* An error printed with its context (the debug records before it, read
     * back and rendered), and one whose site had a context a moment ago
     * (a note of what it left out): nothing either. */
    CHECK(vlog_set_context("20/0") == 0);
    VLOG_ERROR("warm-up error");
    before = count_alloc_calls;
    for (int i = 0; i < 100; i++) {
        for (int j = 0; j < 30; j++)
            VLOG_DEBUG("context %d of error %d: %s", j, i, text + j);
        VLOG_ERROR("error %d", i);
    }
    CHECK(count_alloc_calls == before);
    CHECK(vlog_set_context("20/60") == 0);
    VLOG_ERROR("a site with a context");
    before = count_alloc_calls;
    for (int i = 0; i < 100; i++) {
        VLOG_DEBUG("left out %d", i);
        VLOG_ERROR("a site with a context");
    }
    CHECK(count_alloc_calls == before);
    CHECK(vlog_get_stats(&stats) == 0);
    CHECK(stats.context_records >= 100 * 20 && stats.contexts_suppressed >= 99);
    network_records += 1 + 100 * 31 + 1 + 200;

    /* And the counter does count: a message formatted at the call (long
     * double is) that is longer than the stack buffer takes one heap buffer. */
    VLOG_DEBUG("%1500.1Lf", 1.0L);
    CHECK(count_alloc_calls == before + 1);
    CHECK(vlog_get_stats(&stats) == 0);
    CHECK((long)stats.records == network_records + 2);
    puts("ok");
    return 0;
}
