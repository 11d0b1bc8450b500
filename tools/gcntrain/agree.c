/* The value the rank processes of a job agree on (agree.h). */
#include <math.h>

#include "tools/gcntrain/agree.h"

int agree_combine(agreement how, const double *values, int n)
{
    double v = values[0];
    for (int k = 1; k < n && how != AGREE_ROOT; k++)
        v = how == AGREE_ALL ? fmin(v, values[k]) : fmax(v, values[k]);
    return (int)v;
}
