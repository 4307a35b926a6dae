/* VLOG_CHECK, VLOG_DCHECK and VLOG_FATAL. `checks holds` runs checks that
 * hold (and, built with -DNDEBUG, a VLOG_DCHECK that does not) and exits 0.
 * `checks fails` and `checks fatal` are a daemon whose three threads log
 * without pause: once they have, a check fails (or VLOG_FATAL is called).
 * `checks two` has eight threads fail checks at once; `checks fmtn` fails
 * a check whose format has a %n. The driver runs them with
 * VLOG_DUMP=file:PATH and VLOG_OUTPUTS, and reads the dump's last record,
 * the outputs' lines and the exit status. */
#include "check.h"

#include <pthread.h>

VLOG_INIT("test.checks");

static volatile int go_on = 1;

static void *chatter(void *arg)
{
    long n = 0;

    while (go_on) {
        VLOG_INFO("thread %ld, record %ld", (long)(intptr_t)arg, n++);
        VLOG_DEBUG("thread %ld, debug %ld", (long)(intptr_t)arg, n);
    }
    return NULL;
}

static pthread_barrier_t at_once;

static void *fail_at_once(void *arg)
{
    long id = (long)(intptr_t)arg;

    pthread_barrier_wait(&at_once);
    VLOG_CHECK(id < 0, "thread %ld fails", id);
    return NULL;
}

static int evaluated;

static int counted(int v)
{
    evaluated++;
    return v;
}

int main(int argc, char **argv)
{
    pthread_t threads[3];
    vlog_stats st;

    CHECK(argc == 2);
    if (strcmp(argv[1], "holds") == 0) {
        for (int i = 0; i < 1000; i++) {
            VLOG_CHECK(i >= 0, "never %d", counted(i));
            VLOG_DCHECK(i < 1000, "never %d", counted(i));
        }
        CHECK(evaluated == 0);
#ifdef NDEBUG
        VLOG_DCHECK(counted(0), "compiled out %d", counted(1));
        CHECK(evaluated == 0);
#endif
        CHECK(vlog_get_stats(&st) == 0);
        CHECK(st.records == 0);
        printf("held\n");
        return 0;
    }
    if (strcmp(argv[1], "two") == 0) {
        pthread_t failing[8];

        CHECK(pthread_barrier_init(&at_once, NULL, 8) == 0);
        for (long t = 0; t < 8; t++)
            CHECK(pthread_create(&failing[t], NULL, fail_at_once, (void *)(intptr_t)t) == 0);
        for (long t = 0; t < 8; t++)
            pthread_join(failing[t], NULL);
        return 2;
    }
    if (strcmp(argv[1], "fmtn") == 0) {
        int n = 0;

        VLOG_CHECK(n == 1, "n %d%n", n, &n);
        return 2;
    }
    for (long t = 0; t < 3; t++)
        CHECK(pthread_create(&threads[t], NULL, chatter, (void *)(intptr_t)t) == 0);
    do {
        CHECK(vlog_get_stats(&st) == 0);
    } while (st.records < 3000);
    if (strcmp(argv[1], "fails") == 0) {
        int monitor = -1;

        VLOG_CHECK(monitor >= 0 && argc % 2 == 0, "no monitor for %s (%d%%)", "guest1", 50);
    } else if (strcmp(argv[1], "fatal") == 0) {
        VLOG_FATAL("giving up on %s", "guest1");
    }
    go_on = 0;
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
