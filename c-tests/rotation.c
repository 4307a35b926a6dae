/* Files that stay bounded on their own: `?max=SIZE&keep=N`.
 *
 *   rotation sizes DIR FORM     FORM file or json: 1 MB into max=64K&keep=3;
 *                               exactly PATH and PATH.1-3 are left, none over
 *                               64 KiB, every line whole, none lost but those
 *                               in files rotated away
 *   rotation writer TAG N       N lines, from this process and a child it
 *                               forks, into the file VLOG_OUTPUTS names (the
 *                               driver runs two at once and counts the lines)
 *   rotation full DIR           DIR: a file system with no inode left for a
 *                               new file (the driver mounts one): one warning,
 *                               the lines go on to PATH, none lost
 *   rotation in-the-way DIR     PATH.1 a symbolic link to another file: not
 *                               rotated over (one warning), the file it names
 *                               untouched, the lines go on to PATH
 *   rotation follow DIR         another process rotates the file away (and
 *                               removes it) between two lines: the second
 *                               goes to the new PATH, never the removed file
 *   rotation sizes DIR FORM noring   as sizes, without a ring
 *   rotation crash-follow DIR   after following another process's rotation,
 *                               a crash: the lines the writer thread had not
 *                               written reach the new PATH (the driver looks)
 */
#include "check.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

VLOG_INIT("test.rotation");

static const char pad[] = "................................................................"
                          "................................................................"
                          "................................................................"
                          "................................................................";

static unsigned next_len(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (*state >> 16) % 200;
}

static void log_seq(const char *who, int from, int to)
{
    unsigned state = (unsigned)from + 7;
    for (int i = from; i < to; i++)
        VLOG_INFO("%s seq %06d %.*s", who, i, (int)next_len(&state), pad);
}

static long lines_lost(void)
{
    vlog_stats st;
    CHECK(vlog_get_stats(&st) == 0);
    return (long)st.output_lines_lost;
}

static long file_size(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* The sequence numbers of `who` in the file at `path`, in order, appended
 * to seqs[*n]; every line must end in a newline. Returns the lines. */
static int read_seqs(const char *path, const char *who, int *seqs, int *n, int max)
{
    char *text = check_slurp_path(path), *line = text, *end;
    char needle[64];
    int lines = 0;

    snprintf(needle, sizeof needle, "%s seq ", who);
    CHECK(text[0] == '\0' || text[strlen(text) - 1] == '\n');
    while ((end = strchr(line, '\n')) != NULL) {
        const char *at;
        *end = '\0';
        lines++;
        if ((at = strstr(line, needle)) != NULL) {
            int seq = atoi(at + strlen(needle));
            if (!strstr(line, "test.rotation")) {
                fprintf(stderr, "%s: a line not from test.rotation: %s\n", path, line);
                exit(1);
            }
            CHECK(*n < max);
            seqs[(*n)++] = seq;
        }
        line = end + 1;
    }
    CHECK(*line == '\0');
    free(text);
    return lines;
}

static void sizes(const char *dir, const char *form, int no_ring)
{
    char outputs[700], path[600], name[640];
    static int seqs[20000];
    int n = 0, total = 0;
    long written = 0;

    snprintf(path, sizeof path, "%s/r.log", dir);
    snprintf(outputs, sizeof outputs, "1:%s:%s?max=64K&keep=3", form, path);
    CHECK(vlog_set_outputs(outputs) == 0);
    if (no_ring)
        CHECK(vlog_set_buffer_size(0) == 0);
    /* About 1 MB of lines. */
    unsigned state = 7;
    for (total = 0; written < (1 << 20); total++) {
        unsigned len = next_len(&state);
        VLOG_INFO("w seq %06d %.*s", total, (int)len, pad);
        written += 80 + (long)len;
    }
    vlog_flush();
    CHECK(lines_lost() == 0);

    /* Exactly PATH, PATH.1, PATH.2, PATH.3. */
    DIR *d = opendir(dir);
    struct dirent *e;
    int files = 0;
    CHECK(d != NULL);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        files++;
        if (strcmp(e->d_name, "r.log") != 0 && strcmp(e->d_name, "r.log.1") != 0 &&
            strcmp(e->d_name, "r.log.2") != 0 && strcmp(e->d_name, "r.log.3") != 0) {
            fprintf(stderr, "a file that should not be there: %s\n", e->d_name);
            exit(1);
        }
    }
    closedir(d);
    if (files != 4) {
        fprintf(stderr, "%d files in %s, not 4\n", files, dir);
        exit(1);
    }
    /* None over 64 KiB; the oldest kept first. */
    for (int k = 3; k >= 0; k--) {
        if (k > 0)
            snprintf(name, sizeof name, "%s.%d", path, k);
        else
            snprintf(name, sizeof name, "%s", path);
        long size = file_size(name);
        if (size <= 0 || size > 65536) {
            fprintf(stderr, "%s: %ld bytes (max 65536)\n", name, size);
            exit(1);
        }
        read_seqs(name, "w", seqs, &n, 20000);
    }
    /* The lines kept are the newest ones, each once, in order, none
     * missing: the lost ones are only those in files rotated away. */
    if (n < 100 || seqs[n - 1] != total - 1) {
        fprintf(stderr, "%d lines kept, the last %d (of %d)\n", n, n ? seqs[n - 1] : -1, total);
        exit(1);
    }
    for (int i = 1; i < n; i++) {
        if (seqs[i] != seqs[i - 1] + 1) {
            fprintf(stderr, "line %d of the kept ones: seq %d after %d\n", i, seqs[i],
                    seqs[i - 1]);
            exit(1);
        }
    }
    /* Each rotation said once, by an info record of source vlog that the
     * file prints too (with or without a ring). */
    int said = 0;
    for (int k = 3; k >= 0; k--) {
        char *text;
        if (k > 0)
            snprintf(name, sizeof name, "%s.%d", path, k);
        else
            snprintf(name, sizeof name, "%s", path);
        text = check_slurp_path(name);
        said += check_count(text, ", a new one started (3 kept)");
        free(text);
    }
    if (said < 3) {
        fprintf(stderr, "%d rotations said in the files kept\n", said);
        exit(1);
    }
    if (!no_ring) {
        char *ring = check_dump(NULL);
        CHECK_HAS(ring, "a new one started (3 kept)");
        free(ring);
    }
    printf("%d lines, %d kept\n", total, n);
}

/* DIR/r.log as a rotating output (one kept), with a line "before" in it. */
static void rotating_with_a_line(const char *dir, char *path, size_t size)
{
    char outputs[700];

    snprintf(path, size, "%s/r.log", dir);
    snprintf(outputs, sizeof outputs, "1:file:%s?max=64K&keep=1", path);
    CHECK(vlog_set_outputs(outputs) == 0);
    VLOG_INFO("before");
    CHECK(vlog_flush() == 0);
}

static void crash_follow(const char *dir)
{
    char path[600], moved[640];
    FILE *f;

    rotating_with_a_line(dir, path, sizeof path);
    snprintf(moved, sizeof moved, "%s/r.log.1", dir);
    CHECK(rename(path, moved) == 0);
    f = fopen(path, "w");
    CHECK(f != NULL && fclose(f) == 0);
    CHECK(chmod(path, 0600) == 0);
    VLOG_INFO("followed");
    CHECK(vlog_flush() == 0);
    /* Left to the writer thread, which lets them gather: the crash comes
     * first, and the crash handler writes them. */
    for (int i = 0; i < 5; i++)
        VLOG_INFO("pending %d", i);
    raise(SIGSEGV);
}

static void follow(const char *dir)
{
    char path[600], gone[640];
    char *text;
    FILE *f;

    rotating_with_a_line(dir, path, sizeof path);
    snprintf(gone, sizeof gone, "%s/gone", dir);
    /* Another process's rotation, past its keep: the file vlog writes is
     * renamed and removed, and a new one started with its line. */
    CHECK(rename(path, gone) == 0 && unlink(gone) == 0);
    f = fopen(path, "w");
    CHECK(f != NULL && fputs("a peer's line\n", f) >= 0 && fclose(f) == 0);
    CHECK(chmod(path, 0600) == 0);
    VLOG_INFO("after");
    CHECK(vlog_flush() == 0);
    text = check_slurp_path(path);
    if (!strstr(text, "a peer's line\n") || !strstr(text, ": after\n")) {
        fprintf(stderr, "the line after went elsewhere; %s holds:\n%s\n", path, text);
        exit(1);
    }
    free(text);
}

static void writer(const char *tag, int n)
{
    char who[64];
    pid_t child;
    int status;

    child = fork();
    CHECK(child >= 0);
    snprintf(who, sizeof who, "%s-%s", tag, child == 0 ? "child" : "parent");
    log_seq(who, 0, n);
    vlog_flush();
    CHECK(lines_lost() == 0);
    if (child == 0)
        exit(0);
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Lines past max that cannot be rotated away: all in PATH, none lost. */
static void written_on(const char *path, int total)
{
    static int seqs[20000];
    int n = 0;
    read_seqs(path, "w", seqs, &n, 20000);
    if (n != total) {
        fprintf(stderr, "%s holds %d of the %d lines\n", path, n, total);
        exit(1);
    }
    for (int i = 0; i < n; i++)
        CHECK(seqs[i] == i);
    CHECK(file_size(path) > 65536);
}

static void full(const char *dir)
{
    char outputs[700], path[600], moved[640];
    const int total = 2000;

    snprintf(path, sizeof path, "%s/r.log", dir);
    snprintf(moved, sizeof moved, "%s.1", path);
    snprintf(outputs, sizeof outputs, "1:file:%s?max=64K&keep=2", path);
    CHECK(vlog_set_outputs(outputs) == 0);
    log_seq("w", 0, total);
    vlog_flush();
    CHECK(lines_lost() == 0);
    CHECK(file_size(moved) < 0);
    written_on(path, total);
}

static void in_the_way(const char *dir)
{
    char outputs[700], path[600], link[640], victim[640];
    const int total = 2000;

    snprintf(path, sizeof path, "%s/r.log", dir);
    snprintf(link, sizeof link, "%s.1", path);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    FILE *f = fopen(victim, "w");
    CHECK(f != NULL && fputs("untouched\n", f) >= 0 && fclose(f) == 0);
    CHECK(symlink(victim, link) == 0);
    snprintf(outputs, sizeof outputs, "1:file:%s?max=64K&keep=3", path);
    CHECK(vlog_set_outputs(outputs) == 0);
    log_seq("w", 0, total);
    vlog_flush();
    CHECK(lines_lost() == 0);
    written_on(path, total);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    char *kept = check_slurp_path(victim);
    CHECK(strcmp(kept, "untouched\n") == 0);
    free(kept);
}

int main(int argc, char **argv)
{
    CHECK(argc >= 3);
    CHECK(vlog_set_level(VLOG_PRIO_INFO) == 0);
    if (strcmp(argv[1], "sizes") == 0 && (argc == 4 || argc == 5))
        sizes(argv[2], argv[3], argc == 5 && strcmp(argv[4], "noring") == 0);
    else if (strcmp(argv[1], "follow") == 0)
        follow(argv[2]);
    else if (strcmp(argv[1], "crash-follow") == 0)
        crash_follow(argv[2]);
    else if (strcmp(argv[1], "writer") == 0 && argc == 4)
        writer(argv[2], atoi(argv[3]));
    else if (strcmp(argv[1], "full") == 0)
        full(argv[2]);
    else if (strcmp(argv[1], "in-the-way") == 0)
        in_the_way(argv[2]);
    else
        CHECK(!"a mode");
    return 0;
}
