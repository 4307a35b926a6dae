/* Fields a thread carries on every record it makes.
 *
 *   thread_fields threads JSON   two threads with different request ids log
 *                                turns about; every record in the ring (the
 *                                flight recorder's too) and the JSON file
 *                                carries its own thread's id and no other
 *   thread_fields filtered       a filtered call reads and copies nothing:
 *                                no allocation, no record
 *   thread_fields calls          bad keys and traceparent headers refused
 *                                with a reason, nothing changed; NULL value
 *                                removes; fork keeps them; a thread's go
 *                                with it
 *   thread_fields journald       the driver reads them back with journalctl
 */
#include "check.h"
/* AddressSanitizer owns the allocator: the driver runs `filtered` without
 * the tools. */
#if !defined(__SANITIZE_ADDRESS__)
#include "count_alloc.h"
#endif

#include <pthread.h>
#include <sys/wait.h>

VLOG_INIT("test.thread_fields");

static int rounds = 200;
#define TRACEPARENT "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cond = PTHREAD_COND_INITIALIZER;
static int turn;

struct who {
    int me;
    const char *request;
};

/* Two threads, turns about: A logs, then B, then A... each with its own
 * REQUEST_ID (and A with a trace context too). */
static void *worker(void *arg)
{
    struct who *who = arg;

    CHECK(vlog_thread_field_set("REQUEST_ID", who->request) == 0);
    CHECK(vlog_thread_field_set_int("WORKER", who->me) == 0);
    if (who->me == 0)
        CHECK(vlog_thread_traceparent(TRACEPARENT) == 0);
    for (int i = 0; i < rounds; i++) {
        pthread_mutex_lock(&turn_lock);
        while (turn % 2 != who->me)
            pthread_cond_wait(&turn_cond, &turn_lock);
        /* Printed by the JSON output, and kept in the ring alone. */
        VLOG_INFO("worker %d says %d", who->me, i);
        VLOG_DEBUG("worker %d notes %d", who->me, i);
        turn++;
        pthread_cond_broadcast(&turn_cond);
        pthread_mutex_unlock(&turn_lock);
    }
    return NULL;
}

/* Every line holding `mark` holds `own` and not `other`. Returns how many. */
static int lines_carry(const char *text, const char *mark, const char *own, const char *other)
{
    const char *line = text;
    int n = 0;

    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char *copy = strndup(line, len);
        CHECK(copy != NULL);
        if (strstr(copy, mark)) {
            n++;
            if (!strstr(copy, own) || strstr(copy, other)) {
                fprintf(stderr, "a line of '%s' without '%s' (or with '%s'):\n%s\n", mark, own,
                        other, copy);
                exit(1);
            }
        }
        free(copy);
        line += len + (end ? 1 : 0);
    }
    return n;
}

static void threads(const char *json)
{
    char outputs[600];
    pthread_t a, b;
    struct who wa = {0, "req-A"}, wb = {1, "req-B"};

    snprintf(outputs, sizeof outputs, "2:json:%s", json);
    CHECK(vlog_set_outputs(outputs) == 0);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    CHECK(vlog_set_buffer_size(4 << 20) == 0);
    CHECK(pthread_create(&a, NULL, worker, &wa) == 0);
    CHECK(pthread_create(&b, NULL, worker, &wb) == 0);
    CHECK(pthread_join(a, NULL) == 0 && pthread_join(b, NULL) == 0);
    CHECK(vlog_flush() == 0);

    char *ring = check_dump(NULL);
    CHECK(lines_carry(ring, "worker 0 says", "REQUEST_ID=req-A", "req-B") == rounds);
    CHECK(lines_carry(ring, "worker 1 says", "REQUEST_ID=req-B", "req-A") == rounds);
    /* The flight recorder's records (no output prints debug) too. */
    CHECK(lines_carry(ring, "worker 0 notes", "REQUEST_ID=req-A", "req-B") == rounds);
    CHECK(lines_carry(ring, "worker 1 notes", "REQUEST_ID=req-B", "req-A") == rounds);
    CHECK(lines_carry(ring, "worker 0 notes", "TRACE_ID=4bf92f3577b34da6a3ce929d0e0e4736", "x-no") ==
          rounds);
    CHECK(lines_carry(ring, "worker 1 notes", "WORKER=1", "TRACE_ID") == rounds);
    /* The main thread set none. */
    VLOG_INFO("main says");
    free(ring);
    ring = check_dump(NULL);
    CHECK(lines_carry(ring, "main says", "main says", "REQUEST_ID") == 1);
    free(ring);

    char *text = check_slurp_path(json);
    CHECK(lines_carry(text, "\"worker 0 says", "\"REQUEST_ID\":\"req-A\"", "req-B") == rounds);
    CHECK(lines_carry(text, "\"worker 1 says", "\"REQUEST_ID\":\"req-B\"", "req-A") == rounds);
    /* Trace context at the top of the object, under OpenTelemetry's names. */
    CHECK(lines_carry(text, "\"worker 0 says",
                      ",\"trace_id\":\"4bf92f3577b34da6a3ce929d0e0e4736\",\"span_id\":"
                      "\"00f067aa0ba902b7\",\"trace_flags\":\"01\",\"fields\":{",
                      "TRACE_ID") == rounds);
    CHECK(lines_carry(text, "\"worker 1 says", "\"WORKER\":1", "trace_id") == rounds);
    free(text);
}

static void filtered(void)
{
    vlog_stats before, after;
    long allocs;

    CHECK(vlog_set_level(VLOG_PRIO_ERROR) == 0);
    CHECK(vlog_thread_field_set("REQUEST_ID", "req-1") == 0);
    CHECK(vlog_thread_traceparent(TRACEPARENT) == 0);
    VLOG_DEBUG("warm %d", 1);
    CHECK(vlog_get_stats(&before) == 0);
#if !defined(__SANITIZE_ADDRESS__)
    allocs = count_alloc_calls;
#else
    allocs = 0;
#endif
    for (int i = 0; i < 1000; i++) {
        VLOG_DEBUG("filtered %d", i);
        vlog(NULL, VLOG_PRIO_INFO, __FILE__, __LINE__, __func__, "filtered %d", i);
    }
#if !defined(__SANITIZE_ADDRESS__)
    CHECK(count_alloc_calls == allocs);
#endif
    (void)allocs;
    CHECK(vlog_get_stats(&after) == 0);
    CHECK(after.records == before.records);
}

static void calls(void)
{
    char *ring;
    pid_t child;
    int status;

    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    /* Refusals say why and change nothing. */
    CHECK(vlog_thread_field_set("KEPT", "yes") == 0);
    CHECK(vlog_thread_field_set(NULL, "x") == -1);
    CHECK_ERROR("not a valid field name");
    CHECK(vlog_thread_field_set("lower-case", "x") == -1);
    CHECK_ERROR("not a valid field name");
    CHECK(vlog_thread_field_set("trailing.", "x") == -1);
    CHECK(vlog_thread_field_set("_X", "x") == -1);
    CHECK(vlog_thread_field_set_int("MESSAGE", 1) == -1);
    CHECK_ERROR("journald or vlog gives every entry");
    /* OpenTelemetry's form of a reserved name is reserved too. */
    CHECK(vlog_thread_field_set("code.file", "x") == -1);
    CHECK_ERROR("journald or vlog gives every entry");
    CHECK(vlog_thread_field_set("VLOG_SOURCE", "x") == -1);
    for (int i = 0; i < 7; i++) {
        char name[16];
        snprintf(name, sizeof name, "F%d", i);
        CHECK(vlog_thread_field_set_int(name, i) == 0);
    }
    CHECK(vlog_thread_field_set_int("NINTH", 9) == -1);
    CHECK_ERROR("at most 8 fields");
    for (int i = 0; i < 7; i++) {
        char name[16];
        snprintf(name, sizeof name, "F%d", i);
        CHECK(vlog_thread_field_set(name, NULL) == 0);
    }
    char big[600];
    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(vlog_thread_field_set("BIG", big) == -1);
    CHECK_ERROR("512 bytes");
    static const char *bad[] = {
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00 4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7 01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
        "xx-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (vlog_thread_traceparent(bad[i]) != -1) {
            fprintf(stderr, "accepted: '%s'\n", bad[i]);
            exit(1);
        }
        CHECK_ERROR("not a W3C traceparent header");
    }
    CHECK(vlog_thread_traceparent(NULL) == -1);
    VLOG_INFO("only kept");
    ring = check_dump(NULL);
    CHECK(lines_carry(ring, "only kept", "[KEPT=yes]", "TRACE_ID") == 1);
    free(ring);

    /* A forked child keeps the forking thread's. */
    CHECK(vlog_thread_field_set("REQUEST_ID", "in-parent") == 0);
    child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        VLOG_DEBUG("from the child");
        ring = check_dump(NULL);
        CHECK(lines_carry(ring, "from the child", "REQUEST_ID=in-parent", "x-no") == 1);
        free(ring);
        _exit(0);
    }
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    puts("ok");
}

static void *sets_and_logs(void *arg)
{
    (void)arg;
    CHECK(vlog_thread_field_set("GONE_WITH", "its thread") == 0);
    VLOG_DEBUG("a thread with a field");
    return NULL;
}

static void *logs_only(void *arg)
{
    (void)arg;
    VLOG_DEBUG("a thread without");
    return NULL;
}

static void thread_exit(void)
{
    pthread_t t;
    char *ring;

    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    CHECK(pthread_create(&t, NULL, sets_and_logs, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(pthread_create(&t, NULL, logs_only, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    ring = check_dump(NULL);
    CHECK(lines_carry(ring, "a thread with a field", "GONE_WITH=\"its thread\"", "x-no") == 1);
    CHECK(lines_carry(ring, "a thread without", "a thread without", "GONE_WITH") == 1);
    free(ring);
}

/* The two workers, a few rounds, to journald: the driver reads them back. */
static void journald(void)
{
    pthread_t a, b;
    struct who wa = {0, "req-A"}, wb = {1, "req-B"};

    rounds = 5;
    CHECK(vlog_set_outputs("2:journald") == 0);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    CHECK(pthread_create(&a, NULL, worker, &wa) == 0);
    CHECK(pthread_create(&b, NULL, worker, &wb) == 0);
    CHECK(pthread_join(a, NULL) == 0 && pthread_join(b, NULL) == 0);
    CHECK(vlog_flush() == 0);
    printf("%d\n", (int)getpid());
}

int main(int argc, char **argv)
{
    CHECK(argc >= 2);
    if (strcmp(argv[1], "threads") == 0 && argc == 3)
        threads(argv[2]);
    else if (strcmp(argv[1], "filtered") == 0)
        filtered();
    else if (strcmp(argv[1], "calls") == 0) {
        calls();
        thread_exit();
    } else if (strcmp(argv[1], "journald") == 0)
        journald();
    else
        CHECK(!"a mode");
    return 0;
}
