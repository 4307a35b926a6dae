/* Outputs that fail never stop logging: a full disk, a FIFO nobody reads or
 * whose reader left, a log file deleted or rotated away, fd 2 closed and
 * reused. The ring and the other outputs keep every message, the failure is
 * reported once (on stderr and as a record from source "vlog"), its end once,
 * and no write blocks for good (a full FIFO is waited on for 5 s, once a
 * failure) or raises SIGPIPE.
 *
 *   output_failures full DIR      DIR: a small file system (the driver mounts one)
 *   output_failures fifo DIR
 *   output_failures rotate DIR
 *   output_failures stderr DIR
 *   output_failures stderr-pipe   (stderr is a pipe whose reader has gone)
 */
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

VLOG_INIT("test.outputs");

static char path[512], other[512];

static long lines_lost(void)
{
    vlog_stats st;
    CHECK(vlog_get_stats(&st) == 0);
    return (long)st.output_lines_lost;
}

/* Logs lines `from` to `to`, and waits until the outputs have had them
 * (vlog's writer thread writes info lines; vlog_flush writes what it has not
 * yet, and says nothing of the outputs' failures: those are in the ring). */
static void log_lines(int from, int to)
{
    for (int i = from; i < to; i++)
        VLOG_INFO("line %d, padded to about a hundred bytes so the file system fills "
                  "up soon ............",
                  i);
    vlog_flush();
}

/* How many times `needle` is in the ring's text. */
static int in_ring(const char *needle)
{
    char *text = check_dump(NULL);
    int n = check_count(text, needle);
    free(text);
    return n;
}

static int in_file(const char *file, const char *needle)
{
    char *text = check_slurp_path(file);
    int n = check_count(text, needle);
    free(text);
    return n;
}

static void full(const char *dir)
{
    char filler[512], outputs[1200];
    static char block[40 * 1024];
    int fd;

    snprintf(filler, sizeof filler, "%s/filler", dir);
    fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && write(fd, block, sizeof block) == (ssize_t)sizeof block);
    close(fd);
    snprintf(outputs, sizeof outputs, "1:file:%s 1:file:%s", path, other);
    CHECK(vlog_set_outputs(outputs) == 0);
    log_lines(0, 1000);
    CHECK(lines_lost() > 0);
    CHECK(in_file(other, ", padded") == 1000);
    CHECK(in_ring(", padded") == 1000);
    CHECK(in_ring(": warning : vlog : output:0 : cannot write to ") == 1);
    CHECK(in_ring("No space left on device") == 1);
    /* Space again: the next line gets through, and that is reported once. */
    CHECK(unlink(filler) == 0);
    log_lines(1000, 1002);
    CHECK(in_ring(" works again; ") == 1);
    CHECK(in_file(path, "line 1001, padded") == 1);
}

static void fifo(const char *dir)
{
    char outputs[600], buf[4096];
    long lost;
    int rd;

    (void)dir;
    CHECK(mkfifo(path, 0600) == 0);
    snprintf(outputs, sizeof outputs, "1:file:%s", path);
    /* Nobody reads: refused at once instead of blocking in open(2). */
    CHECK(vlog_set_outputs(outputs) == -1);
    CHECK_ERROR("a FIFO with no reader");
    rd = open(path, O_RDONLY | O_NONBLOCK);
    CHECK(rd >= 0);
    CHECK(vlog_set_outputs(outputs) == 0);
    log_lines(0, 1);
    CHECK(read(rd, buf, sizeof buf) > 0);
    /* A reader that stops reading: the pipe fills, and is waited on for 5 s
     * (a reader slow for a moment loses nothing); then the reader is
     * stalled, said once, and lines are dropped without a wait (an alarm
     * ends the test if a write blocks for good). */
    alarm(20);
    log_lines(1, 3000);
    lost = lines_lost();
    CHECK(lost > 0 && lost < 3000);
    CHECK(in_ring("it took nothing for 5 s (its queue stayed full)") == 1);
    while (read(rd, buf, sizeof buf) > 0)
        ;
    log_lines(3000, 3001);
    CHECK(in_ring(" works again; ") == 1);
    /* The reader leaves: EPIPE, not SIGPIPE (its default action would end
     * this process). */
    close(rd);
    log_lines(3001, 3100);
    CHECK(in_ring("Broken pipe") == 1);
    CHECK(in_ring(", padded") == 3100);
    alarm(0);
}

static void rotate(const char *dir)
{
    char outputs[600], moved[600];

    (void)dir;
    snprintf(outputs, sizeof outputs, "1:file:%s", path);
    snprintf(moved, sizeof moved, "%s.1", path);
    CHECK(vlog_set_outputs(outputs) == 0);
    log_lines(0, 10);
    /* logrotate's "create": the file is renamed and a new one appears; vlog
     * notices within a second and opens the new one. */
    CHECK(rename(path, moved) == 0);
    CHECK(close(open(path, O_WRONLY | O_CREAT, 0600)) == 0);
    sleep(2);
    log_lines(10, 11);
    CHECK(in_file(path, "line 10, padded") == 1);
    CHECK(in_file(moved, "line 9, padded") == 1);
    CHECK(in_ring(" was replaced (log rotation?): opened it again") == 1);
    /* Deleted: written again under the same name. */
    CHECK(unlink(path) == 0);
    sleep(2);
    log_lines(11, 12);
    CHECK(in_file(path, "line 11, padded") == 1);
    CHECK(in_ring(" was deleted (log rotation?): opened it again") == 1);
    /* vlog_reopen() follows a rename at once. */
    CHECK(rename(path, moved) == 0);
    CHECK(vlog_reopen() == 0);
    log_lines(12, 13);
    CHECK(in_file(path, "line 12, padded") == 1);
}

static void stderr_reused(const char *dir)
{
    struct stat st;
    int fd;

    (void)dir;
    CHECK(vlog_set_outputs("1:stderr 1:file:/dev/full") == 0);
    log_lines(0, 1);
    /* A daemon closes stdio; the next open gets fd 2. */
    close(2);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd == 2);
    log_lines(1, 6);
    /* Neither log lines nor vlog's own diagnostics went into that file. */
    CHECK(stat(path, &st) == 0 && st.st_size == 0);
    CHECK(in_ring("cannot write to stderr: fd 2 is closed, or is no longer") == 1);
    CHECK(in_ring("cannot write to /dev/full") == 1);
    CHECK(in_ring(", padded") == 6);
    /* Log rotation does not adopt it; only the explicit call does. */
    CHECK(vlog_reopen() == 0);
    log_lines(6, 7);
    CHECK(stat(path, &st) == 0 && st.st_size == 0);
    CHECK(vlog_adopt_stderr() == 0);
    log_lines(7, 8);
    CHECK(in_file(path, "line 7, padded") == 1);
}

static void stderr_pipe(void)
{
    CHECK(vlog_set_outputs("1:stderr") == 0);
    log_lines(0, 100);
    CHECK(lines_lost() == 100);
    CHECK(in_ring("Broken pipe") == 1);
    CHECK(in_ring(", padded") == 100);
}

int main(int argc, char **argv)
{
    CHECK(argc >= 2);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    /* Room for every line of every case, so the ring is the whole record. */
    CHECK(vlog_set_buffer_size(4 << 20) == 0);
    if (strcmp(argv[1], "stderr-pipe") == 0) {
        stderr_pipe();
        return 0;
    }
    CHECK(argc == 3);
    snprintf(path, sizeof path, "%s/out.log", argv[2]);
    snprintf(other, sizeof other, "%s.other.log", argv[2]);
    unlink(other); /* from an earlier run */
    if (strcmp(argv[1], "full") == 0)
        full(argv[2]);
    else if (strcmp(argv[1], "fifo") == 0)
        fifo(argv[2]);
    else if (strcmp(argv[1], "rotate") == 0)
        rotate(argv[2]);
    else if (strcmp(argv[1], "stderr") == 0)
        stderr_reused(argv[2]);
    else
        CHECK(!"unknown mode");
    return 0;
}
