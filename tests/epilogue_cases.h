/* The stage combinations the epilogue tests run: bias or not, batch norm
 * (none, training statistics, running statistics), the activation and the
 * dropout probability. */
#ifndef GCN_TESTS_EPILOGUE_CASES_H
#define GCN_TESTS_EPILOGUE_CASES_H

#include <stdbool.h>

#include "gcn.h"

enum { BN_NONE, BN_TRAIN, BN_EVAL };

typedef struct spec {
    bool bias;
    int bn;
    gcn_activation act;
    float p;
} spec;

#endif
