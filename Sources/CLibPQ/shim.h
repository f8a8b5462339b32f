#ifndef LIVELINE_CLIBPQ_SHIM_H
#define LIVELINE_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
