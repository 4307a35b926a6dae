/* Many threads logging at full rate into a small ring while another thread
 * dumps it over and over without a lock:
 *
 *   soak THREADS SECONDS
 *
 * Every dump, taken while the writers run, holds only intact records, and
 * each thread's messages in it are consecutive except where the dump says the
 * writers overwrote what it was reading, or where a message was dropped by
 * design (a writer whose room was still being copied by a preempted thread:
 * `dropped_in_flight`). At the end the accounting is exact: records written
 * = messages logged - dropped_in_flight, records present = written - lost,
 * and each thread's present messages are its newest ones, but for the
 * dropped. Prints
 * "THREADS threads, N messages in S s, M per second, D dumps checked". */
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

VLOG_INIT("test.soak");

#define MAX_THREADS 64

static atomic_int stop;
static long counts[MAX_THREADS];
static int threads;

static void *writer(void *arg)
{
    int t = (int)(intptr_t)arg;
    long n = 0;

    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        VLOG_DEBUG("soak thread %d message %ld", t, n);
        n++;
    }
    counts[t] = n;
    return NULL;
}

/* Messages vlog dropped by design so far (a thread found the room it
 * needed still being copied by a preempted writer): a thread's numbers
 * may skip that many in all, and no more. */
static long dropped_in_flight(void)
{
    vlog_stats st;

    CHECK(vlog_get_stats(&st) == 0);
    return (long)st.dropped_in_flight;
}

/* Checks one dump; returns the records it holds. `last[t]` gets the newest
 * message number of thread t in it (-1 if none). The numbers a thread
 * skips must be explained by the dropped_in_flight counter, read after
 * the dump was taken. */
static long check_text(char *text, long *last)
{
    long records = 0, first_seen[MAX_THREADS], skipped = 0;
    long dropped = dropped_in_flight();
    char *line = text, *end;

    for (int t = 0; t < threads; t++)
        last[t] = first_seen[t] = -1;
    for (; (end = strchr(line, '\n')) != NULL; line = end + 1) {
        const char *msg;
        int t;
        long n;

        *end = '\0';
        if (strstr(line, " bytes of records were overwritten during the dump") != NULL ||
            strstr(line, "never committed (its writer was still writing it") != NULL) {
            /* Lapped, or a record whose writer was preempted in the middle of
             * its copy for longer than a reader waits (a loaded machine):
             * each thread may skip ahead. */
            for (t = 0; t < threads; t++)
                last[t] = -1;
            continue;
        }
        msg = strstr(line, " : soak thread ");
        if (msg == NULL || sscanf(msg, " : soak thread %d message %ld", &t, &n) != 2 ||
            t < 0 || t >= threads) {
            fprintf(stderr, "unexpected line in a dump: %s\n", line);
            exit(1);
        }
        if (last[t] >= 0 && n != last[t] + 1) {
            if (n > last[t] + 1)
                skipped += n - last[t] - 1;
            if (n <= last[t] || skipped > dropped) {
                fprintf(stderr,
                        "thread %d: message %ld follows %ld (%ld skipped in this dump, "
                        "%ld dropped_in_flight)\n",
                        t, n, last[t], skipped, dropped);
                exit(1);
            }
        }
        if (first_seen[t] < 0)
            first_seen[t] = n;
        last[t] = n;
        records++;
    }
    return records;
}

static atomic_long dumps;

static void *dumper(void *arg)
{
    long last[MAX_THREADS];

    (void)arg;
    while (!atomic_load(&stop)) {
        char *text = check_dump(NULL);
        check_text(text, last);
        free(text);
        atomic_fetch_add(&dumps, 1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t tids[MAX_THREADS], dump_thread;
    long total = 0, present, last[MAX_THREADS];
    double seconds;
    vlog_stats st;
    int records;
    char *text;

    CHECK(argc == 3);
    threads = atoi(argv[1]);
    seconds = atof(argv[2]);
    CHECK(threads >= 1 && threads <= MAX_THREADS && seconds > 0);
    CHECK(vlog_set_buffer_size(16 * 1024) == 0);
    CHECK(vlog_set_outputs("4:stderr") == 0);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);

    for (int t = 0; t < threads; t++)
        CHECK(pthread_create(&tids[t], NULL, writer, (void *)(intptr_t)t) == 0);
    CHECK(pthread_create(&dump_thread, NULL, dumper, NULL) == 0);
    {
        struct timespec ts = {(time_t)seconds,
                              (long)((seconds - (double)(time_t)seconds) * 1e9)};
        nanosleep(&ts, NULL);
    }
    /* At least one dump while the writers run, however the threads were
     * scheduled (valgrind runs one at a time). */
    while (atomic_load(&dumps) < 1) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    atomic_store(&stop, 1);
    for (int t = 0; t < threads; t++) {
        CHECK(pthread_join(tids[t], NULL) == 0);
        total += counts[t];
    }
    CHECK(pthread_join(dump_thread, NULL) == 0);

    /* At rest: exact accounting, and every thread's newest messages. */
    text = check_dump(&records);
    present = check_text(text, last);
    free(text);
    CHECK(vlog_get_stats(&st) == 0);
    if ((long)(st.records + st.dropped_in_flight) != total || present != records ||
        (long)(st.records - st.lost) != present) {
        fprintf(stderr,
                "accounting: %ld messages logged, %llu records, %llu dropped_in_flight, "
                "%llu lost, %ld present in the dump text, %d records it counted\n",
                total, (unsigned long long)st.records, (unsigned long long)st.dropped_in_flight,
                (unsigned long long)st.lost, present, records);
        return 1;
    }
    {
        /* Each thread's newest message is there, or was dropped by design. */
        long tail = 0;

        for (int t = 0; t < threads; t++)
            if (last[t] >= 0)
                tail += counts[t] - 1 - last[t];
        if (tail > (long)st.dropped_in_flight) {
            for (int t = 0; t < threads; t++)
                fprintf(stderr, "thread %d: logged %ld, newest in the ring %ld\n", t,
                        counts[t], last[t]);
            fprintf(stderr, "%ld newest messages missing, %llu dropped_in_flight\n", tail,
                    (unsigned long long)st.dropped_in_flight);
            return 1;
        }
    }
    printf("%d threads, %ld messages in %.1f s, %.0f per second, %ld dumps checked, "
           "%ld records at the end, %llu dropped_in_flight\n",
           threads, total, seconds, (double)total / seconds, atomic_load(&dumps), present,
           (unsigned long long)st.dropped_in_flight);
    return 0;
}
