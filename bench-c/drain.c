/* A local receiver that drains: it accepts TCP connections on 127.0.0.1 and
 * reads and discards everything, as fast as it comes (the benchmarks'
 * stand-in for a Fluent receiver, so that what is measured is the sender).
 *
 *     bench-c/drain PORTFILE     writes the port it listens on, then drains
 *                                until killed */
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    struct pollfd fds[64];
    int n = 1, one = 1;
    static char buf[1 << 16];
    FILE *f;

    if (argc != 2) {
        fprintf(stderr, "usage: drain PORTFILE\n");
        return 2;
    }
    fds[0].fd = socket(AF_INET, SOCK_STREAM, 0);
    fds[0].events = POLLIN;
    setsockopt(fds[0].fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fds[0].fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fds[0].fd, 64) != 0 ||
        getsockname(fds[0].fd, (struct sockaddr *)&addr, &len) != 0) {
        perror("drain");
        return 1;
    }
    f = fopen(argv[1], "w");
    if (!f || fprintf(f, "%d\n", ntohs(addr.sin_port)) < 0 || fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    for (;;) {
        if (poll(fds, (nfds_t)n, -1) < 0)
            continue;
        if ((fds[0].revents & POLLIN) && n < 64) {
            int c = accept(fds[0].fd, NULL, NULL);
            if (c >= 0) {
                fds[n].fd = c;
                fds[n].events = POLLIN;
                n++;
            }
        }
        for (int i = 1; i < n; i++) {
            if (!fds[i].revents)
                continue;
            if (read(fds[i].fd, buf, sizeof buf) <= 0) {
                close(fds[i].fd);
                fds[i--] = fds[--n];
            }
        }
    }
}
