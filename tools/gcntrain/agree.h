/* How the rank processes of a job agree on a value that each decided
 * alone, so that they all enter the same collectives next: job_agree
 * (job.c) gathers every rank's value and agree_combine picks the job's. */
#ifndef GCNTRAIN_AGREE_H
#define GCNTRAIN_AGREE_H

/* A flag true on every rank (every call site locked), true on any rank (a
 * signal to stop: the greatest signal number), or rank 0's (a file that
 * only rank 0 reads). */
typedef enum agreement { AGREE_ALL, AGREE_ANY, AGREE_ROOT } agreement;

/* The job's value of values[n] (one per rank, in rank order, n >= 1): the
 * least, the greatest, or rank 0's. */
int agree_combine(agreement how, const double *values, int n);

#endif
