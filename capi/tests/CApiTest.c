/*===- capi/tests/CApiTest.c - the C API, from C --------------------------===*\
|* Compiled as C99: graphs from text and from the builder, every stage's     *|
|* text, the CPU reference checked against values computed here, errors     *|
|* with their messages, and a device opened with or without a driver. With  *|
|* a GPU it also runs a compiled graph on buffers of the C API and checks    *|
|* the result against the CPU reference; without one that part is SKIPPED.  *|
\*===----------------------------------------------------------------------===*/
#include "minijit-c/minijit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int Failures = 0;

#define CHECK(cond)                                                                               \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond,    \
              mjGetLastError());                                                                  \
      ++Failures;                                                                                 \
    }                                                                                             \
  } while (0)

#define CHECK_OK(call) CHECK((call) == MJ_OK)

static const char *SoftmaxText = "graph softmax(%x: f32[2, 4]) {\n"
                                 "  %m = max %x axes=[1] keepdim=true\n"
                                 "  %d = sub %x, %m\n"
                                 "  %e = exp %d\n"
                                 "  %s = sum %e axes=[1] keepdim=true\n"
                                 "  %y = div %e, %s\n"
                                 "  return %y\n"
                                 "}\n";

static int contains(const char *text, const char *part) {
  return text && strstr(text, part) != NULL;
}

/* Softmax of known rows, against the values computed here in double. */
static void testParseAndEvaluate(void) {
  mjGraph g = NULL;
  const char *printed = NULL;
  float x[8] = {1, 2, 3, 4, -1, 0, 1, 0.5f};
  int64_t dims[2] = {2, 4};
  mjTensorRef in;
  mjTensorRef out;
  mjHostTensors outs = NULL;
  int r, c;
  CHECK_OK(mjGraphParse(SoftmaxText, "softmax.mj", NULL, &g));
  CHECK(strcmp(mjGraphName(g), "softmax") == 0);
  CHECK(mjGraphNumInputs(g) == 1 && mjGraphNumOutputs(g) == 1);
  CHECK_OK(mjGraphPrint(g, &printed));
  CHECK(contains(printed, "graph softmax(%x: f32[2, 4])"));
  CHECK(contains(printed, "exp %d"));

  in.data = x;
  in.dtype = MJ_F32;
  in.rank = 2;
  in.dims = dims;
  CHECK_OK(mjEvaluate(g, 1, &in, NULL, &outs));
  CHECK(mjHostTensorsCount(outs) == 1);
  CHECK_OK(mjHostTensorsGet(outs, 0, &out));
  CHECK(out.dtype == MJ_F32 && out.rank == 2 && out.dims[0] == 2 && out.dims[1] == 4);
  for (r = 0; r < 2; ++r) {
    double m = x[r * 4], s = 0;
    for (c = 1; c < 4; ++c)
      m = x[r * 4 + c] > m ? x[r * 4 + c] : m;
    for (c = 0; c < 4; ++c)
      s += exp(x[r * 4 + c] - m);
    for (c = 0; c < 4; ++c) {
      double want = exp(x[r * 4 + c] - m) / s;
      double got = ((const float *)out.data)[r * 4 + c];
      CHECK(fabs(got - want) <= 1e-6 * fabs(want) + 1e-7);
    }
  }
  mjHostTensorsDestroy(outs);

  /* The same written into a buffer of the caller's; a buffer of another
     shape is refused. */
  {
    float y[8];
    int64_t wrong[2] = {4, 2};
    mjTensorRef into = in;
    into.data = y;
    CHECK_OK(mjEvaluateInto(g, 1, &in, NULL, 1, &into));
    for (r = 0; r < 2; ++r) {
      double s = 0;
      for (c = 0; c < 4; ++c)
        s += y[r * 4 + c];
      CHECK(fabs(s - 1) < 1e-6);
    }
    CHECK(y[3] > y[2] && y[2] > y[1] && y[1] > y[0]);
    into.dims = wrong;
    CHECK(mjEvaluateInto(g, 1, &in, NULL, 1, &into) == MJ_ERROR_GRAPH);
    CHECK(contains(mjGetLastError(), "output 0 is f32[2, 4], the buffer given is f32[4, 2]"));
  }
  mjGraphDestroy(g);
}

/* Every stage's text of a compile (NVRTC runs for ptx and resources). */
static void testStages(void) {
  mjGraph g = NULL;
  mjCompileOptions opt = NULL;
  mjCompiled c = NULL, unfused = NULL;
  const char *text = NULL, *name = NULL, *schedule = NULL;
  int64_t bytesRead = 0, bytesWritten = 0;
  CHECK_OK(mjGraphParse(SoftmaxText, NULL, "softmax", &g));
  CHECK_OK(mjCompile(g, NULL, NULL, &c));
  CHECK(mjCompiledNumKernels(c) == 1);
  CHECK_OK(mjCompiledText(c, MJ_STAGE_GRAPH, &text));
  CHECK(contains(text, "graph softmax"));
  CHECK_OK(mjCompiledText(c, MJ_STAGE_FUSED, &text));
  CHECK(contains(text, "kernel"));
  CHECK_OK(mjCompiledText(c, MJ_STAGE_CUDA, &text));
  CHECK(contains(text, "extern \"C\" __global__"));
  CHECK_OK(mjCompiledText(c, MJ_STAGE_PTX, &text));
  CHECK(contains(text, ".entry"));
  CHECK_OK(mjCompiledText(c, MJ_STAGE_RESOURCES, &text));
  CHECK(contains(text, "regs") && contains(text, "spill"));
  CHECK_OK(mjCompiledText(c, MJ_STAGE_DOT, &text));
  CHECK(contains(text, "digraph"));
  CHECK_OK(mjCompiledText(c, MJ_STAGE_LOWERED, &text));
  CHECK(contains(text, "lowered") && contains(text, "store"));
  CHECK(mjCompiledText(c, (mjStage)9, &text) == MJ_ERROR_INVALID_ARGUMENT);
  CHECK_OK(mjCompiledKernel(c, 0, &name, &schedule, &bytesRead, &bytesWritten));
  CHECK(name && strlen(name) > 0 && schedule && strlen(schedule) > 0);
  CHECK(bytesRead == 2 * 4 * 4 && bytesWritten == 2 * 4 * 4);
  CHECK(mjCompiledKernel(c, 1, &name, NULL, NULL, NULL) == MJ_ERROR_INVALID_ARGUMENT);

  /* Without fusion each reduction and elementwise op is a kernel; stopping
     after CUDA leaves the PTX out. */
  CHECK_OK(mjCompileOptionsCreate(&opt));
  /* the target is parsed where it is set */
  CHECK(mjCompileOptionsSetArch(opt, "sm80") == MJ_ERROR_COMPILE);
  CHECK(contains(mjGetLastError(), "'sm80' is not a GPU target"));
  CHECK_OK(mjCompileOptionsSetArch(opt, "sm_90a"));
  CHECK_OK(mjCompileOptionsSetArch(opt, NULL));
  CHECK_OK(mjCompileOptionsSetFusion(opt, 0));
  CHECK_OK(mjCompileOptionsSetStopAfter(opt, MJ_STAGE_CUDA));
  CHECK_OK(mjCompile(g, opt, NULL, &unfused));
  CHECK(mjCompiledNumKernels(unfused) > 1);
  CHECK_OK(mjCompiledText(unfused, MJ_STAGE_CUDA, &text));
  CHECK(mjCompiledText(unfused, MJ_STAGE_PTX, &text) == MJ_ERROR_INVALID_ARGUMENT);
  CHECK(contains(mjGetLastError(), "stopped before stage ptx"));
  mjCompiledDestroy(unfused);
  mjCompileOptionsDestroy(opt);
  mjCompiledDestroy(c);
  mjGraphDestroy(g);
}

/* y = sum(relu(a @ b) * 2, axes=[1]) built op by op, evaluated on known values. */
static void testBuilder(void) {
  mjGraph g = NULL;
  mjValue a, b, p, r, two, y, s;
  int64_t adims[2] = {2, 3}, bdims[2] = {3, 2}, axes[1] = {1};
  float av[6] = {1, -2, 3, 0.5f, 1, -1}, bv[6] = {1, 2, -1, 0, 2, 1};
  mjTensorRef ins[2];
  mjTensorRef out;
  mjHostTensors outs = NULL;
  const char *printed = NULL;
  int i, j, k;
  CHECK_OK(mjGraphCreate("built", &g));
  CHECK_OK(mjGraphAddInput(g, "a", MJ_F32, 2, adims, NULL, &a));
  CHECK_OK(mjGraphAddInput(g, "b", MJ_F32, 2, bdims, NULL, &b));
  CHECK_OK(mjGraphAddMatmul(g, a, b, &p));
  CHECK_OK(mjGraphAddUnary(g, "relu", p, &r));
  CHECK_OK(mjGraphAddConstant(g, 2.0, MJ_F32, &two));
  CHECK_OK(mjGraphAddBinary(g, "mul", r, two, &y));
  CHECK_OK(mjGraphAddReduce(g, "sum", y, 1, axes, 0, &s));
  CHECK_OK(mjGraphSetOutput(g, s, "s"));
  {
    /* argmax takes its one axis as `axis`, as in the text format. */
    mjOpAttributes attrs;
    mjValue am;
    mjOpAttributesInit(&attrs);
    attrs.axis = 1;
    CHECK_OK(mjGraphAddOp(g, "argmax", 1, &a, &attrs, "am", &am));
    CHECK_OK(mjGraphSetOutput(g, am, NULL));
  }
  CHECK_OK(mjGraphPrint(g, &printed));
  CHECK(contains(printed, "graph built(%a: f32[2, 3], %b: f32[3, 2])"));
  CHECK(contains(printed, "matmul %a, %b"));
  CHECK(contains(printed, "return %s"));

  ins[0].data = av;
  ins[0].dtype = MJ_F32;
  ins[0].rank = 2;
  ins[0].dims = adims;
  ins[1].data = bv;
  ins[1].dtype = MJ_F32;
  ins[1].rank = 2;
  ins[1].dims = bdims;
  CHECK_OK(mjEvaluate(g, 2, ins, NULL, &outs));
  CHECK_OK(mjHostTensorsGet(outs, 0, &out));
  CHECK(out.rank == 1 && out.dims[0] == 2);
  for (i = 0; i < 2; ++i) {
    double want = 0;
    for (j = 0; j < 2; ++j) {
      double dot = 0;
      for (k = 0; k < 3; ++k)
        dot += av[i * 3 + k] * bv[k * 2 + j];
      want += 2 * (dot > 0 ? dot : 0);
    }
    CHECK(fabs(((const float *)out.data)[i] - want) < 1e-5);
  }
  CHECK_OK(mjHostTensorsGet(outs, 1, &out));
  CHECK(out.dtype == MJ_I32 && out.rank == 1 && out.dims[0] == 2);
  CHECK(((const int32_t *)out.data)[0] == 2 && ((const int32_t *)out.data)[1] == 1);
  mjHostTensorsDestroy(outs);
  mjGraphDestroy(g);
}

/* Named dimensions: the output shapes and the evaluation follow the inputs. */
static void testNamedDims(void) {
  const char *text = "graph rows(%x: f32[B, 3]) {\n"
                     "  %s = sum %x axes=[1]\n"
                     "  return %s\n"
                     "}\n";
  mjGraph g = NULL;
  const char *dimName = NULL;
  int64_t dims[2] = {5, 3};
  float x[15];
  mjTensorRef in, out;
  int32_t rank = 0;
  int64_t outDims[MJ_MAX_RANK];
  mjDType dtype = MJ_I32;
  mjHostTensors outs = NULL;
  const char *names[1] = {"B"};
  int64_t sizes[1] = {4};
  mjDimBindings wrong;
  int i;
  for (i = 0; i < 15; ++i)
    x[i] = (float)i;
  CHECK_OK(mjGraphParse(text, NULL, NULL, &g));
  CHECK(mjGraphHasNamedDims(g));
  CHECK_OK(mjGraphValueDimName(g, mjGraphInput(g, 0), 0, &dimName));
  CHECK(strcmp(dimName, "B") == 0);
  in.data = x;
  in.dtype = MJ_F32;
  in.rank = 2;
  in.dims = dims;
  CHECK_OK(mjGraphOutputShapes(g, 1, &in, NULL, 1, &rank, outDims, &dtype));
  CHECK(rank == 1 && outDims[0] == 5 && dtype == MJ_F32);
  CHECK_OK(mjEvaluate(g, 1, &in, NULL, &outs));
  CHECK_OK(mjHostTensorsGet(outs, 0, &out));
  CHECK(out.dims[0] == 5);
  for (i = 0; i < 5; ++i)
    CHECK(((const float *)out.data)[i] == (float)(9 * i + 3));
  mjHostTensorsDestroy(outs);

  /* A binding that disagrees with the inputs. */
  wrong.count = 1;
  wrong.names = names;
  wrong.sizes = sizes;
  CHECK(mjGraphOutputShapes(g, 1, &in, &wrong, 1, &rank, outDims, NULL) == MJ_ERROR_GRAPH);
  CHECK(contains(mjGetLastError(), "B is given as 4 but the inputs make it 5"));
  /* Compiling needs the sizes. */
  {
    mjCompiled c = NULL;
    CHECK(mjCompile(g, NULL, NULL, &c) != MJ_OK);
    CHECK_OK(mjCompile(g, NULL, &wrong, &c));
    CHECK(mjCompiledNumKernels(c) == 1);
    mjCompiledDestroy(c);
  }
  mjGraphDestroy(g);
}

/* An empty batch (B = 0): a null data pointer is taken for no element, the
 * outputs are empty or zeros, and the compile of the bound graph launches
 * only the kernel that writes the zeros. An unbound name reads -1. */
static void testEmptyBatch(void) {
  const char *text = "graph rows(%x: f32[B, 3]) {\n"
                     "  %e = exp %x\n"
                     "  %s = sum %x axes=[0]\n"
                     "  return %e, %s\n"
                     "}\n";
  mjGraph g = NULL;
  int64_t dims[2] = {0, 3}, info[MJ_MAX_RANK];
  int32_t rank = 0;
  mjTensorRef in, out;
  mjHostTensors outs = NULL;
  const char *names[1] = {"B"};
  int64_t sizes[1] = {0};
  mjDimBindings zero;
  int i;
  CHECK_OK(mjGraphParse(text, NULL, NULL, &g));
  CHECK_OK(mjGraphValueInfo(g, mjGraphInput(g, 0), NULL, NULL, &rank, info));
  CHECK(rank == 2 && info[0] == -1 && info[1] == 3);
  in.data = NULL;
  in.dtype = MJ_F32;
  in.rank = 2;
  in.dims = dims;
  CHECK_OK(mjEvaluate(g, 1, &in, NULL, &outs));
  CHECK_OK(mjHostTensorsGet(outs, 0, &out));
  CHECK(out.rank == 2 && out.dims[0] == 0 && out.dims[1] == 3);
  CHECK_OK(mjHostTensorsGet(outs, 1, &out));
  CHECK(out.rank == 1 && out.dims[0] == 3);
  for (i = 0; i < 3; ++i)
    CHECK(((const float *)out.data)[i] == 0.0f);
  mjHostTensorsDestroy(outs);
  zero.count = 1;
  zero.names = names;
  zero.sizes = sizes;
  {
    mjCompiled c = NULL;
    mjCompileOptions o = NULL;
    CHECK_OK(mjCompileOptionsCreate(&o));
    CHECK_OK(mjCompileOptionsSetStopAfter(o, MJ_STAGE_FUSED));
    CHECK_OK(mjCompile(g, o, &zero, &c));
    CHECK(mjCompiledNumKernels(c) == 1);
    mjCompiledDestroy(c);
    mjCompileOptionsDestroy(o);
  }
  mjGraphDestroy(g);
}

/* Errors come back as a status and a message; nothing crashes. */
static void testErrors(void) {
  mjGraph g = NULL;
  mjValue x, y;
  int64_t dims[2] = {4, 3}, other[2] = {2, 3};
  unsigned line = 0, column = 0;
  float data[6] = {0};
  mjTensorRef in;
  mjHostTensors outs = NULL;

  CHECK(mjGraphParse("graph f(%x: f32[4]) {\n  %y = exq %x\n  return %y\n}\n", "bad.mj", NULL,
                     &g) == MJ_ERROR_PARSE);
  CHECK(g == NULL);
  CHECK(mjGetLastStatus() == MJ_ERROR_PARSE);
  CHECK(contains(mjGetLastError(), "bad.mj:2:"));
  mjGetLastErrorLocation(&line, &column);
  CHECK(line == 2 && column > 0);
  CHECK(mjGraphParse(SoftmaxText, NULL, "nothere", &g) == MJ_ERROR_INVALID_ARGUMENT);
  CHECK(contains(mjGetLastError(), "no graph named 'nothere'"));
  CHECK(mjGraphParse(NULL, NULL, NULL, &g) == MJ_ERROR_INVALID_ARGUMENT);
  CHECK(mjGraphParseFile("/nonexistent/file.mj", NULL, &g) == MJ_ERROR_PARSE);
  CHECK(strcmp(mjStatusName(MJ_ERROR_PARSE), "parse error") == 0);

  CHECK_OK(mjGraphCreate("errors", &g));
  CHECK_OK(mjGraphAddInput(g, "x", MJ_F32, 2, dims, NULL, &x));
  CHECK(mjGraphAddUnary(g, "exq", x, &y) == MJ_ERROR_INVALID_ARGUMENT);
  CHECK(contains(mjGetLastError(), "unknown op 'exq'"));
  CHECK(contains(mjGetLastError(), "did you mean 'exp'"));
  CHECK(mjGraphAddUnary(g, "exp", 42, &y) == MJ_ERROR_INVALID_ARGUMENT);
  CHECK(mjGraphAddReshape(g, x, 2, other, &y) == MJ_ERROR_GRAPH);
  CHECK(contains(mjGetLastError(), "reshape"));
  CHECK(mjGraphAddInput(g, "x", (mjDType)17, 2, dims, NULL, &y) == MJ_ERROR_INVALID_ARGUMENT);
  CHECK(mjGraphSetOutput(NULL, 0, NULL) == MJ_ERROR_INVALID_ARGUMENT);
  CHECK_OK(mjGraphAddUnary(g, "exp", x, &y));
  CHECK_OK(mjGraphSetOutput(g, y, NULL));

  /* Inputs of the wrong shape or count. */
  in.data = data;
  in.dtype = MJ_F32;
  in.rank = 2;
  in.dims = other;
  CHECK(mjEvaluate(g, 1, &in, NULL, &outs) == MJ_ERROR_GRAPH);
  CHECK(contains(mjGetLastError(), "[2, 3]"));
  CHECK(mjEvaluate(g, 0, NULL, NULL, &outs) == MJ_ERROR_GRAPH);
  CHECK(contains(mjGetLastError(), "has 1 inputs, 0 were given"));
  mjGraphDestroy(g);
}

/* A device opens only with a driver; without one the status says why. With
   a GPU a compiled softmax runs on buffers of the C API and matches the CPU
   reference. */
static void testDevice(void) {
  mjDevice d = NULL;
  mjGraph g = NULL;
  mjExecutable e = NULL;
  mjHostTensors ins = NULL, ref = NULL;
  mjTensorRef x, r, bx, by;
  mjBuffer bufX = NULL, bufY = NULL;
  float y[8];
  int count = -1, i;
  mjStatus s = mjDeviceOpen(0, &d);
  if (s != MJ_OK) {
    CHECK(s == MJ_ERROR_CUDA);
    CHECK(strlen(mjGetLastError()) > 0);
    CHECK(d == NULL);
    if (contains(mjGetLastError(), "no CUDA driver found"))
      CHECK(mjDeviceCount(&count) == MJ_ERROR_CUDA);
    printf("SKIPPED: the GPU part (%s)\n", mjGetLastError());
    return;
  }
  CHECK_OK(mjDeviceCount(&count));
  CHECK(count >= 1);
  CHECK_OK(mjGraphParse(SoftmaxText, NULL, NULL, &g));
  CHECK_OK(mjExecutableCreate(d, g, NULL, &e));
  CHECK_OK(mjRandomInputs(g, 7, NULL, &ins));
  CHECK_OK(mjHostTensorsGet(ins, 0, &x));
  CHECK_OK(mjEvaluate(g, 1, &x, NULL, &ref));
  CHECK_OK(mjHostTensorsGet(ref, 0, &r));
  CHECK_OK(mjBufferCreate(d, MJ_F32, 2, x.dims, &bufX));
  CHECK_OK(mjBufferCreate(d, MJ_F32, 2, x.dims, &bufY));
  CHECK_OK(mjBufferWrite(bufX, x.data, 8 * sizeof(float)));
  bx = x;
  bx.data = mjBufferPointer(bufX);
  by = x;
  by.data = mjBufferPointer(bufY);
  CHECK_OK(mjExecutableRun(e, 1, &bx, 1, &by));
  CHECK_OK(mjBufferRead(bufY, y, sizeof y));
  for (i = 0; i < 8; ++i)
    CHECK(fabs(y[i] - ((const float *)r.data)[i]) <= 1e-5 * fabs(((const float *)r.data)[i]) + 1e-7);
  /* The same on the legacy default stream, then a device-wide wait. */
  memset(y, 0, sizeof y);
  CHECK_OK(mjExecutableEnqueue(e, 1, &bx, 1, &by, NULL));
  CHECK_OK(mjDeviceSynchronize(d));
  CHECK_OK(mjBufferRead(bufY, y, sizeof y));
  CHECK(fabs(y[0] - ((const float *)r.data)[0]) <= 1e-5);
  /* An input of the wrong shape is refused before anything runs. */
  bx.rank = 1;
  CHECK(mjExecutableRun(e, 1, &bx, 1, &by) == MJ_ERROR_GRAPH);
  printf("device %s: softmax matches the CPU reference\n", mjDeviceName(d));
  mjBufferDestroy(bufX);
  mjBufferDestroy(bufY);
  mjHostTensorsDestroy(ref);
  mjHostTensorsDestroy(ins);
  mjExecutableDestroy(e);
  mjGraphDestroy(g);
  mjDeviceDestroy(d);
}

int main(void) {
  testParseAndEvaluate();
  testStages();
  testBuilder();
  testNamedDims();
  testEmptyBatch();
  testErrors();
  testDevice();
  if (Failures) {
    fprintf(stderr, "%d checks failed\n", Failures);
    return 1;
  }
  printf("all C API checks passed (minijit %s)\n", mjVersion());
  return 0;
}
