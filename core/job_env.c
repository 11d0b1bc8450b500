/* A rank process's place in its job, from the variables its launcher sets
 * (torchrun, Open MPI, Slurm), and the token that tells the job apart. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "job.h"

extern char **environ;

/* The value of `name` in env, or NULL. */
static const char *lookup(const char *const *env, const char *name)
{
    size_t len = strlen(name);
    for (const char *const *e = env; *e; e++)
        if (!strncmp(*e, name, len) && (*e)[len] == '=')
            return *e + len + 1;
    return NULL;
}

/* Each launcher's variables: rank, size, local rank, and those whose
 * values together name the job. */
typedef struct launcher_vars {
    gcn_launcher launcher;
    const char *rank, *size, *local;
    const char *token[4];
} launcher_vars;

static const launcher_vars LAUNCHERS[] = {
    {GCN_LAUNCHER_TORCHRUN, "RANK", "WORLD_SIZE", "LOCAL_RANK",
     {"TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT"}},
    {GCN_LAUNCHER_OPENMPI, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"}},
    {GCN_LAUNCHER_SLURM, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
     {"SLURM_JOB_ID", "SLURM_STEP_ID"}},
};

const char *gcn_launcher_name(gcn_launcher launcher)
{
    switch (launcher) {
    case GCN_LAUNCHER_TORCHRUN:
        return "torchrun";
    case GCN_LAUNCHER_OPENMPI:
        return "Open MPI";
    case GCN_LAUNCHER_SLURM:
        return "Slurm";
    default:
        return "none";
    }
}

/* The decimal integer `name` holds, in [lo, hi). */
static gcn_status read_int(const char *const *env, const launcher_vars *v, const char *name,
                           long lo, long hi, int *out, char *err, size_t size)
{
    const char *s = lookup(env, name);
    if (!s) {
        snprintf(err, size, "%s launcher: %s is set but %s is not: a rank needs %s, %s and %s",
                 gcn_launcher_name(v->launcher), v->rank, name, v->rank, v->size, v->local);
        return GCN_ERR_INVALID_ARG;
    }
    char *end = NULL;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (!*s || *end || errno) {
        snprintf(err, size, "%s=%s: not a decimal integer", name, s);
        return GCN_ERR_INVALID_ARG;
    }
    if (x < lo || x >= hi) {
        snprintf(err, size, "%s=%s: expected %ld to %ld", name, s, lo, hi - 1);
        return GCN_ERR_INVALID_ARG;
    }
    *out = (int)x;
    return GCN_OK;
}

/* The job's token: GCN_JOB_ID, else the launcher's variables joined by
 * '/' ("" when none is set). */
static void read_token(const char *const *env, const launcher_vars *v, char *buf, size_t size)
{
    const char *own = lookup(env, "GCN_JOB_ID");
    if (own) {
        snprintf(buf, size, "%s", own);
        return;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < 4 && v->token[i] && used < size; i++) {
        const char *x = lookup(env, v->token[i]);
        if (x)
            used += (size_t)snprintf(buf + used, size - used, "%s%s=%s", used ? "/" : "",
                                     v->token[i], x);
    }
}

gcn_status gcn_job_from_env(const char *const *env, gcn_job *job, char *err, size_t err_size)
{
    char scratch[8];
    if (!err || !err_size) {
        err = scratch;
        err_size = sizeof scratch;
    }
    err[0] = '\0';
    if (!job)
        return GCN_ERR_INVALID_ARG;
    memset(job, 0, sizeof *job);
    if (!env)
        env = (const char *const *)environ;
    for (size_t i = 0; i < sizeof LAUNCHERS / sizeof *LAUNCHERS; i++) {
        const launcher_vars *v = &LAUNCHERS[i];
        if (!lookup(env, v->rank))
            continue;
        int size = 0;
        gcn_status st = read_int(env, v, v->size, 1, GCN_MAX_JOB_RANKS + 1L, &size, err, err_size);
        if (st == GCN_OK)
            st = read_int(env, v, v->rank, 0, size, &job->rank, err, err_size);
        if (st == GCN_OK)
            st = read_int(env, v, v->local, 0, size, &job->local_rank, err, err_size);
        if (st != GCN_OK)
            return st;
        job->ranks = size;
        job->launcher = v->launcher;
        read_token(env, v, job->token, sizeof job->token);
        return GCN_OK;
    }
    snprintf(err, err_size, "no launcher's variables are set: a rank process needs RANK, "
             "WORLD_SIZE and LOCAL_RANK (torchrun), OMPI_COMM_WORLD_RANK, _SIZE and _LOCAL_RANK "
             "(Open MPI) or SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID (Slurm)");
    return GCN_ERR_NOT_FOUND;
}
