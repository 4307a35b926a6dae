/* No vlog entry point is a cancellation point: a thread cancelled while it
 * logs (write(2) to an output, open(2) for a new output, fdatasync) finishes
 * the vlog call and is cancelled at its next cancellation point, with
 * vlog's lock released; a thread with asynchronous cancellation is never
 * cancelled inside vlog either. Before, the forced unwind reached vlog's
 * Rust frames and the process aborted ("exception not rethrown"), or the
 * lock stayed held for good. */
#include "check.h"

#include <pthread.h>

VLOG_INIT("test.cancel");

static pthread_barrier_t ready, go;
static char log_path[256];
static char control_dir[64], control_path[128];
static volatile int calls_done;
static vlog_relay *relay;

/* Cancelled while it waits, then logs: the pending cancel must wait for the
 * end of each vlog call. */
static void *deferred(void *arg)
{
    char spec[300];

    (void)arg;
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&go);
    VLOG_ERROR("printed with a cancel pending");
    calls_done++;
    snprintf(spec, sizeof spec, "1:file:%s", log_path);
    CHECK(vlog_set_outputs(spec) == 0);
    calls_done++;
    CHECK(vlog_flush() == 0);
    calls_done++;
    /* The control socket: bind, connect (to a stale socket), close. */
    CHECK(vlog_control_start(control_path) == 0);
    CHECK(vlog_control_handle() > 2);
    CHECK(vlog_control_stop() == 0);
    calls_done++;
    VLOG_DEBUG("recorded with a cancel pending %d", 3);
    calls_done++;
    {
        static const char line[] = "[ERROR] relayed with a cancel pending\n";
        CHECK(vlog_relay_feed(relay, line, sizeof line - 1) == 0);
    }
    calls_done++;
    pthread_testcancel();
    return NULL; /* not reached */
}

/* Not instrumented by AddressSanitizer: an asynchronous cancel discards
 * this frame by a forced unwind, which leaves the poison of the frame's
 * stack redzones (the macros' argument arrays) behind for ASan's own thread
 * teardown to trip over. The library and every other frame stay checked. */
__attribute__((no_sanitize_address)) static void *asynchronous(void *arg)
{
    long i = 0;

    (void)arg;
    CHECK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL) == 0);
    pthread_barrier_wait(&ready);
    for (;;) {
        VLOG_DEBUG("async %ld", i);
        VLOG_ERROR("async printed %ld", i);
        i++;
    }
    return NULL;
}

int main(void)
{
    pthread_t thread;
    void *result;
    vlog_stats before, after;
    char *text, *dump;
    int records;

    alarm(60);
    snprintf(log_path, sizeof log_path, "/tmp/vlog-cancel-%d.log", (int)getpid());
    CHECK(vlog_set_filters("1:test.cancel") == 0);
    {
        char spec[300];
        snprintf(spec, sizeof spec, "3:file:%s", log_path);
        CHECK(vlog_set_outputs(spec) == 0);
    }

    strcpy(control_dir, "/tmp/vlog-cancel-XXXXXX");
    CHECK(mkdtemp(control_dir) != NULL);
    snprintf(control_path, sizeof control_path, "%s/ctl.sock", control_dir);

    relay = vlog_relay_new("test.cancel.relay", VLOG_PRIO_INFO);
    CHECK(relay != NULL);

    /* Deferred cancellation, pending at every call. */
    CHECK(pthread_barrier_init(&ready, NULL, 2) == 0);
    CHECK(pthread_barrier_init(&go, NULL, 2) == 0);
    CHECK(pthread_create(&thread, NULL, deferred, NULL) == 0);
    pthread_barrier_wait(&ready);
    CHECK(pthread_cancel(thread) == 0);
    pthread_barrier_wait(&go);
    CHECK(pthread_join(thread, &result) == 0);
    CHECK(result == PTHREAD_CANCELED);
    CHECK(calls_done == 6);
    text = check_slurp_path(log_path);
    CHECK(strstr(text, "printed with a cancel pending") != NULL);
    CHECK(strstr(text, "relayed with a cancel pending") != NULL);
    vlog_relay_close(relay);
    free(text);
    CHECK(rmdir(control_dir) == 0);

    /* Asynchronous cancellation while the thread logs at full rate. */
    CHECK(pthread_barrier_destroy(&ready) == 0);
    CHECK(pthread_barrier_init(&ready, NULL, 2) == 0);
    CHECK(pthread_create(&thread, NULL, asynchronous, NULL) == 0);
    pthread_barrier_wait(&ready);
    usleep(50 * 1000);
    CHECK(pthread_cancel(thread) == 0);
    CHECK(pthread_join(thread, &result) == 0);
    CHECK(result == PTHREAD_CANCELED);

    /* The lock was released and the ring is whole. */
    CHECK(vlog_get_stats(&before) == 0);
    for (int i = 0; i < 1000; i++)
        VLOG_DEBUG("after %d", i);
    CHECK(vlog_get_stats(&after) == 0);
    CHECK(after.records == before.records + 1000);
    dump = check_dump(&records);
    CHECK(strstr(dump, "damaged") == NULL);
    free(dump);
    unlink(log_path);
    puts("ok");
    return 0;
}
