/* A job of rank processes, one GPU each, started by a launcher (torchrun,
 * Slurm's srun, Open MPI's mpirun, or a shell loop): the rank a process is
 * from its environment, the rendezvous file through which the ranks share
 * NCCL's id, and the heartbeats by which they notice a peer that failed. */
#ifndef GCN_JOB_H
#define GCN_JOB_H

#include <stdbool.h>

#include "comm.h"
#include "ctx.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gcn_launcher {
    GCN_LAUNCHER_NONE = 0,
    GCN_LAUNCHER_TORCHRUN, /* RANK, WORLD_SIZE, LOCAL_RANK */
    GCN_LAUNCHER_OPENMPI,  /* OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK */
    GCN_LAUNCHER_SLURM     /* SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID */
} gcn_launcher;

/* "torchrun", "Open MPI", "Slurm" or "none". */
GCN_API const char *gcn_launcher_name(gcn_launcher launcher);

/* The most ranks a job of processes may have. */
#define GCN_MAX_JOB_RANKS 4096

/* This process's place in its job. */
typedef struct gcn_job {
    gcn_launcher launcher;
    int rank, ranks; /* 0 <= rank < ranks */
    int local_rank;  /* its rank on its host: the GPU it takes */
    char token[256]; /* what tells this job from an earlier one ("" when nothing does) */
} gcn_job;

/* Reads the job from the environment: env is a NULL-terminated list of
 * "NAME=VALUE" strings, NULL for the process's own.  The launchers are
 * looked for in this order, the first whose rank variable is set winning:
 * torchrun (RANK), Open MPI (OMPI_COMM_WORLD_RANK), Slurm (SLURM_PROCID).
 * torchrun's workers inherit the Slurm variables of the srun that started
 * torchrun, and mpirun's those of the allocation it runs in, so the
 * launcher closest to the process comes first.  The token is GCN_JOB_ID
 * when set, else the launcher's: torchrun's TORCHELASTIC_RUN_ID,
 * MASTER_ADDR, MASTER_PORT and TORCHELASTIC_RESTART_COUNT; Open MPI's
 * OMPI_MCA_ess_base_jobid or PMIX_NAMESPACE; Slurm's SLURM_JOB_ID and
 * SLURM_STEP_ID.
 * No launcher's variables: GCN_ERR_NOT_FOUND, job->launcher NONE.  One of
 * the three variables missing, not a decimal integer, a size outside
 * [1, GCN_MAX_JOB_RANKS], or a rank or local rank outside [0, size):
 * GCN_ERR_INVALID_ARG.  The error, one line naming the variable and its
 * value, goes to err (err_size bytes; before a context exists). */
GCN_API gcn_status gcn_job_from_env(const char *const *env, gcn_job *job, char *err,
                                    size_t err_size);

/* NCCL's id for a communicator across processes, as bytes. */
#define GCN_COMM_ID_BYTES 128
typedef struct gcn_comm_id {
    unsigned char bytes[GCN_COMM_ID_BYTES];
} gcn_comm_id;

/* A new id (ncclGetUniqueId), for rank 0 to hand to the others.  NCCL is
 * loaded as gcn_comm_init loads it; without it (or CUDA),
 * GCN_ERR_UNSUPPORTED. */
GCN_API gcn_status gcn_comm_new_id(gcn_ctx *ctx, gcn_comm_id *id);

/* Makes ctx, a CUDA context, rank `rank` of a communicator of `ranks`
 * processes (or hosts) over NCCL (ncclCommInitRank): every rank calls it
 * with the same id, and it returns once all have.  The collectives then
 * work as with gcn_comm_init; gcn_comm_barrier is an all-reduce of one
 * value waited for on the host.  Errors as gcn_comm_init's. */
GCN_API gcn_status gcn_comm_join(gcn_ctx *ctx, int rank, int ranks, const gcn_comm_id *id);

/* NCCL's asynchronous error of ctx's communicator (ncclCommGetAsyncError):
 * GCN_OK while there is none, or without a communicator; else
 * GCN_ERR_CUDA with NCCL's message in *msg (size bytes).  Safe from any
 * thread, also while the rank's thread is inside a collective. */
GCN_API gcn_status gcn_comm_async_error(gcn_ctx *ctx, char *msg, size_t size);

/* Stops ctx's communicator in the name of rank `failed` (another process's
 * rank, or -1 for none known) with msg, from any thread: as gcn_comm_abort,
 * the rank's collectives return GCN_ERR_STATE ("rank F stopped: msg", or
 * "the communicator stopped: msg" for -1) and
 * its NCCL communicator is aborted (ncclCommAbort), which also releases
 * work of the rank's stream waiting in an NCCL kernel for the failed peer.
 * No-op without a communicator; the first stop's rank and message stay. */
GCN_API void gcn_comm_stop(gcn_ctx *ctx, int failed, const char *msg);

/* The rendezvous of a job and its heartbeats.  Rank 0 writes FILE (through
 * a temporary file renamed into place) with the job's token, its size and
 * the id, and every rank writes FILE.rank<R> every heartbeat interval with
 * the token, a count and its state.  A rank waits for FILE and for every
 * rank's heartbeat, then gets the id; from then on a thread of its own
 * keeps beating and watches the others: a peer whose file says it failed,
 * or whose count has not moved for the timeout, is given up on.  A peer
 * that is alive but stuck keeps beating and is not noticed here. */
typedef struct gcn_rendezvous gcn_rendezvous;

/* What a watcher calls a peer it has given up on (the first only), from
 * its own thread: rank and why ("exited: <its message>", "no heartbeat
 * for 12.0 s: killed, or its host is down"). */
typedef void (*gcn_peer_failed_fn)(int rank, const char *why, void *user);

typedef struct gcn_rendezvous_opts {
    size_t size;
    double timeout_s;     /* to arrive, and the longest silence of a peer (default 60) */
    double beat_s;        /* heartbeat interval (default timeout_s / 10, within [0.05, 1]) */
    gcn_peer_failed_fn on_failure; /* NULL: nothing is called */
    void *user;
} gcn_rendezvous_opts;

GCN_API gcn_rendezvous_opts gcn_rendezvous_default_opts(void);

/* Joins job's rendezvous at path: rank 0 publishes *id, the others fill
 * *id from FILE.  Returns once every rank's heartbeat is there.  Errors,
 * on ctx:
 *  - GCN_ERR_STATE: not every rank came within the timeout (naming the
 *    ones missing, or rank 0 when FILE never appeared);
 *  - GCN_ERR_FORMAT: FILE is from another job (its token differs) and
 *    rank 0 did not replace it within the timeout, or it is not a
 *    rendezvous file;
 *  - GCN_ERR_INVALID_ARG: FILE is of this job but for another number of
 *    ranks;
 *  - GCN_ERR_IO: FILE or a heartbeat cannot be written.
 * Caller frees with gcn_rendezvous_close. */
GCN_API gcn_status gcn_rendezvous_open(gcn_ctx *ctx, const char *path, const gcn_job *job,
                                       const gcn_rendezvous_opts *opts, gcn_comm_id *id,
                                       gcn_rendezvous **out);

/* From now on the watcher also polls ctx's communicator (made with
 * gcn_comm_join) for NCCL's asynchronous errors, and stops it
 * (gcn_comm_stop) on one, or when it gives a peer up, so that the rank's
 * collectives and the work of its stream waiting for the peer return.
 * ctx must outlive r: close r first. */
GCN_API void gcn_rendezvous_attach(gcn_rendezvous *r, gcn_ctx *ctx);

/* The failed peer the watcher named, or -1; why (size bytes) its reason. */
GCN_API int gcn_rendezvous_failed(gcn_rendezvous *r, char *why, size_t size);

/* Waits up to the timeout for the watcher to name a failed peer (after a
 * collective failed without saying which); returns it, or -1. */
GCN_API int gcn_rendezvous_wait_failed(gcn_rendezvous *r, char *why, size_t size);

/* Stops the heartbeat with a last state: ok (the rank finished) or failed
 * with msg (peers name it at once), and frees r.  Accepts NULL and sets *r
 * to NULL.  The files stay: rank 0's next job replaces FILE. */
GCN_API void gcn_rendezvous_close(gcn_rendezvous **r, bool ok, const char *msg);

#ifdef __cplusplus
}
#endif
#endif
