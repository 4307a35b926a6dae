/* A file that includes Open vSwitch's <openvswitch/vlog.h> (a stand-in:
 * namesakes/) and vlog.h, in either order (-DVLOG_FIRST), with
 * VLOG_NO_SHORT_NAMES: both compile without a warning, Open vSwitch's
 * names stay Open vSwitch's, and vlog logs through VLOG_AT and its kin.
 * Built with the shared library: the program defines Open vSwitch's
 * vlog_init itself, as a daemon linked with libopenvswitch.a does. */
#ifdef VLOG_FIRST
#define VLOG_NO_SHORT_NAMES
#include "check.h"
#include "namesakes/openvswitch/vlog.h"
#else
#include "namesakes/openvswitch/vlog.h"
#define VLOG_NO_SHORT_NAMES
#include "check.h"
#endif

#include <stdarg.h>

VLOG_DEFINE_THIS_MODULE(bridge);
VLOG_INIT("namesakes");

/* Open vSwitch's functions, as its library would define them. */
static int ovs_inits, ovs_lines;
static char ovs_last[200];

void vlog_init(void)
{
    ovs_inits++;
}

void vlog(const struct vlog_module *module, enum vlog_level level, const char *format, ...)
{
    va_list ap;

    (void)module;
    (void)level;
    va_start(ap, format);
    vsnprintf(ovs_last, sizeof ovs_last, format, ap);
    va_end(ap);
    ovs_lines++;
}

void vlog_fatal(const struct vlog_module *module, const char *format, ...)
{
    (void)module;
    (void)format;
    exit(1);
}

#if defined(VLOG_DEBUG) || defined(VLOG_ERROR) || defined(VLOG_DEBUG_ONCE) ||        \
    defined(VLOG_ERROR_EVERY_N) || defined(VLOG_WARN_RATELIMITED)
#error "VLOG_NO_SHORT_NAMES left a short name in"
#endif

int main(void)
{
    vlog_stats before, after;
    char *dump;
    int records;

    CHECK(vlog_get_stats(&before) == 0);
    /* Open vSwitch's, whatever vlog.h defined. */
    vlog_init();
    CHECK(ovs_inits == 1);
    VLOG_WARN("ovs warns %d", 1);
    CHECK(ovs_lines == 1 && strcmp(ovs_last, "ovs warns 1") == 0);
    for (int i = 0; i < 2; i++)
        VLOG_INFO_ONCE("ovs once");
    CHECK(ovs_lines == 2 && strcmp(ovs_last, "ovs once") == 0);
    /* vlog's: none of it reaches Open vSwitch's vlog(). */
    VLOG_AT(VLOG_PRIO_WARN, "vlog warns %d", 2);
    for (int i = 0; i < 3; i++) {
        VLOG_AT_ONCE(VLOG_PRIO_ERROR, "vlog once");
        VLOG_AT_EVERY_N(VLOG_PRIO_WARN, 2, "vlog every 2nd, call %d", i);
        VLOG_AT_RATELIMITED(VLOG_PRIO_WARN, "vlog limited %d", i);
    }
    CHECK(vlog_fields(&vlog_default_source, VLOG_PRIO_WARN, __FILE__, __LINE__, __func__, NULL,
                      0, "vlog's function %d", 3) == 1);
    CHECK(ovs_lines == 2);
    /* Both checks hold: vlog's, and the name Open vSwitch has none of. */
    VLOG_CHECK(ovs_lines == 2, "ovs lines %d", ovs_lines);
    if (ovs_lines != 2)
        VLOG_FATAL("Open vSwitch's VLOG_FATAL %d", ovs_lines);
    if (ovs_lines != 2)
        VLOG_DIE("vlog's %d", ovs_lines);
    CHECK(vlog_get_stats(&after) == 0);
    /* 1 + 1 once + 2 of 3 every 2nd + 3 limited + 1 function. */
    CHECK(after.records - before.records == 8);
    dump = check_dump(&records);
    CHECK_HAS(dump, ": warning : namesakes : main:");
    CHECK_HAS(dump, " : vlog warns 2\n");
    CHECK_HAS(dump, " : vlog every 2nd, call 2 [VLOG_SUPPRESSED=1]\n");
    CHECK(strstr(dump, "ovs") == NULL);
    free(dump);
    return 0;
}
