/* Ring files from outside, and ring files shared.
 *
 *   ring_files open           VLOG_BUFFER_FILE names a file the test made
 *                             hostile (forged head and tail, 6 GB, another
 *                             user's, writable by others): vlog_init returns
 *                             at once, the ring works (in memory), and the
 *                             file is left as it was.
 *   ring_files share TAG N    one of two processes on one ring file: says
 *                             "ready", waits for a line on stdin, logs N
 *                             records tagged TAG, tries to resize the ring
 *                             (refused: it is shared), says "done", waits for
 *                             a line, exits.
 *   ring_files write TEXT N   logs N records "TEXT i" into the ring file and
 *                             exits.
 *   ring_files dump-resize    vlog_dump blocked on a full pipe in one thread
 *                             while the main thread resizes the ring and logs:
 *                             neither waits for the dump.
 */
#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>

VLOG_INIT("test.ringfile");

static int open_mode(void)
{
    int records;
    char *text;

    /* 0 when a damaged ring was replaced, 1 when the file was refused. */
    CHECK(vlog_init() >= 0);
    VLOG_ERROR("logged after a hostile ring file");
    text = check_dump(&records);
    CHECK(strstr(text, "logged after a hostile ring file") != NULL);
    /* Nothing of the hostile file was carried in. */
    CHECK(strstr(text, "FORGED") == NULL);
    free(text);
    return 0;
}

/* The driver's next word. A read that fails says how (end of file, or
 * the error: a signal vlog let interrupt it would show as EINTR). */
static void wait_line(void)
{
    char line[64];
    if (fgets(line, sizeof line, stdin) == NULL) {
        int err = errno;
        fprintf(stderr, "ring_files: no line from the driver: %s\n",
                feof(stdin) ? "end of file" : strerror(err));
        exit(1);
    }
}

static int share(const char *tag, int n)
{
    int i;

    CHECK(vlog_init() == 0);
    printf("ready\n");
    fflush(stdout);
    wait_line();
    for (i = 0; i < n; i++) {
        VLOG_ERROR("%s record %d", tag, i);
        if (i % 16 == 0)
            usleep(1000);
    }
    CHECK(vlog_set_buffer_size(1 << 20) == -1);
    CHECK_ERROR("in use by another process");
    printf("done\n");
    fflush(stdout);
    wait_line();
    return 0;
}

static int pipe_fds[2];

static void *dumper(void *arg)
{
    (void)arg;
    /* Blocks: nobody reads the pipe until main has resized and logged. */
    CHECK(vlog_dump(pipe_fds[1]) > 0);
    close(pipe_fds[1]);
    return NULL;
}

static void on_alarm(int sig)
{
    static const char text[] = "the logger waited for a blocked vlog_dump\n";
    (void)sig;
    (void)!write(2, text, sizeof text - 1);
    _exit(1);
}

static int dump_resize(void)
{
    pthread_t thread;
    char buf[65536];
    int i, records;
    char *text;

    CHECK(vlog_set_buffer_size(1 << 20) == 0);
    for (i = 0; i < 5000; i++)
        VLOG_ERROR("filling the ring with record %d and some more text", i);
    CHECK(pipe(pipe_fds) == 0);
    CHECK(pthread_create(&thread, NULL, dumper, NULL) == 0);
    usleep(200 * 1000); /* the dump fills the pipe and blocks */
    signal(SIGALRM, on_alarm);
    alarm(10);
    CHECK(vlog_set_buffer_size(512 << 10) == 0);
    VLOG_ERROR("after the resize");
    CHECK(vlog_set_buffer_size(256 << 10) == 0);
    text = check_dump(&records);
    CHECK(strstr(text, "after the resize") != NULL);
    free(text);
    alarm(0);
    /* Let the dump finish. */
    while (read(pipe_fds[0], buf, sizeof buf) > 0)
        ;
    CHECK(pthread_join(thread, NULL) == 0);
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(argc >= 2);
    if (strcmp(argv[1], "open") == 0)
        return open_mode();
    if (strcmp(argv[1], "share") == 0 && argc == 4)
        return share(argv[2], atoi(argv[3]));
    if (strcmp(argv[1], "write") == 0 && argc == 4) {
        for (int i = 0; i < atoi(argv[3]); i++)
            VLOG_ERROR("%s %d", argv[2], i);
        return 0;
    }
    if (strcmp(argv[1], "dump-resize") == 0)
        return dump_resize();
    return 2;
}
