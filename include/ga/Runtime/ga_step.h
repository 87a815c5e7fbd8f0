/*===- ga_step.h - The C ABI of a compiled training step ---------*- C -*-===*
 *
 * Part of ga-opt: exact gradient accumulation and data parallelism.
 *
 *===----------------------------------------------------------------------===*
 *
 * A step library (`ga-compile FILE.mlir -o libstep.so`) exports two symbols:
 *
 *   const char *ga_step_signature(void);
 *   int32_t ga_step_run(const void *const *inputs, void *const *outputs,
 *                       ga_status *status);
 *
 * `ga_step_signature` returns the step's signature as text (format below):
 * a caller reads the argument and result shapes from it and checks what it
 * passes. `ga_step_run` runs the step once:
 *
 * - `inputs[i]` points to argument i: a contiguous, C-order buffer of
 *   exactly the shape and element type the signature gives (read only).
 * - `outputs[i]` points to a caller-provided contiguous, C-order buffer for
 *   result i, which the step fills; a training loop passes the same buffers
 *   at every step. Outputs must not overlap the inputs.
 * - The return value is GA_OK (0) or an error code; `status` (may be NULL)
 *   then holds the same code and a one-sentence message. A step that
 *   returns an error has written no valid result.
 *
 * A library compiled for r data-parallel ranks runs inside an MPI run of r
 * processes (ga_collectives_start joins it); in any other world it returns
 * GA_ERROR_WORLD_SIZE without running. One step runs at a time in a
 * process (the error record is shared).
 *
 * Signature text, version 2: one record per line, fields separated by one
 * space.
 *
 *   ga-step 2
 *   entry NAME
 *   ranks R
 *   input I DTYPE SHAPE
 *   name I NAME
 *   result I DTYPE SHAPE ROLE
 *
 * A `name` record (version 2 only) names input I, listed before it: the
 * parameter's name in the model it was imported from (a PyTorch module's
 * state_dict key; no whitespace); unnamed inputs have none. A library none
 * of whose inputs has a name records version 1, which has no `name`
 * records, so that readers of version 1 read it.
 *
 * DTYPE is f32, f64, i32 or i64; SHAPE is the dimensions joined by 'x'
 * ("4x3") or "scalar" for a 0-d tensor; ROLE is loss, gradient or aux. The
 * inputs and results are listed in order, numbered from 0.
 *
 * The runtime (libga_runtime.so, which every step library links) also
 * exports the functions a step library calls around the compiled code; a
 * caller does not call them.
 *
 *===----------------------------------------------------------------------===*/

#ifndef GA_RUNTIME_GA_STEP_H
#define GA_RUNTIME_GA_STEP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the signature text and of this ABI. */
#define GA_STEP_ABI_VERSION 2

/* Error codes of a step. */
enum {
  GA_OK = 0,
  /* A cross-entropy label that is neither ignore_index nor in [0, V). */
  GA_ERROR_LABEL_OUT_OF_RANGE = 1,
  /* The library runs on R ranks; the process is in a world of another
   * size. */
  GA_ERROR_WORLD_SIZE = 2,
  /* A NULL input or output pointer. */
  GA_ERROR_INVALID_ARGUMENT = 3,
  /* The library's signature text is malformed (a corrupt library). */
  GA_ERROR_SIGNATURE = 4,
  /* A step compiled for CUDA: no CUDA driver or device, or a CUDA call
   * failed (the message names the call and CUDA's error). */
  GA_ERROR_DEVICE = 5,
  /* A check that the model's front end put into the step (`cf.assert`,
   * such as torch-mlir's index checks around gathers) failed; the message
   * gives the check's text, its source location and the first failing
   * position. */
  GA_ERROR_ASSERTION = 6
};

/* The outcome of a step: a code and, unless GA_OK, a message. */
typedef struct ga_status {
  int32_t code;
  char message[1024];
} ga_status;

/* Exported by a step library. */
const char *ga_step_signature(void);
int32_t ga_step_run(const void *const *inputs, void *const *outputs,
                    ga_status *status);

/* Called by a step library before the compiled code: checks the world size
 * and the pointers. Returns GA_OK or fills `status`. */
int32_t ga_step_enter(const char *signature, const void *const *inputs,
                      void *const *outputs, ga_status *status);

/* Called by a step library after the compiled code: `results` holds the
 * memref descriptors the code returned (allocated pointer, aligned pointer,
 * offset, sizes, strides; 8 bytes each, result after result). Copies every
 * result into its output buffer, frees the step's own buffers and takes the
 * step's runtime error, if any. */
int32_t ga_step_leave(const char *signature, const int64_t *results,
                      const void *const *inputs, void *const *outputs,
                      ga_status *status);

/* Memory: the bytes of the buffers the compiled code allocates (every
 * intermediate, and the results until ga_step_leave copies them out; not
 * the caller's inputs and outputs). `current_bytes` is held now;
 * `peak_bytes` is the most held at once since the process started or the
 * last ga_memory_reset_peak; `allocations` counts them all. Process-wide. */
typedef struct ga_memory {
  int64_t current_bytes;
  int64_t peak_bytes;
  int64_t allocations;
} ga_memory;
void ga_memory_stats(ga_memory *out);
void ga_memory_reset_peak(void);

/* Data parallelism. Joins the MPI run (when launched by mpirun, or when
 * `ranks` > 1) and checks that it has exactly `ranks` processes; `program`
 * and `launcher` name the program and the command in the error message
 * ("`mpirun -np R LAUNCHER ...`"). Returns GA_OK or fills `status`. */
int32_t ga_collectives_start(int64_t ranks, const char *program,
                             const char *launcher, ga_status *status);
/* Leaves the MPI run, if ga_collectives_start joined one. */
void ga_collectives_stop(void);
/* This process's rank (0 outside an MPI run) and the world size. */
int32_t ga_world_rank(void);
int32_t ga_world_size(void);
/* Copies `bytes` bytes at `data` from rank 0 to every rank (nothing outside
 * an MPI run). Returns 0, or nonzero when the broadcast failed. The CUDA
 * runtime sends NCCL's communicator id with it. */
int32_t ga_broadcast_bytes(void *data, int64_t bytes);
/* Gathers `bytes` bytes at `data` from every rank into `out` (ranks x
 * `bytes` bytes, rank i's at offset i x `bytes`; a copy outside an MPI
 * run). Returns 0, or nonzero when the gather failed. ga_opt's Python
 * step gathers sharded parameters and optimizer state with it. */
int32_t ga_all_gather_bytes(const void *data, int64_t bytes, void *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GA_RUNTIME_GA_STEP_H */
