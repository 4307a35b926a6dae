#ifndef DAEMON_H
#define DAEMON_H

#include <stddef.h>

struct request {
    int id;
    int write;
    size_t len;
    unsigned long long block;
};

int net_receive(int id, struct request *req);
int disk_submit(const struct request *req);

#endif
