/* libvirt's filter and output syntax through the API: what libvirt accepts is
 * accepted, what it rejects is rejected with the bad token named, and a
 * rejected string changes nothing. */
#include "check.h"

VLOG_INIT("qemu.monitor");

static void accept_filters(const char *s)
{
    if (vlog_set_filters(s) != 0) {
        fprintf(stderr, "filters \"%s\" rejected: %s\n", s, vlog_last_error());
        exit(1);
    }
}

static void reject_filters(const char *s, const char *needle)
{
    if (vlog_set_filters(s) != -1) {
        fprintf(stderr, "filters \"%s\" accepted\n", s);
        exit(1);
    }
    CHECK_ERROR(needle);
}

static void accept_outputs(const char *s)
{
    if (vlog_set_outputs(s) != 0) {
        fprintf(stderr, "outputs \"%s\" rejected: %s\n", s, vlog_last_error());
        exit(1);
    }
}

static void reject_outputs(const char *s, const char *needle)
{
    if (vlog_set_outputs(s) != -1) {
        fprintf(stderr, "outputs \"%s\" accepted\n", s);
        exit(1);
    }
    CHECK_ERROR(needle);
}

int main(void)
{
    char path[] = "/tmp/vlog-config-XXXXXX";
    char spec[256];
    int fd = mkstemp(path);

    CHECK(fd >= 0);
    close(fd);
    CHECK(vlog_init() == 0);
    VLOG_ERROR("registers the source");

    /* Filters libvirt accepts. */
    accept_filters("");
    accept_filters("   ");
    accept_filters("1:qemu");
    accept_filters("  3:util.object   1:qemu 2:* ");
    accept_filters("1:+qemu");
    accept_filters("+1:qemu");
    accept_filters("01:qemu");
    accept_filters("4:q?emu* 1:*.monitor");
    accept_filters("debug:qemu info:util warn:a warning:b error:c");

    /* Filters libvirt rejects. */
    reject_filters("1", "'1'");
    reject_filters("1:", "empty match");
    reject_filters("1:+", "empty match");
    reject_filters("0:qemu", "'0'");
    reject_filters("5:qemu", "'5'");
    reject_filters("-1:qemu", "'-1'");
    reject_filters("1:qemu:x", "'1:qemu:x'");
    reject_filters("x:qemu", "'x'");
    reject_filters("DEBUG:qemu", "'DEBUG'");
    reject_filters(":qemu", "''");

    /* Atomic: one bad token rejects the string and the old filters stay. */
    accept_filters("1:qemu");
    CHECK(vlog__source.level == VLOG_PRIO_DEBUG);
    reject_filters("4:qemu 9:util", "'9'");
    CHECK(vlog__source.level == VLOG_PRIO_DEBUG);
    accept_filters("4:monitor 1:qemu");
    CHECK(vlog__source.level == VLOG_PRIO_ERROR); /* first match wins */

    /* Outputs libvirt accepts. */
    accept_outputs("");
    accept_outputs("3:stderr");
    snprintf(spec, sizeof spec, " 1:file:%s  2:stderr ", path);
    accept_outputs(spec);
    snprintf(spec, sizeof spec, "1:file:%s 3:file:%s", path, path);
    accept_outputs(spec);
    accept_outputs("info:stderr");

    /* Outputs libvirt rejects. */
    reject_outputs("stderr", "'stderr'");
    reject_outputs("0:stderr", "'0'");
    reject_outputs("1:Stderr", "'Stderr'");
    reject_outputs("1:stderr:x", "'1:stderr:x'");
    reject_outputs("1:file", "'1:file'");
    reject_outputs("1:file:/tmp/a:b", "'1:file:/tmp/a:b'");
    reject_outputs("1:journald:x", "'1:journald:x'");
    reject_outputs("1:syslog:", "'1:syslog:'");
    reject_outputs("1:file:/nonexistent-dir/x.log", "/nonexistent-dir/x.log");
    reject_outputs("1:bogus", "'bogus'");

    /* Atomic: the file output stays when a later token is bad. */
    snprintf(spec, sizeof spec, "1:file:%s", path);
    accept_outputs(spec);
    reject_outputs("1:stderr 7:stderr", "'7'");
    accept_filters("1:qemu");
    VLOG_DEBUG("still to the file");
    CHECK(vlog_flush() == 0);
    {
        char *text = check_slurp_path(path);
        CHECK(strstr(text, " : still to the file\n") != NULL);
        free(text);
    }

    /* Levels and sizes. */
    CHECK(vlog_set_level(0) == -1);
    CHECK_ERROR("0");
    CHECK(vlog_set_level(5) == -1);
    CHECK(vlog_set_level(VLOG_PRIO_INFO) == 0);
    CHECK(vlog_set_buffer_size(100) == -1);
    CHECK_ERROR("minimum");
    CHECK(vlog_set_buffer_size((size_t)1 << 31) == -1);
    CHECK_ERROR("maximum");
    CHECK(vlog_set_buffer_size(1 << 20) == 0);

    unlink(path);
    puts("ok");
    return 0;
}
