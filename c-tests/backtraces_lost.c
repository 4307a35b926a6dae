/* Backtraces are built in eight static slots. Nine calls that want one at
 * once: the test holds the loader's lock (a dl_iterate_phdr callback that
 * waits), which every capture takes, so eight callers wait inside their
 * capture, each with a slot. The ninth finds none: its call returns at
 * once (the logger's lock is free: no capture is ever under it), its
 * record kept without frames and counted in backtraces_lost. Once the
 * lock is let go, the eight records come with their frames. */
#include "check.h"

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

VLOG_INIT("test.backtraces_lost");

enum { CALLERS = 9 };

static atomic_int returned;
static int held[2], release[2];

static int hold(struct dl_phdr_info *info, size_t size, void *data)
{
    char c = 'h';

    (void)info;
    (void)size;
    (void)data;
    CHECK(write(held[1], &c, 1) == 1);
    CHECK(read(release[0], &c, 1) == 1);
    return 1;
}

static void *holder(void *arg)
{
    (void)arg;
    dl_iterate_phdr(hold, NULL);
    return NULL;
}

static void *caller(void *arg)
{
    VLOG_BACKTRACE(VLOG_PRIO_WARN, "call %ld", (long)arg);
    atomic_fetch_add(&returned, 1);
    return NULL;
}

int main(void)
{
    struct timespec pause = {0, 10 * 1000 * 1000};
    pthread_t hold_thread, callers[CALLERS];
    vlog_stats before, after;
    char *text, c;
    int i;

    /* vlog started, and every call the callers make bound, before the
     * loader's lock is held. */
    VLOG_BACKTRACE(VLOG_PRIO_WARN, "before");
    CHECK(vlog_get_stats(&before) == 0);
    CHECK(pipe(held) == 0 && pipe(release) == 0);
    CHECK(pthread_create(&hold_thread, NULL, holder, NULL) == 0);
    CHECK(read(held[0], &c, 1) == 1);

    for (i = 0; i < CALLERS; i++)
        CHECK(pthread_create(&callers[i], NULL, caller, (void *)(long)i) == 0);
    for (i = 0; i < 60 * 100 && atomic_load(&returned) == 0; i++)
        nanosleep(&pause, NULL);
    if (atomic_load(&returned) != 1) {
        fprintf(stderr, "%d of %d calls returned while the loader's lock was held\n",
                atomic_load(&returned), CALLERS);
        return 1;
    }
    CHECK(vlog_get_stats(&after) == 0);
    if (after.backtraces_lost != before.backtraces_lost + 1) {
        fprintf(stderr, "backtraces_lost %llu, then %llu\n",
                (unsigned long long)before.backtraces_lost,
                (unsigned long long)after.backtraces_lost);
        return 1;
    }

    CHECK(write(release[1], "r", 1) == 1);
    CHECK(pthread_join(hold_thread, NULL) == 0);
    for (i = 0; i < CALLERS; i++)
        CHECK(pthread_join(callers[i], NULL) == 0);
    CHECK(atomic_load(&returned) == CALLERS);
    CHECK(vlog_get_stats(&after) == 0);
    CHECK(after.backtraces_lost == before.backtraces_lost + 1);

    /* Every record kept; all but the one that found no slot with frames
     * (and the first call's). */
    text = check_dump(NULL);
    if (check_count(text, ": call ") != CALLERS || check_count(text, "\n  #0 0x") != CALLERS) {
        fprintf(stderr, "records and frames:\n%s", text);
        return 1;
    }
    free(text);
    printf("ok\n");
    return 0;
}
