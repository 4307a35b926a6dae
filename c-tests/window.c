/* A record taken from the window (without the lock) and not yet published:
 * a thread stopped between taking its record's place and moving the tail
 * past it, caught there by a signal whose handler waits until let go:
 *
 *   window MODE (plain or crash)
 *
 * Meanwhile: a record the main thread logs is taken after it and left
 * unpublished (a dump does not show it, and never hangs), a configuration
 * call goes through, a call that needs the lock to append waits 100 ms
 * and is dropped and counted, a forked child logs and dumps at once (the
 * parent's unpublished records are forgotten there, the child's numbered
 * on), and (`window crash`) a crash dump shows the records published and
 * ends. Once let go, the
 * stopped thread publishes its record and the main thread's after it. At
 * the end every call is a record or counted as dropped.
 *
 * The thread is stopped again and again (stop.h) until another thread's
 * record is found unpublished. */
#include "check.h"
#include "stop.h"

#include <stdatomic.h>
#include <sys/wait.h>

VLOG_INIT("test.window");

static atomic_int stop;
static atomic_long written;

static void *taker(void *arg)
{
    long i = 0;

    (void)arg;
    while (!atomic_load(&stop)) {
        VLOG_DEBUG("taker %ld", i);
        atomic_store(&written, ++i);
    }
    return NULL;
}

static atomic_int probe_done;

static void *prober(void *arg)
{
    VLOG_DEBUG("probe %ld", (long)arg);
    atomic_store(&probe_done, 1);
    return NULL;
}

/* Whether a dump shows "probe N". */
static int shown(long n)
{
    char needle[64], *text;
    int found;

    snprintf(needle, sizeof needle, ": probe %ld\n", n);
    text = check_dump(NULL);
    found = strstr(text, needle) != NULL;
    free(text);
    return found;
}

int main(int argc, char **argv)
{
    pthread_t thread, helper;
    vlog_stats start, before, after;
    long calls = 0, attempt, dropped = 0;
    char *text;

    alarm(300);
    CHECK(argc == 2);
    CHECK(vlog_set_buffer_size(64 * 1024) == 0);
    CHECK(vlog_set_outputs("4:stderr") == 0);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    if (strcmp(argv[1], "crash") == 0)
        CHECK(vlog_install_crash_handler() == 0);
    CHECK(vlog_get_stats(&start) == 0);
    stop_install();
    CHECK(pthread_create(&thread, NULL, taker, NULL) == 0);
    while (atomic_load(&written) < 1000)
        nap(100);

    for (attempt = 0; attempt < 20000; attempt++) {
        /* (Before the stop: taking the lock closes the window, and the
         * thread opens it again as it goes on.) */
        CHECK(vlog_get_stats(&before) == 0);
        for (long w = atomic_load(&written); atomic_load(&written) < w + 3;)
            nap(20);
        stop_thread(thread);
        /* Another thread logs (not this one: the stopped thread may hold
         * the lock, and then the call waits for it until let go). */
        atomic_store(&probe_done, 0);
        CHECK(pthread_create(&helper, NULL, prober, (void *)attempt) == 0);
        calls++;
        for (int i = 0; i < 20000 && !atomic_load(&probe_done); i++)
            nap(100);
        if (atomic_load(&probe_done) && !shown(attempt)) {
            CHECK(pthread_join(helper, NULL) == 0);
            CHECK(vlog_get_stats(&after) == 0);
            /* Taken behind the stopped thread's record and left to it to
             * publish, or, the window closed, waited for and dropped. */
            dropped = (long)(after.dropped_in_flight - before.dropped_in_flight);
            printf("caught unpublished after %ld attempts (%ld dropped)\n", attempt + 1, dropped);
            break;
        }
        stop_let_go();
        CHECK(pthread_join(helper, NULL) == 0);
    }
    if (attempt == 20000) {
        fprintf(stderr, "the thread was never caught between taking and publishing\n");
        return 1;
    }
    if (strcmp(argv[1], "crash") == 0) {
        /* The dump shows every published record and ends. */
        VLOG_DEBUG("unpublished at the crash");
        fflush(stdout);
        abort();
    }

    /* A configuration call goes through (it closes the window). */
    CHECK(vlog_set_filters("1:test.window") == 0);
    CHECK(vlog_set_filters("") == 0);
    /* A call that needs the lock to append waits, then is dropped and
     * counted: it never hangs. */
    CHECK(vlog_get_stats(&before) == 0);
    VLOG_DEBUG("waits and is dropped");
    calls++;
    CHECK(vlog_get_stats(&after) == 0);
    CHECK(after.dropped_in_flight == before.dropped_in_flight + 1);
    CHECK(after.records == before.records);

    /* A child logs at once: what its parent's other thread took and had not
     * published is forgotten there, its own records are numbered on. */
    {
        pid_t pid = fork();
        int status;
        CHECK(pid >= 0);
        if (pid == 0) {
            long n;
            CHECK(vlog_get_stats(&before) == 0);
            for (n = 0; n < 3000; n++)
                VLOG_DEBUG("child %ld", n);
            CHECK(vlog_get_stats(&after) == 0);
            CHECK(after.dropped_in_flight == before.dropped_in_flight);
            CHECK((long)(after.records - before.records) == n);
            text = check_dump(NULL);
            CHECK_HAS(text, ": child 2999\n");
            CHECK(strstr(text, "never committed") == NULL);
            free(text);
            _exit(0);
        }
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }

    /* Let go: the stopped thread publishes its record, and the probe's
     * behind it (the thread stops logging after this call, so the probe
     * stays in the ring). */
    atomic_store(&stop, 1);
    stop_let_go();
    CHECK(pthread_join(thread, NULL) == 0);
    VLOG_DEBUG("after");
    calls++;
    text = check_dump(NULL);
    CHECK_HAS(text, ": after\n");
    CHECK(strstr(text, "never committed") == NULL);
    free(text);
    CHECK(dropped != 0 || shown(attempt));

    CHECK(vlog_get_stats(&after) == 0);
    calls += atomic_load(&written);
    /* Every call is a record, or dropped and counted. */
    if ((long)(after.records - start.records + after.dropped_in_flight - start.dropped_in_flight) !=
        calls) {
        fprintf(stderr, "records %llu + dropped %llu != calls %ld\n",
                (unsigned long long)(after.records - start.records),
                (unsigned long long)(after.dropped_in_flight - start.dropped_in_flight), calls);
        return 1;
    }
    printf("ok\n");
    return 0;
}
