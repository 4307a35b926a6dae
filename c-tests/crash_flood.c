/* A crash while other threads log: three threads log numbered info lines
 * to a file output as fast as they can, the ring (a ring file) wrapping
 * many times over; then the main thread dereferences NULL. Every line a
 * thread's call had returned from before the fault must be in the log
 * file, the crash dump or the ring (`vlog-dump --unprinted`), or counted
 * as lost in the log file itself: the driver checks.
 *
 * The crash dump goes to stderr, a pipe a child of this program reads
 * slowly into DUMP (a reader that keeps up with a dump of 50,000 records
 * hides the race the test is about: how long the dump takes is the window
 * in which the other threads' records wrap the ring).
 *
 *   crash_flood PROGRESS DUMP   (the VLOG_* variables set by the driver)
 *
 * PROGRESS is a file of 6 counters shared with the driver: each thread's
 * lines returned so far, then each thread's count when the main thread
 * faulted. */
#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>

VLOG_INIT("test.flood");

#define THREADS 3

static _Atomic uint64_t *progress;

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;

    for (uint64_t i = 0;; i++) {
        VLOG_INFO("t%d line %llu", t, (unsigned long long)i);
        atomic_store(&progress[t], i + 1);
    }
    return NULL;
}

/* Copies the pipe to `path`, 16 KiB at a time, a pause between. */
static void slow_dump_reader(int from, const char *path)
{
    char buf[16384];
    ssize_t n;
    int to = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    struct timespec pause = {0, 2000000};

    if (to < 0)
        _exit(1);
    while ((n = read(from, buf, sizeof buf)) > 0) {
        if (write(to, buf, (size_t)n) != n)
            _exit(1);
        nanosleep(&pause, NULL);
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    pthread_t threads[THREADS];
    uint64_t total;
    int fd, fds[2];

    CHECK(argc == 3);
    CHECK(pipe(fds) == 0);
    if (fork() == 0) {
        close(fds[1]);
        slow_dump_reader(fds[0], argv[2]);
    }
    close(fds[0]);
    CHECK(dup2(fds[1], 2) == 2);
    close(fds[1]);
    /* (vlog started before main: VLOG_INIT's constructor, the variables
     * set.) */
    CHECK(vlog_adopt_stderr() == 0);
    fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && ftruncate(fd, 4096) == 0);
    progress = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(progress != MAP_FAILED);
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t) == 0);
    /* Until the ring has wrapped several times: a 4 MiB ring holds about
     * 50,000 of these lines. */
    do {
        total = 0;
        for (int t = 0; t < THREADS; t++)
            total += atomic_load(&progress[t]);
    } while (total < 200000);
    for (int t = 0; t < THREADS; t++)
        atomic_store(&progress[THREADS + t], atomic_load(&progress[t]));
    {
        volatile int *null = NULL;
        *null = 1;
    }
    return 0;
}
