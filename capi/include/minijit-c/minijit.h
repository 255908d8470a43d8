/*===- minijit-c/minijit.h - minijit's C API ----------------------*- C -*-===*\
|* The C interface to minijit, in the manner of LLVM-C and MLIR's C API:     *|
|* opaque handles for graphs, compile options, compiled graphs, devices,    *|
|* device buffers, executables and host tensors; every call returns an      *|
|* mjStatus, and a failed call leaves its message in mjGetLastError() (per  *|
|* thread). No C++ exception and no abort crosses this interface. C99.      *|
|* Threads: different handles may be used from different threads at once;  *|
|* one handle (and what it owns) by one thread at a time.                   *|
|* docs/PYTHON.md describes it and the Python package built on it.          *|
\*===----------------------------------------------------------------------===*/
#ifndef MINIJIT_C_MINIJIT_H
#define MINIJIT_C_MINIJIT_H

#include <stddef.h>
#include <stdint.h>

#if defined(MINIJIT_C_BUILDING)
#define MJ_API __attribute__((visibility("default")))
#else
#define MJ_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status and errors ---------------------------------------------------*/

/** What a call returns. Each error kind is one of minijit's C++ errors. */
typedef enum mjStatus {
  MJ_OK = 0,
  MJ_ERROR_INVALID_ARGUMENT = 1, /**< a null handle, an index out of range, a bad name */
  MJ_ERROR_PARSE = 2,            /**< text that does not parse: "FILE:LINE:COL: error: MSG" */
  MJ_ERROR_GRAPH = 3,            /**< a graph that is not valid, inputs of the wrong shape */
  MJ_ERROR_COMPILE = 4,          /**< the code generator or NVRTC rejected a kernel */
  MJ_ERROR_CUDA = 5,             /**< the driver failed or is missing */
  MJ_ERROR_INTERNAL = 6          /**< anything else (out of host memory, a bug) */
} mjStatus;

/** The message of the last failed call on this thread ("" after none). The
 *  text stays valid until the next failed call on this thread. */
MJ_API const char *mjGetLastError(void);
/** The status of the last failed call on this thread (MJ_OK after none). */
MJ_API mjStatus mjGetLastStatus(void);
/** For a ParseError: its line and column (1-based; 0 when it has none). */
MJ_API void mjGetLastErrorLocation(unsigned *line, unsigned *column);
/** "ok", "invalid argument", "parse error", "graph error", "compile error",
 *  "cuda error", "internal error". */
MJ_API const char *mjStatusName(mjStatus status);
/** minijit's version, "0.1.0". */
MJ_API const char *mjVersion(void);

/* ---- element types, stages -----------------------------------------------*/

typedef enum mjDType {
  MJ_F32 = 0,
  MJ_F16 = 1,
  MJ_BF16 = 2, /**< host buffers hold the upper 16 bits of an f32 */
  MJ_I32 = 3,
  MJ_BOOL = 4, /**< one byte, 0 or 1 */
  MJ_I64 = 5
} mjDType;

/** "f32", "f16", "bf16", "i32", "bool", "i64"; NULL for another value. */
MJ_API const char *mjDTypeName(mjDType dtype);
/** Bytes per element; 0 for another value. */
MJ_API size_t mjDTypeSize(mjDType dtype);

/** The texts of a compiled graph (what `minijit compile --emit=STAGE` prints). */
typedef enum mjStage {
  MJ_STAGE_GRAPH = 0,     /**< the graph after simplification */
  MJ_STAGE_FUSED = 1,     /**< kernels, their ops, schedules and boundary reasons */
  MJ_STAGE_CUDA = 2,      /**< the generated CUDA */
  MJ_STAGE_PTX = 3,       /**< NVRTC's PTX */
  MJ_STAGE_RESOURCES = 4, /**< registers, spills, shared memory, launch geometry */
  MJ_STAGE_DOT = 5,       /**< Graphviz: one colour per kernel */
  MJ_STAGE_LOWERED = 6    /**< the kernels as lowered: loads, ops, stores over index expressions */
} mjStage;

/** The largest rank a tensor may have. */
#define MJ_MAX_RANK 8

/* ---- handles -------------------------------------------------------------*/

typedef struct mjGraph_ *mjGraph;                   /**< a graph (parsed or built) */
typedef struct mjCompileOptions_ *mjCompileOptions; /**< the compiler's switches */
typedef struct mjCompiled_ *mjCompiled;             /**< a compiled graph and its texts */
typedef struct mjDevice_ *mjDevice;                 /**< one GPU */
typedef struct mjBuffer_ *mjBuffer;                 /**< a dense tensor in device memory */
typedef struct mjExecutable_ *mjExecutable;         /**< a graph loaded on a device */
typedef struct mjHostTensors_ *mjHostTensors;       /**< tensors in host memory, owned */
typedef struct mjString_ *mjString;                 /**< a text owned by minijit */

/** A value of a graph (its position in the graph); -1 is none. */
typedef int32_t mjValue;

/** A tensor the caller owns: `data` (host or device memory, as the call
 *  says), dense and row-major, `rank` dims in `dims`. */
typedef struct mjTensorRef {
  void *data;
  mjDType dtype;
  int32_t rank;
  const int64_t *dims;
} mjTensorRef;

/** Named-dimension sizes: `count` names and their sizes ("B" -> 4096). */
typedef struct mjDimBindings {
  size_t count;
  const char *const *names;
  const int64_t *sizes;
} mjDimBindings;

/* ---- strings -------------------------------------------------------------*/

MJ_API const char *mjStringData(mjString s);
MJ_API size_t mjStringLength(mjString s);
MJ_API void mjStringDestroy(mjString s);

/* ---- graphs: parsing -----------------------------------------------------*/

/** Parses `text` (the text format, docs/FORMAT.md) and returns the graph
 *  named `name`, or the first graph when `name` is NULL. `file` names the
 *  text in messages (NULL: "<input>"). MJ_ERROR_PARSE with
 *  "FILE:LINE:COL: error: MSG". */
MJ_API mjStatus mjGraphParse(const char *text, const char *file, const char *name, mjGraph *out);
/** The same for a file's contents. */
MJ_API mjStatus mjGraphParseFile(const char *path, const char *name, mjGraph *out);
/** How many graphs `text` holds (after parsing all of them), and their names
 *  through mjGraphParse's `name`. */
MJ_API mjStatus mjGraphCount(const char *text, const char *file, size_t *count);
MJ_API void mjGraphDestroy(mjGraph g);

/** The graph in the text format; valid until the graph changes or is
 *  destroyed. */
MJ_API mjStatus mjGraphPrint(mjGraph g, const char **text);
MJ_API const char *mjGraphName(mjGraph g);
MJ_API size_t mjGraphNumInputs(mjGraph g);
MJ_API size_t mjGraphNumOutputs(mjGraph g);
MJ_API mjValue mjGraphInput(mjGraph g, size_t i);
MJ_API mjValue mjGraphOutput(mjGraph g, size_t i);

/** What a value is: its name (valid while the graph lives; "" for a
 *  literal), dtype and shape. A named dimension not bound yet has size -1 in
 *  `dims` and its name in mjGraphValueDimName (0 is a size: an empty
 *  dimension). `dims` has room for MJ_MAX_RANK entries. */
MJ_API mjStatus mjGraphValueInfo(mjGraph g, mjValue v, const char **name, mjDType *dtype,
                                 int32_t *rank, int64_t *dims);
/** The name of dimension `d` of value `v` ("B", "B*S"), or "" for a number;
 *  valid until the next call on this thread. */
MJ_API mjStatus mjGraphValueDimName(mjGraph g, mjValue v, int32_t d, const char **name);
/** True when some named dimension of the graph has no size. */
MJ_API int mjGraphHasNamedDims(mjGraph g);

/** The shapes of the graph's outputs for inputs of shapes `inputs` (their
 *  `data` is not read), named dimensions bound from the inputs and from
 *  `dims` (which must agree with them; NULL for none). Writes output i's
 *  rank to outRanks[i] and dims to outDims[i * MJ_MAX_RANK ...]; and its
 *  dtype to outDTypes[i] (NULL to skip). `numOutputs` must be the graph's. */
MJ_API mjStatus mjGraphOutputShapes(mjGraph g, size_t numInputs, const mjTensorRef *inputs,
                                    const mjDimBindings *dims, size_t numOutputs,
                                    int32_t *outRanks, int64_t *outDims, mjDType *outDTypes);

/* ---- graphs: the builder -------------------------------------------------*/

/** An empty graph called `name` (NULL: "main"). */
MJ_API mjStatus mjGraphCreate(const char *name, mjGraph *out);
/** Declares an argument. `dimNames` may be NULL; else dimNames[d], when not
 *  NULL, makes dimension d the named size dimNames[d] (dims[d] ignored). */
MJ_API mjStatus mjGraphAddInput(mjGraph g, const char *name, mjDType dtype, int32_t rank,
                                const int64_t *dims, const char *const *dimNames, mjValue *out);
/** A scalar literal. */
MJ_API mjStatus mjGraphAddConstant(mjGraph g, double value, mjDType dtype, mjValue *out);

/** The attributes of mjGraphAddOp; mjOpAttributesInit gives the defaults
 *  (no axes: every axis; step 1; dtype f32). Which matter depends on the op
 *  (docs/FORMAT.md): reductions `axes`/`keepdim`; argmax, argmin, cumsum,
 *  cumprod, slice, concat, take, take_along_axis and iota `axis`; reshape,
 *  broadcast, iota `shape`; permute `axes` (the permutation); cast and iota
 *  `dtype`; slice `start`/`end`/`step`; pad `before`/`after`/`value`;
 *  cumsum and cumprod `reverse`. */
typedef struct mjOpAttributes {
  int32_t numAxes;      /**< -1: not given */
  const int64_t *axes;
  int keepdim;
  int64_t axis;
  int32_t rank;         /**< of `shape`; -1: not given */
  const int64_t *shape;
  mjDType dtype;
  int64_t start, end, step;
  int32_t numPad;       /**< entries of before and after */
  const int64_t *before, *after;
  double value;
  int reverse;          /**< cumsum, cumprod: nonzero scans from the last element */
} mjOpAttributes;
MJ_API void mjOpAttributesInit(mjOpAttributes *attrs);

/** Appends op `op` (its text-format spelling: "exp", "add", "sum", "matmul",
 *  "reshape", ...) on `operands` with `attrs` (NULL: defaults). Binary ops
 *  and where broadcast (numpy). `name` (NULL: a fresh one) names the value.
 *  MJ_ERROR_INVALID_ARGUMENT for an unknown op (with a "did you mean"),
 *  MJ_ERROR_GRAPH for operands that do not fit. */
MJ_API mjStatus mjGraphAddOp(mjGraph g, const char *op, size_t numOperands,
                             const mjValue *operands, const mjOpAttributes *attrs,
                             const char *name, mjValue *out);
/** Shorthands for mjGraphAddOp. */
MJ_API mjStatus mjGraphAddUnary(mjGraph g, const char *op, mjValue x, mjValue *out);
MJ_API mjStatus mjGraphAddBinary(mjGraph g, const char *op, mjValue a, mjValue b, mjValue *out);
/** numAxes 0: every axis. */
MJ_API mjStatus mjGraphAddReduce(mjGraph g, const char *op, mjValue x, int32_t numAxes,
                                 const int64_t *axes, int keepdim, mjValue *out);
MJ_API mjStatus mjGraphAddMatmul(mjGraph g, mjValue a, mjValue b, mjValue *out);
MJ_API mjStatus mjGraphAddReshape(mjGraph g, mjValue x, int32_t rank, const int64_t *dims,
                                  mjValue *out);
MJ_API mjStatus mjGraphAddPermute(mjGraph g, mjValue x, int32_t rank, const int64_t *perm,
                                  mjValue *out);
MJ_API mjStatus mjGraphAddBroadcast(mjGraph g, mjValue x, int32_t rank, const int64_t *dims,
                                    mjValue *out);
MJ_API mjStatus mjGraphAddCast(mjGraph g, mjValue x, mjDType to, mjValue *out);
/** Marks `v` as a result, named `name` (NULL: its own name). */
MJ_API mjStatus mjGraphSetOutput(mjGraph g, mjValue v, const char *name);
/** Marks `v` as a result written into argument `input` in place. */
MJ_API mjStatus mjGraphSetUpdate(mjGraph g, mjValue input, mjValue v);

/* ---- compiling -----------------------------------------------------------*/

/** Defaults: fusion on, reassociation on, f32 products exact but for large
 *  ones on Hopper, three TF32 products (no less accurate than cuBLAS's SGEMM
 *  where measured) rather than one (allow TF32: off), the tuning database, the
 *  schedules sized for an H200 (or the device given), NVRTC's arch from it. */
MJ_API mjStatus mjCompileOptionsCreate(mjCompileOptions *out);
MJ_API void mjCompileOptionsDestroy(mjCompileOptions o);
MJ_API mjStatus mjCompileOptionsSetFusion(mjCompileOptions o, int on);
MJ_API mjStatus mjCompileOptionsSetReassociate(mjCompileOptions o, int on);
/** f32 matmuls may run on tensor cores in TF32 (torch's allow_tf32). */
MJ_API mjStatus mjCompileOptionsSetAllowTf32(mjCompileOptions o, int on);
/** Large f32 matmuls run as three TF32 products ("3xTF32") on Hopper, the
 *  default; 0 keeps every f32 product on the CUDA cores, exactly f32. */
MJ_API mjStatus mjCompileOptionsSetTf32x3(mjCompileOptions o, int on);
/** NVRTC's target ("sm_90", "sm_90a"); NULL or "": the device's. A spelling
 *  that is not a target ("90", "sm_80a") is an error. */
MJ_API mjStatus mjCompileOptionsSetArch(mjCompileOptions o, const char *arch);
/** Use the tuning database's schedules (on by default). */
MJ_API mjStatus mjCompileOptionsSetTuning(mjCompileOptions o, int on);
/** Hand-set schedule parameters ("tpr=64,vec=4"); NULL or "": none. Text
 * that does not parse (an unknown key, a value not an integer) is an error. */
MJ_API mjStatus mjCompileOptionsSetSchedule(mjCompileOptions o, const char *schedule);
/** NVRTC threads (0: one per core). */
MJ_API mjStatus mjCompileOptionsSetThreads(mjCompileOptions o, unsigned threads);
/** The last stage to run (MJ_STAGE_CUDA: no NVRTC). */
MJ_API mjStatus mjCompileOptionsSetStopAfter(mjCompileOptions o, mjStage stage);
/** Size the schedules for `device` and compile for its architecture. */
MJ_API mjStatus mjCompileOptionsSetDevice(mjCompileOptions o, mjDevice device);

/** Compiles `g` (options NULL: defaults), its named dimensions bound by
 *  `dims` (NULL: none; a graph with unbound names is a MJ_ERROR_GRAPH). */
MJ_API mjStatus mjCompile(mjGraph g, mjCompileOptions options, const mjDimBindings *dims,
                          mjCompiled *out);
MJ_API void mjCompiledDestroy(mjCompiled c);
/** The text of `stage`, valid while `c` lives; MJ_ERROR_INVALID_ARGUMENT for
 *  a stage the compile stopped before. */
MJ_API mjStatus mjCompiledText(mjCompiled c, mjStage stage, const char **text);
/** Kernels (launches per run). */
MJ_API size_t mjCompiledNumKernels(mjCompiled c);
/** Kernel `k` in launch order: its entry point, its schedule in words, and
 *  the bytes it reads and writes. Strings valid while `c` lives. */
MJ_API mjStatus mjCompiledKernel(mjCompiled c, size_t k, const char **name,
                                 const char **schedule, int64_t *bytesRead,
                                 int64_t *bytesWritten);

/* ---- devices and device memory -------------------------------------------*/

/** GPUs the driver reports; MJ_ERROR_CUDA "no CUDA driver found ..." without
 *  a driver. */
MJ_API mjStatus mjDeviceCount(int *count);
/** Opens GPU `ordinal`. */
MJ_API mjStatus mjDeviceOpen(int ordinal, mjDevice *out);
MJ_API void mjDeviceDestroy(mjDevice d);
/** Its name ("NVIDIA H200"), valid while `d` lives. */
MJ_API const char *mjDeviceName(mjDevice d);
MJ_API int mjDeviceOrdinal(mjDevice d);
/** Compute capability (9, 0), SMs, and bytes of memory. */
MJ_API mjStatus mjDeviceProperties(mjDevice d, int *major, int *minor, int *sms,
                                   size_t *totalBytes);
/** Waits for all work on the device. */
MJ_API mjStatus mjDeviceSynchronize(mjDevice d);

/** An uninitialised device tensor, from the device's caching allocator. */
MJ_API mjStatus mjBufferCreate(mjDevice d, mjDType dtype, int32_t rank, const int64_t *dims,
                               mjBuffer *out);
MJ_API void mjBufferDestroy(mjBuffer b);
/** Its device address (a CUdeviceptr). */
MJ_API void *mjBufferPointer(mjBuffer b);
/** Copies `bytes` (the tensor's size) from host memory in, and waits. */
MJ_API mjStatus mjBufferWrite(mjBuffer b, const void *host, size_t bytes);
/** Copies the tensor out to host memory, and waits. */
MJ_API mjStatus mjBufferRead(mjBuffer b, void *host, size_t bytes);

/* ---- executables ---------------------------------------------------------*/

/** Compiles `g` for `d` (options NULL: defaults; their device is replaced by
 *  `d`) and loads it. A graph with named dimensions is compiled per binding,
 *  on the first run of each. */
MJ_API mjStatus mjExecutableCreate(mjDevice d, mjGraph g, mjCompileOptions options,
                                   mjExecutable *out);
/** Loads an existing compile (of a graph without unbound names) on `d`:
 *  MJ_ERROR_CUDA when it was compiled for another architecture. */
MJ_API mjStatus mjExecutableLoad(mjDevice d, mjCompiled c, mjExecutable *out);
MJ_API void mjExecutableDestroy(mjExecutable e);
/** CUDA-graph replay of the launches (one driver call per run). */
MJ_API mjStatus mjExecutableSetGraphReplay(mjExecutable e, int on);
/** Enqueues a run on `stream` (a CUstream; NULL is the legacy default
 *  stream) without waiting. `inputs` and `outputs` are device memory of the
 *  executable's device the caller owns, one per graph input and output, of
 *  the graph's dtypes and shapes (16-byte aligned, dense, row-major); named
 *  dimensions are bound from the inputs' shapes. */
MJ_API mjStatus mjExecutableEnqueue(mjExecutable e, size_t numInputs, const mjTensorRef *inputs,
                                    size_t numOutputs, const mjTensorRef *outputs, void *stream);
/** The same for DLPack tensors (DLManagedTensor*, of DLPack 0.6 or later),
 *  borrowed: their deleters are not called. Checked as minijit's fromDLPack
 *  checks them (device, dtype, row-major strides, alignment). */
MJ_API mjStatus mjExecutableEnqueueDLPack(mjExecutable e, size_t numInputs, void *const *inputs,
                                          size_t numOutputs, void *const *outputs, void *stream);
/** mjExecutableEnqueue on the executable's own stream (a non-blocking one:
 *  the caller's work on the tensors must be finished), then waits. */
MJ_API mjStatus mjExecutableRun(mjExecutable e, size_t numInputs, const mjTensorRef *inputs,
                                size_t numOutputs, const mjTensorRef *outputs);
/** Waits for the executable's own stream. */
MJ_API mjStatus mjExecutableSynchronize(mjExecutable e);

/** Fused against unfused on the GPU (`minijit compare`): each compiled,
 *  run on seeded random inputs, checked against the CPU reference and
 *  profiled; the result is the profile JSON (docs/PROFILE_JSON.md) with a
 *  run labelled "fused" and one "unfused", and per run a "check" entry. */
MJ_API mjStatus mjCompare(mjDevice d, mjGraph g, uint64_t seed, const mjDimBindings *dims,
                          mjString *json);

/* ---- the CPU reference ---------------------------------------------------*/

/** Evaluates `g` on host tensors (one per input, in order; copied), named
 *  dimensions bound from their shapes and `dims` (NULL: none). The outputs
 *  are owned by `*out`. */
MJ_API mjStatus mjEvaluate(mjGraph g, size_t numInputs, const mjTensorRef *inputs,
                           const mjDimBindings *dims, mjHostTensors *out);
/** mjEvaluate, the outputs written into the caller's host buffers
 *  `outputs` (one per graph output, of its dtype and shape: checked). */
MJ_API mjStatus mjEvaluateInto(mjGraph g, size_t numInputs, const mjTensorRef *inputs,
                               const mjDimBindings *dims, size_t numOutputs,
                               const mjTensorRef *outputs);
/** One seeded random tensor per input of `g` (named dimensions from `dims`):
 *  the inputs minijit's CLI and tests use. */
MJ_API mjStatus mjRandomInputs(mjGraph g, uint64_t seed, const mjDimBindings *dims,
                               mjHostTensors *out);
MJ_API size_t mjHostTensorsCount(mjHostTensors t);
/** Tensor `i`: its data (valid while `t` lives), dtype and shape (`dims`
 *  points into `t`). */
MJ_API mjStatus mjHostTensorsGet(mjHostTensors t, size_t i, mjTensorRef *out);
MJ_API void mjHostTensorsDestroy(mjHostTensors t);

#ifdef __cplusplus
}
#endif

#endif /* MINIJIT_C_MINIJIT_H */
