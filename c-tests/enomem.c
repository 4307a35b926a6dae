/* Out of memory: under an address-space limit (RLIMIT_AS) just above what
 * the process uses, every vlog call works or fails with a warning, and
 * vlog degrades (no ring, fewer outputs); none aborts the process.
 *
 *   enomem DIR     for a range of margins above the current use, a child
 *                  with RLIMIT_AS at that margin initialises vlog with a
 *                  ring, a file output and a crash dump file, logs,
 *                  changes the outputs and the ring, and dumps.
 */
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

VLOG_INIT("test.enomem");

static long vm_size_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;

    CHECK(f != NULL);
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmSize: %ld kB", &kib) == 1)
            break;
    fclose(f);
    CHECK(kib > 0);
    return kib;
}

static void scenario(const char *dir)
{
    char spec[600];
    int i, fd;

    (void)vlog_init();
    for (i = 0; i < 100; i++)
        VLOG_ERROR("error %d", i);
    for (i = 0; i < 100; i++)
        VLOG_DEBUG("deferred %d %s", i, "string");
    snprintf(spec, sizeof spec, "1:file:%s/a.log 1:json:%s/b.json 3:stderr", dir, dir);
    (void)vlog_set_outputs(spec);
    for (i = 0; i < 100; i++)
        VLOG_INFO("info %d", i);
    (void)vlog_set_buffer_size(16 << 20);
    (void)vlog_set_filters("1:test 3:other");
    for (i = 0; i < 100; i++)
        VLOG_DEBUG("after the resize %d", i);
    fd = open("/dev/null", O_WRONLY);
    (void)vlog_dump(fd);
    close(fd);
    (void)vlog_set_outputs("2:syslog:enomem@tcp://127.0.0.1:9 2:json:stderr");
    VLOG_WARN("to the collector");
    (void)vlog_flush();
    vlog_shutdown();
    (void)vlog_init();
    VLOG_ERROR("after a restart");
}

int main(int argc, char **argv)
{
    static const long margins_kib[] = {0,   4,    16,   64,   128,  256,  512,
                                       768, 1024, 1536, 2048, 4096, 8192, 16384};
    unsigned i;
    int failures = 0;

    CHECK(argc == 2);
    for (i = 0; i < sizeof margins_kib / sizeof margins_kib[0]; i++) {
        int status;
        pid_t pid = fork();

        CHECK(pid >= 0);
        if (pid == 0) {
            struct rlimit limit;
            long kib = vm_size_kib() + margins_kib[i];

            limit.rlim_cur = limit.rlim_max = (rlim_t)kib * 1024;
            CHECK(setrlimit(RLIMIT_AS, &limit) == 0);
            scenario(argv[1]);
            _exit(0);
        }
        CHECK(waitpid(pid, &status, 0) == pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "margin %ld KiB: %s %d\n", margins_kib[i],
                    WIFSIGNALED(status) ? "killed by signal" : "exit status",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
            failures++;
        }
    }
    return failures != 0;
}
