/* Every entry point works, or fails with -1, while its thread exits: from a
 * pthread_key destructor, which glibc runs after the thread-locals with
 * destructors (Rust's among them) are gone. Before, vlog_last_error()
 * panicked on the destroyed storage and vlog stepped down for the whole
 * process (outputs off for good), and a failing vlog_set_level panicked
 * outside its guard. Nothing a caller does may make vlog step down. */
#include "check.h"

#include <pthread.h>

VLOG_INIT("test.exit");

static pthread_key_t key;
static char control_path[128];
static volatile int destructor_ran, failed_as_it_should, error_text_ok;

static void at_key_destruction(void *value)
{
    vlog_stats stats;

    (void)value;
    failed_as_it_should = vlog_set_level(99) == -1;
    error_text_ok = strstr(vlog_last_error(), "invalid level 99") != NULL;
    CHECK(vlog_thread_field_set("REQUEST_ID", "exiting") == 0);
    CHECK(vlog_thread_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == 0);
    VLOG_ERROR("from a key destructor");
    VLOG_DEBUG("deferred from a key destructor %d", 1);
    CHECK(vlog_thread_field_set_int("REQUEST_ID", 7) == 0);
    CHECK(vlog_thread_fields_clear() == 0);
    CHECK(vlog_get_stats(&stats) == 0);
    CHECK(vlog_set_filters("1:test.exit") == 0);
    CHECK(vlog_flush() == 0);
    /* Served by this thread (a thread started from here would leave std's
     * record of the spawn, made after this thread's were freed). */
    CHECK(vlog_control_open(control_path) > 2);
    CHECK(vlog_control_handle() > 2);
    CHECK(vlog_control_stop() == 0);
    destructor_ran = 1;
}

static void *worker(void *arg)
{
    (void)arg;
    /* Thread-locals of every kind in use before the thread ends. */
    VLOG_ERROR("worker starts");
    VLOG_DEBUG("worker deferred %d", 2);
    CHECK(vlog_set_level(99) == -1);
    CHECK(vlog_last_error()[0] != '\0');
    CHECK(pthread_setspecific(key, (void *)1) == 0);
    return NULL;
}

/* A thread whose first vlog call is made from its key destructor. */
static void *late_worker(void *arg)
{
    (void)arg;
    CHECK(pthread_setspecific(key, (void *)1) == 0);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t thread;
    char *text;

    char control_dir[64] = "/tmp/vlog-exit-XXXXXX";

    CHECK(argc == 2);
    CHECK(mkdtemp(control_dir) != NULL);
    snprintf(control_path, sizeof control_path, "%s/ctl.sock", control_dir);
    {
        char spec[300];
        snprintf(spec, sizeof spec, "3:file:%s", argv[1]);
        CHECK(vlog_set_outputs(spec) == 0);
    }
    CHECK(vlog_set_filters("1:test.exit") == 0);
    CHECK(vlog_install_crash_handler() == 0);
    CHECK(pthread_key_create(&key, at_key_destruction) == 0);

    for (int round = 0; round < 2; round++) {
        destructor_ran = failed_as_it_should = error_text_ok = 0;
        CHECK(pthread_create(&thread, NULL, round ? late_worker : worker, NULL) == 0);
        CHECK(pthread_join(thread, NULL) == 0);
        CHECK(destructor_ran);
        CHECK(failed_as_it_should);
        CHECK(error_text_ok);
    }

    /* vlog did not step down: outputs still print, and can be set. */
    VLOG_ERROR("main after the threads");
    CHECK(vlog_set_filters("1:test.exit") == 0);
    text = check_slurp_path(argv[1]);
    CHECK(strstr(text, "internal error") == NULL);
    CHECK(check_count(text, ": from a key destructor") == 2);
    CHECK(strstr(text, ": main after the threads") != NULL);
    free(text);
    CHECK(rmdir(control_dir) == 0);
    puts("ok");
    return 0;
}
